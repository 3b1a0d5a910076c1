"""The VerilogEval v2 and RTLLM 2.0 loaders, on small fixture datasets written in their formats
(tests/fixtures/verilog: original problems, not taken from either benchmark), and the vetting
of a benchmark's own files when it loads (gyms/verilog/datasets/vetting.py)."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import harness, needs_icarus, needs_verilator

from gyms.base import Outcome, Task
from gyms.conformance import check_gym
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.datasets import load_source
from gyms.verilog.datasets.vetting import CACHE_ENV, VET_SIM_LIMIT_S
from gyms.verilog.gym import COMPILE_TIMEOUT_S, DATASET_MARGIN, DATASET_SIM_FLOOR_S, step_timeout

FIXTURES = Path(__file__).parent / "fixtures" / "verilog"
VERILOG_EVAL = f"verilog-eval:{FIXTURES / 'verilog_eval'}"
RTLLM_DIR = FIXTURES / "rtllm"
RTLLM = f"rtllm:{RTLLM_DIR}"
PARITY = Path("Miscellaneous/Signal generation/parity_gen")
ADDER = Path("Arithmetic/Adder/adder_4bit")


@pytest.fixture(autouse=True, scope="module")
def vetting_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One vetting cache for this module's gyms (a test that needs its own sets another)."""
    cache = tmp_path_factory.mktemp("vetting")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(cache))
        yield cache


def copy_designs(root: Path, *designs: Path) -> Path:
    for design in designs:
        shutil.copytree(RTLLM_DIR / design, root / design)
    return root


@needs_icarus
def test_verilog_eval_problems_become_tasks() -> None:
    tasks = VerilogGym(source=VERILOG_EVAL).tasks()
    assert [t.id for t in tasks][:2] == ["verilog-eval/Prob001_nand3", "verilog-eval/Prob002_count_down"]
    task = tasks[1]
    assert "4-bit down counter" in task.prompt and "```verilog" in task.prompt
    assert "module TopModule" in task.reference and "RefModule" not in task.reference
    assert task.metadata["ports"] == [["clk", "input", 1], ["load", "input", 1], ["d", "input", 4],
                                      ["q", "output", 4]]  # fmt: skip


@needs_icarus
def test_rtllm_designs_become_tasks_named_as_their_testbenches_instantiate_them() -> None:
    gym = VerilogGym(source=RTLLM)
    tasks = {t.id: t for t in gym.tasks()}
    assert list(tasks) == ["rtllm/adder_4bit", "rtllm/mul_4bit", "rtllm/fifo_sync4", "rtllm/rom_lookup",
                           "rtllm/parity_gen"]  # fmt: skip
    assert gym.excluded_tasks() == {}
    # verified_adder_4bit.v defines module verified_adder_4bit; the testbench instantiates adder_4bit.
    adder = tasks["rtllm/adder_4bit"]
    assert adder.metadata["module"] == "adder_4bit" and "ripple-carry" in adder.prompt
    assert "module adder_4bit (" in adder.reference and "verified_" not in adder.reference
    assert adder.prompt.endswith("code of module adder_4bit in one ```verilog code block. Do not write a testbench.")
    # A reference named after its sub-block, with a module of that name too.
    mul = tasks["rtllm/mul_4bit"]
    assert mul.metadata["reference_file"] == "verified_mul_array.v" and "module mul_4bit (" in mul.reference
    # Two modules: the design is the FIFO the testbench instantiates, not the RAM declared first.
    fifo = tasks["rtllm/fifo_sync4"]
    assert fifo.metadata["module"] == "fifo_sync4" and "module ram4x4 (" in fifo.reference
    assert [p[0] for p in fifo.metadata["ports"]] == ["clk", "rst_n", "push", "pop", "din", "dout", "empty", "full"]
    # A category folder with a space in its name.
    assert tasks["rtllm/parity_gen"].metadata["dir"] == str(RTLLM_DIR / PARITY)


def test_rtllm_folders_that_cannot_be_tasks_are_reported(tmp_path: Path) -> None:
    root = copy_designs(tmp_path / "rtllm", PARITY)
    # The description names another module than the testbench instantiates: the testbench wins,
    # and the reference is the .v file that defines it (not named verified_<folder>.v).
    other = root / "Control" / "described_otherwise"
    shutil.copytree(RTLLM_DIR / PARITY, other)
    description = other / "design_description.txt"
    description.write_text(description.read_text().replace("    parity_gen\n", "    parity_generator\n"))
    two = root / "Control" / "two_references"
    shutil.copytree(RTLLM_DIR / PARITY, two)
    (two / "verified_parity_gen.v").rename(two / "a.v")
    (two / "b.v").write_text("module parity_unit (input d, output q);\n  assign q = d;\nendmodule\n")
    (two / "c.v").write_text((two / "a.v").read_text())
    no_testbench = root / "Control" / "no_testbench"
    shutil.copytree(RTLLM_DIR / PARITY, no_testbench)
    (no_testbench / "testbench.v").unlink()
    loaded = load_source(f"rtllm:{root}")
    assert [(t.id, t.metadata["module"]) for t in loaded.tasks] == [("rtllm/described_otherwise", "parity_gen"),
                                                                    ("rtllm/parity_gen", "parity_gen")]  # fmt: skip
    assert loaded.unloadable == {
        "rtllm/no_testbench": "Control/no_testbench: no testbench.v",
        "rtllm/two_references": "Control/two_references: no single reference: a.v, c.v could each be it",
    }


