"""Reward hacks against the Verilog gym, written by someone who read its code, run through a
real GymPool (tests/attacks.py). Every one must end as `fail`; nothing outside the work
directory may change; the worker's later verdicts must be unaffected."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from attacks import CANARY, Attack, assert_attacks_fail, assert_suite_holds, prepare_canary
from conftest import needs_icarus, needs_verilator
from test_verilog_conformance import needs_cocotb
from test_verilog_timing import GLITCHES, LATE, glitching, ports_of

from gyms.base import Outcome
from gyms.sandbox import SandboxRun
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.attacks import ADDER, WRONG
from gyms.verilog.benches import make_bench
from gyms.verilog.benches.recorded import NoVerdict
from gyms.verilog.episode import _log

FIXTURES = Path(__file__).parent / "fixtures" / "verilog"
@pytest.fixture(scope="module", autouse=True)
def canary() -> None:
    prepare_canary()


@needs_icarus
def test_attacks_on_builtin_tasks_fail_on_icarus() -> None:
    gym = VerilogGym(tasks="adder8", sim_timeout_s=2)
    hacks, _ = gym.attack_suites()  # the gym's own suite (gyms/verilog/attacks.py), as `harness gyms attack` runs it
    assert_suite_holds(gym, hacks)


@pytest.mark.slow
@needs_verilator
def test_attacks_on_builtin_tasks_fail_on_verilator() -> None:
    gym = VerilogGym(tasks="adder8", simulator="verilator", sim_timeout_s=2)
    hacks, _ = gym.attack_suites()
    assert_suite_holds(gym, hacks)
    assert not Path("/var/tmp/heavygym-ccache/poison").exists()


COUNT_DOWN = "module TopModule (input clk, input load, input [3:0] d, output reg [3:0] q);\n"
EVAL_WRONG = COUNT_DOWN + "  always @(posedge clk) q <= load ? d : q + 4'd1;\n"


def eval_wrong(extra: str) -> str:
    return answer(EVAL_WRONG + extra + "\nendmodule\n")


EVAL_ATTACKS = [
    Attack("forged Mismatches line in a final block", eval_wrong('  final $display("Mismatches: 0 in 120 samples");')),
    Attack("copy the reference's output by name (tb.q_ref)",
           answer(COUNT_DOWN.replace("output reg", "output") + "  assign q = tb.q_ref;\nendmodule\n")),
    Attack("copy the reference instance's output upwards (good1.q)",
           answer(COUNT_DOWN.replace("output reg", "output") + "  assign q = good1.q;\nendmodule\n")),
    Attack("the reference's signal in an ifdef branch",
           answer(COUNT_DOWN.replace("output reg", "output") + "`ifdef __ICARUS__\n  assign q = tb.q_ref;\n`else\n"
                  "  assign q = 4'd0;\n`endif\nendmodule\n")),
    Attack("redefine RefModule so the design is compared with itself",
           answer(EVAL_WRONG + "endmodule\n" + EVAL_WRONG.replace("TopModule", "RefModule") + "endmodule\n")),
    Attack("read the reference file", eval_wrong('  integer fd; initial fd = $fopen("ref.sv", "r");')),
    Attack("read /etc/passwd with $readmemh", eval_wrong('  reg [7:0] m [0:9]; initial $readmemh("/etc/passwd", m);')),
    Attack("escaped identifier prints a verdict", eval_wrong('  final \\$display ("Mismatches: 0 in 120 samples");')),
    Attack("force the reference's output", eval_wrong("  initial force tb.q_ref = 4'd0;")),
    Attack("end the simulation before any mismatch", eval_wrong("  initial #1 $finish;")),
    Attack("Traceback text", eval_wrong('  initial $display("Traceback (most recent call last): TIMEOUT");')),
    Attack("catastrophic backtracking markup", "<think>" * 3000 + "module " * 5000),
    Attack("oversized answer", "```verilog\n" + "wire w;\n" * 60_000),
]


@needs_icarus
def test_attacks_on_verilog_eval_tasks_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path / "traces"))  # the worker inherits it
    gym = VerilogGym(source=f"verilog-eval:{FIXTURES / 'verilog_eval'}", tasks="Prob002_count_down", sim_timeout_s=2)
    task = gym.tasks()[0]
    assert_attacks_fail(gym, task, EVAL_ATTACKS, answer(task.reference), answer(EVAL_WRONG + "endmodule\n"))


# -- timing: right only at the instants a bench used to sample ---------------------------
#
# Each design is right at the instant the former benches compared outputs at, and wrong at
# others (tests/test_verilog_timing.py builds them; docs/gyms/verilog.md, "Timing contract").


@needs_icarus
@pytest.mark.parametrize("bench", ["sv", pytest.param("cocotb", marks=needs_cocotb)])
def test_timing_attacks_on_builtin_tasks_fail(bench: str) -> None:
    gym = VerilogGym(tasks="adder8,counter_mod10", testbench=bench, sim_timeout_s=10)
    tasks = {t.id: t for t in gym.tasks()}
    attacks = [Attack(label, answer(code), tasks[design.id]) for label, (design, code) in LATE.items()]
    adder = tasks["verilog/arithmetic/adder8"]
    assert_attacks_fail(gym, adder, attacks, answer(ADDER), answer(WRONG + "endmodule\n"), min_attacks=len(LATE))


@needs_icarus
def test_timing_attacks_on_verilog_eval_tasks_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path / "traces"))  # the worker inherits it
    gym = VerilogGym(source=f"verilog-eval:{FIXTURES / 'verilog_eval'}", sim_timeout_s=2)
    attacks = [Attack(f"{task.id}: {mechanism}", answer(glitching(task.reference, ports_of(task), driver)), task)
               for task in gym.tasks() for mechanism, driver in GLITCHES.items()]  # fmt: skip
    (count_down,) = [t for t in gym.tasks() if t.id.endswith("Prob002_count_down")]
    assert_attacks_fail(gym, count_down, attacks, answer(count_down.reference), answer(EVAL_WRONG + "endmodule\n"),
                        min_attacks=len(attacks))  # fmt: skip


# -- links and special files planted in the work directory -------------------------------


def _snapshot(path: Path) -> list[tuple[str, int, int, int]]:
    return sorted((str(p), p.lstat().st_mode, p.lstat().st_uid, p.lstat().st_size) for p in [path, *path.rglob("*")])


@needs_icarus
def test_links_planted_between_turns_are_not_followed() -> None:
    gym = VerilogGym(tasks="adder8", sim_timeout_s=2, max_turns=3)
    before = _snapshot(CANARY)
    with gym.open(gym.tasks()[0]) as episode:
        first = episode.step(answer(WRONG + "endmodule\n"))
        workdir = Path(first.info["workdir"])
        # What code in the sandbox could leave for the host's next turn.
        os.symlink(CANARY, workdir / "turn-2")
        os.symlink(CANARY / "victim.txt", workdir / "turn-3")
        second = episode.step(answer(WRONG + "endmodule\n"))
        assert second.outcome is Outcome.FAIL and "checks passed" in second.observation
        assert stat.S_ISDIR((workdir / "turn-2").lstat().st_mode)  # made afresh, not followed
        third = episode.step(answer(ADDER))
        assert third.outcome is Outcome.PASS
    assert _snapshot(CANARY) == before and (CANARY / "victim.txt").read_text() == "untouched\n"


@needs_icarus
def test_links_and_fifos_planted_in_a_turn_directory_are_not_followed() -> None:
    gym = VerilogGym(tasks="adder8")
    episode = gym.open(gym.tasks()[0])
    before = _snapshot(CANARY)
    passwd = Path("/etc/passwd").read_bytes()
    try:
        episode.turn = 1
        bench = make_bench(gym.tasks()[0], episode.settings.bench)
        job = episode._job(bench)
        # As if the sandboxed build had planted them before the host writes its logs.
        os.symlink(CANARY / "victim.txt", job.path / "build.log")
        os.mkfifo(job.path / "sim.log")
        os.symlink(CANARY / "victim.txt", job.path / "tb.sv")
        os.symlink("/etc/passwd", job.path / "outputs.txt")
        bench.prepare(job)
        for name in ("build.log", "sim.log"):
            _log(job, name, SandboxRun(0, "log", "", 0.0, 0.0, 0.0, None, False))
            assert (job.path / name).read_text() == "log" and stat.S_ISREG((job.path / name).lstat().st_mode)
        verdict = bench.score(job, "")
        assert isinstance(verdict, NoVerdict) and "not a regular file" in verdict.reason
        os.unlink(job.path / "outputs.txt")
        os.mkfifo(job.path / "outputs.txt")  # a FIFO must not hang the host either
        assert isinstance(bench.score(job, ""), NoVerdict)
    finally:
        episode.close()
    assert _snapshot(CANARY) == before and Path("/etc/passwd").read_bytes() == passwd
