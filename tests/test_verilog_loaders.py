"""The VerilogEval v2 and RTLLM 2.0 loaders, on small fixture datasets written in their formats
(tests/fixtures/verilog: original problems, not taken from either benchmark)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import needs_icarus, needs_verilator

from gyms.base import Outcome
from gyms.conformance import check_gym
from gyms.verilog import VerilogGym
from gyms.verilog.candidates import answer

FIXTURES = Path(__file__).parent / "fixtures" / "verilog"
VERILOG_EVAL = f"verilog-eval:{FIXTURES / 'verilog_eval'}"
RTLLM = f"rtllm:{FIXTURES / 'rtllm'}"



def test_verilog_eval_problems_become_tasks() -> None:
    tasks = VerilogGym(source=VERILOG_EVAL).tasks()
    assert [t.id for t in tasks] == ["verilog-eval/Prob001_nand3", "verilog-eval/Prob002_count_down"]
    task = tasks[1]
    assert "4-bit down counter" in task.prompt and "```verilog" in task.prompt
    assert "module TopModule" in task.reference and "RefModule" not in task.reference
    assert task.metadata["ports"] == [["clk", "input", 1], ["load", "input", 1], ["d", "input", 4],
                                      ["q", "output", 4]]  # fmt: skip


def test_rtllm_designs_become_tasks() -> None:
    tasks = VerilogGym(source=RTLLM).tasks()
    assert [t.id for t in tasks] == ["rtllm/adder_4bit", "rtllm/parity_gen", "rtllm/rom_lookup"]
    assert tasks[0].metadata["module"] == "adder_4bit" and "ripple-carry" in tasks[0].prompt


def test_bad_sources_say_what_is_expected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not understood"):
        VerilogGym(source="hdlbits:/data")
    with pytest.raises(ValueError, match="is not a directory"):
        VerilogGym(source=f"rtllm:{tmp_path / 'missing'}")
    with pytest.raises(ValueError, match="no VerilogEval problems"):
        VerilogGym(source=f"verilog-eval:{tmp_path}")
    with pytest.raises(ValueError, match="no RTLLM designs"):
        VerilogGym(source=f"rtllm:{tmp_path}")


@needs_icarus
def test_verilog_eval_scores_mismatches_and_feeds_back_hints() -> None:
    gym = VerilogGym(source=VERILOG_EVAL, tasks="Prob002_count_down")
    wrong = gym.tasks()[0].reference.replace("q - 4'd1", "q + 4'd1")
    with gym.open(gym.tasks()[0]) as episode:
        result = episode.step(answer(wrong))
    assert result.outcome is Outcome.FAIL and 0 < result.reward < 1
    # Replayed from the reference's recorded trace: one check per time step with a known output.
    assert result.info["checks_total"] == 120 and result.info["forgeable"] is False
    assert "MISMATCH at 25 ps: output q expected 4'h5 got 4'h7" in result.observation


@needs_icarus
def test_a_benchmark_verdict_cannot_be_printed_by_the_design() -> None:
    # Replayed VerilogEval: the verdict comes from the recorded outputs, so printing one is
    # harmless (and allowed). RTLLM prints its verdict: there printing is refused.
    forged = "module TopModule (input a, input b, input c, output y);\n  assign y = 0;\n" \
             '  final $display("Mismatches: 0 in 80 samples");\nendmodule\n'  # fmt: skip
    gym = VerilogGym(source=VERILOG_EVAL, tasks="Prob001_nand3")
    with gym.open(gym.tasks()[0]) as episode:
        result = episode.step(answer(forged))
    assert result.outcome is Outcome.FAIL and result.reward < 0.5 and result.info["forgeable"] is False
    rtllm = VerilogGym(source=RTLLM, tasks="parity_gen")
    printing = rtllm.tasks()[0].reference.replace("endmodule", '  final $display("Your Design Passed");\nendmodule')
    with rtllm.open(rtllm.tasks()[0]) as episode:
        result = episode.step(answer(printing))
    assert result.outcome is Outcome.FAIL and "$display may not be used" in result.observation


@needs_icarus
def test_the_reference_trace_is_cached_outside_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path / "traces"))
    gym = VerilogGym(source=VERILOG_EVAL, tasks="Prob002_count_down")
    task = gym.tasks()[0]
    with gym.open(task) as episode:
        result = episode.step(answer(task.reference))
        # The sandbox got the stimulus and the replay bench, never the reference or its testbench.
        files = {p.name for p in Path(result.info["turn_dir"]).iterdir()}
    assert result.outcome is Outcome.PASS and result.info["forgeable"] is False
    assert "replay.sv" in files and not {"ref.sv", "test.sv"} & files
    (entry,) = (tmp_path / "traces").iterdir()
    assert (tmp_path / "traces").stat().st_mode & 0o777 == 0o700 and entry.suffix == ".json"


@needs_icarus
@pytest.mark.parametrize("source", [VERILOG_EVAL, RTLLM])
def test_loaded_benchmarks_conform_on_icarus(source: str) -> None:
    report = check_gym(VerilogGym(source=source, sim_timeout_s=1.5), workers=2)
    assert report.ok, [(v.task_id, v.label, v.problem, v.observation) for v in report.violations]
    assert {"reference", "syntax-error", "never-finishes"} <= {c.label for c in report.checks}


@needs_icarus
def test_rtllm_testbenches_find_their_data_files() -> None:
    gym = VerilogGym(source=RTLLM, tasks="rom_lookup")
    task = gym.tasks()[0]
    with gym.open(task) as episode:
        good = episode.step(answer(task.reference))
    assert good.outcome is Outcome.PASS  # the testbench read expected.hex from its own directory
    with gym.open(task) as episode:
        bad = episode.step(answer(task.reference.replace("addr * addr", "addr * addr + 8'd1")))
    assert bad.outcome is Outcome.FAIL and bad.reward == 0.0 and "Error" in bad.observation


@needs_verilator
def test_loaded_benchmarks_run_on_verilator_too() -> None:
    for source, name in ((VERILOG_EVAL, "Prob002_count_down"), (RTLLM, "parity_gen")):
        gym = VerilogGym(source=source, simulator="verilator", tasks=name)
        task = gym.tasks()[0]
        with gym.open(task) as episode:
            result = episode.step(answer(task.reference))
        assert result.outcome is Outcome.PASS, (name, result.observation, result.info.get("error"))


@needs_verilator
def test_a_design_may_not_replace_the_reference_model() -> None:
    # With its own RefModule, a wrong design would be compared with itself (on Verilator the
    # first of two declarations would win). The pre-check refuses it.
    gym = VerilogGym(source=VERILOG_EVAL, simulator="verilator", tasks="Prob001_nand3")
    wrong = "module TopModule (input a, input b, input c, output y);\n  assign y = a;\nendmodule\n"
    twin = wrong.replace("TopModule", "RefModule")
    with gym.open(gym.tasks()[0]) as episode:
        result = episode.step(answer(wrong + twin))
    assert result.outcome is Outcome.FAIL and "RefModule is used by the testbench" in result.observation