def test_verilog_eval_problems_that_cannot_be_tasks_are_reported(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "verilog_eval", tmp_path, dirs_exist_ok=True)
    (tmp_path / "Prob999_lonely_prompt.txt").write_text("A problem without its reference or testbench.\n")
    loaded = load_source(f"verilog-eval:{tmp_path}")
    assert len(loaded.tasks) == len(list(tmp_path.glob("*_ref.sv")))
    assert loaded.unloadable == {
        "verilog-eval/Prob999_lonely": "Prob999_lonely_prompt.txt: no Prob999_lonely_ref.sv and no "
        "Prob999_lonely_test.sv beside it"
    }


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
def test_a_task_whose_own_files_fail_is_excluded_and_its_steps_are_errors(tmp_path: Path) -> None:
    root = copy_designs(tmp_path / "rtllm", ADDER, PARITY)
    testbench = root / PARITY / "testbench.v"
    testbench.write_text(testbench.read_text().replace("parity_gen dut (", "parity_gen dut (("))
    shutil.copytree(RTLLM_DIR / ADDER, root / "Arithmetic" / "Adder" / "adder_nodesc")
    (root / "Arithmetic" / "Adder" / "adder_nodesc" / "design_description.txt").unlink()
    gym = VerilogGym(source=f"rtllm:{root}")
    assert [t.id for t in gym.tasks()] == ["rtllm/adder_4bit"]  # out of training and replay
    excluded = gym.excluded_tasks()
    assert excluded["rtllm/adder_nodesc"] == "Arithmetic/Adder/adder_nodesc: no design_description.txt"
    reason = excluded["rtllm/parity_gen"]
    assert reason.startswith("the reference and its testbench do not compile on icarus:")
    assert "testbench.v:8: syntax error" in reason  # Icarus's own message
    listed = harness("gyms", "list", "gyms.verilog:VerilogGym", "-o", f"source=rtllm:{root}")
    assert listed.returncode == 0, listed.stderr
    assert "excluded: verilog rtllm/parity_gen: the reference and its testbench do not compile" in listed.stdout
    assert "syntax error" in listed.stdout
    # A task made by hand for it: the step is the dataset's error, not the model's fail.
    reference = (root / PARITY / "verified_parity_gen.v").read_text()
    task = Task("rtllm/parity_gen", "Write parity_gen.", reference,
                {"kind": "rtllm", "dir": str(root / PARITY), "module": "parity_gen", "ports": None})  # fmt: skip
    with gym.open(task) as episode:
        result = episode.step(answer(reference))
    assert result.outcome is Outcome.ERROR and result.done
    assert "the benchmark's own files fail on icarus" in result.observation and "syntax error" in result.observation


@needs_icarus
def test_the_vetting_is_cached_by_the_files_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    root = copy_designs(tmp_path / "rtllm", ADDER, PARITY)
    source = f"rtllm:{root}"
    first = VerilogGym(source=source)
    assert "vetting 2 benchmark references on icarus" in capsys.readouterr().err
    entries = sorted(cache.iterdir())
    assert len(entries) == 2 and cache.stat().st_mode & 0o777 == 0o700
    # Each timeout is the reference's measured run with a margin, never below the floor (a
    # reference runs in about 0.01 s here, and under load in more: the rule holds either way).
    measured = dict(first.settings.reference_sim_s)
    assert dict(first.settings.sim_timeouts) == {
        task: max(DATASET_SIM_FLOOR_S, round(DATASET_MARGIN * seconds, 1)) for task, seconds in measured.items()
    }
    # Entries that say the references took 3 s: a load that reads them, and runs nothing, uses that.
    for entry in entries:
        entry.write_text(json.dumps({**json.loads(entry.read_text()), "sim_s": 3.0}))
    second = VerilogGym(source=source)
    assert capsys.readouterr().err == ""
    assert dict(second.settings.sim_timeouts) == {"rtllm/adder_4bit": 36.0, "rtllm/parity_gen": 36.0}
    assert dict(second.settings.reference_sim_s) == {"rtllm/adder_4bit": 3.0, "rtllm/parity_gen": 3.0}
    assert second.step_timeout_s == step_timeout(COMPILE_TIMEOUT_S["icarus"], 36.0)
    # A changed file is another key: that task alone runs again.
    testbench = root / PARITY / "testbench.v"
    testbench.write_text(testbench.read_text().replace("k < 100", "k < 90"))
    third = VerilogGym(source=source)
    assert "vetting 1 benchmark references on icarus (1 cached" in capsys.readouterr().err
    assert dict(third.settings.sim_timeouts) == {"rtllm/adder_4bit": 36.0, "rtllm/parity_gen": DATASET_SIM_FLOOR_S}


@needs_icarus
def test_an_unwritable_vetting_cache_costs_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocked / "cache"))
    root = copy_designs(tmp_path / "rtllm", ADDER, PARITY)
    gym = VerilogGym(source=f"rtllm:{root}")
    assert len(gym.tasks()) == 2
    assert capsys.readouterr().err.count("warning: the vetting cache") == 1


@needs_icarus
def test_the_simulation_limit_follows_the_reference_and_a_timeout_names_its_time() -> None:
    gym = VerilogGym(source=RTLLM, tasks="parity_gen")
    task = gym.tasks()[0]
    reference = dict(gym.settings.reference_sim_s)[task.id]
    limit = dict(gym.settings.sim_timeouts)[task.id]
    assert 0 < reference < VET_SIM_LIMIT_S and limit == max(DATASET_SIM_FLOOR_S, round(DATASET_MARGIN * reference, 1))
    assert gym.sim_timeout_s == limit and gym.step_timeout_s == step_timeout(COMPILE_TIMEOUT_S["icarus"], limit)
    (hang,) = [c for c in gym.candidates(task, random.Random(0)) if c.expect == "timeout"]
    with gym.open(task) as episode:
        result = episode.step(hang.action)
    assert result.outcome is Outcome.FAIL and result.info["timed_out"]
    assert f"The reference design finished in {reference:.2g} s; yours ran past the limit of {limit:g} s." in (
        result.observation)  # fmt: skip


@needs_icarus
def test_verilog_eval_scores_mismatches_and_feeds_back_hints() -> None:
    gym = VerilogGym(source=VERILOG_EVAL, tasks="Prob002_count_down")
    wrong = gym.tasks()[0].reference.replace("q - 4'd1", "q + 4'd1")
    with gym.open(gym.tasks()[0]) as episode:
        result = episode.step(answer(wrong))
    assert result.outcome is Outcome.FAIL and 0 < result.reward < 1
    # Checked against the reference's recorded trace: one check per time step where the reference's
    # inputs or outputs changed (120), and one where its testbench finished.
    assert result.info["checks_total"] == 121 and result.info["forgeable"] is False
    assert "MISMATCH at 25 ps: output q expected 4'h5 got 4'h7" in result.observation


@needs_icarus
def test_a_benchmark_verdict_cannot_be_printed_by_the_design() -> None:
    # Traced VerilogEval: the verdict comes from the recorded outputs, so printing one is
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
        # The sandbox got the stimulus and the trace bench, never the reference or its testbench.
        files = {p.name for p in Path(result.info["turn_dir"]).iterdir()}
    assert result.outcome is Outcome.PASS and result.info["forgeable"] is False
    assert "trace_bench.sv" in files and not {"ref.sv", "test.sv"} & files
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


@needs_icarus
def test_an_rtllm_reference_never_enters_the_sandbox() -> None:
    gym = VerilogGym(source=RTLLM, tasks="mul_4bit,fifo_sync4")
    for task in gym.tasks():
        with gym.open(task) as episode:
            result = episode.step(answer(task.reference))
            files = {p.name for p in Path(result.info["turn_dir"]).iterdir()}
        assert result.outcome is Outcome.PASS, (task.id, result.observation)
        assert "testbench.v" in files and not {task.metadata["reference_file"], "design_description.txt"} & files


@pytest.mark.slow
@needs_verilator
def test_loaded_benchmarks_are_vetted_and_run_on_verilator_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    for source, name in ((VERILOG_EVAL, "Prob002_count_down"), (RTLLM, "fifo_sync4")):
        gym = VerilogGym(source=source, simulator="verilator", tasks=name)
        task = gym.tasks()[0]
        with gym.open(task) as episode:
            result = episode.step(answer(task.reference))
        assert result.outcome is Outcome.PASS, (name, result.observation, result.info.get("error"))
    assert len(list(tmp_path.iterdir())) == 2
    VerilogGym(source=RTLLM, tasks="fifo_sync4")  # Icarus: vetted once more, under a key of its own
    assert len(list(tmp_path.iterdir())) == 3


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
