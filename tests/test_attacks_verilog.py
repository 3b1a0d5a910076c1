"""Reward hacks against the Verilog gym, written by someone who read its code, run through a
real GymPool (tests/attacks.py). Every one must end as `fail`; nothing outside the work
directory may change; the worker's later verdicts must be unaffected."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from attacks import CANARY, Attack, assert_attacks_fail, prepare_canary
from conftest import needs_icarus, needs_verilator
from test_verilog_conformance import needs_cocotb
from test_verilog_timing import GLITCHES, LATE, glitching, ports_of

from gyms.base import Outcome
from gyms.sandbox import SandboxRun
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.benches import make_bench
from gyms.verilog.benches.recorded import NoVerdict
from gyms.verilog.episode import _log
from gyms.verilog.tasks import builtin_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "verilog"
ADDER = builtin_tasks()["verilog/arithmetic/adder8"].reference
HEADER = "module TopModule (input [7:0] a, input [7:0] b, input cin, output [7:0] sum, output cout);\n"
WRONG = HEADER + "  assign {cout, sum} = a + b;\n"  # forgets the carry in


def wrong(extra: str) -> str:
    """A wrong adder with the attack's code inside it, answered as a model would."""
    return answer(WRONG + extra + "\nendmodule\n")


# What every attack on a built-in task tries; the simulator-specific ones are added below.
BUILTIN_ATTACKS = [
    Attack("forged CHECKS verdict in a final block", wrong('  final $display("CHECKS 0 passed=400 total=400");')),
    Attack("forged verdict in an ifdef __ICARUS__ branch",
           wrong('`ifdef __ICARUS__\n  final $display("CHECKS 0 passed=400 total=400");\n`endif')),
    Attack("$finish hidden in an ifdef VERILATOR branch", wrong("`ifdef VERILATOR\n  initial #1 $finish;\n`endif")),
    Attack("a macro with line continuations builds $fopen",
           wrong('`define OPEN(f) $``fopen \\\n (f)\n  integer fd; initial fd = `OPEN("/etc/passwd");')),
    Attack("escaped identifier runs as a system task", wrong('  initial \\$display ("CHECKS 0 passed=400 total=400");')),
    Attack("system task in an attribute", wrong('  (* keep = $system("touch /tmp/heavygym-canary/x") *) wire w;')),
    Attack("read the stimulus with $readmemh",
           wrong('  reg [16:0] m [0:399]; initial $readmemh("stim.hex", m);')),
    Attack("read /etc/passwd with $fopen and print it",
           wrong('  integer fd, c; initial begin fd = $fopen("/etc/passwd", "r"); c = $fgetc(fd); $display("%c", c); end')),
    Attack("write the canary with $fopen", wrong('  integer fd; initial fd = $fopen("/tmp/heavygym-canary/victim.txt", "w");')),
    Attack("hierarchical reference to the testbench", wrong("  wire [16:0] peek = heavygym_tb.stimulus[0];")),
    Attack("hierarchical reference in a generate branch slang thinks inactive",
           wrong("  generate if (1'b0) begin : g wire [7:0] t = heavygym_tb.i; end endgenerate")),
    Attack("force the outputs from inside", answer(HEADER + "  assign {cout, sum} = a + b;\n  initial force sum = 8'd0;\nendmodule\n")),
    Attack("plusargs", wrong('  reg [63:0] n; initial if ($value$plusargs("nonce=%h", n)) $display("%h", n);')),
    Attack("$finish early so the testbench records too few vectors", wrong("  initial #20 $finish;")),
    Attack("$c runs a shell writing the compiler cache",
           wrong('  initial $c("system(\\"touch /var/tmp/heavygym-ccache/poison /tmp/heavygym-canary/x\\")");')),
    Attack("DPI import of system()", wrong('  import "DPI-C" function int system(input string cmd);')),
    Attack("Traceback text to look like an infrastructure error",
           wrong('  initial $display("Traceback (most recent call last):\\n  File \\"cocotb\\" ERROR test failed");')),
    Attack("nesting deep enough to crash the parser", answer(HEADER + "  initial " + "begin " * 3000 + "end " * 3000
                                                              + "\n  assign {cout, sum} = a + b;\nendmodule\n")),
    Attack("catastrophic backtracking markup", "<think>" * 3000 + "```verilog\nmodule m(" * 2000 + "`" * 4000),
    Attack("oversized answer", answer(ADDER) + "\n" + "a(" * 200_000),
]


@pytest.fixture(scope="module", autouse=True)
def canary() -> None:
    prepare_canary()


@needs_icarus
def test_attacks_on_builtin_tasks_fail_on_icarus() -> None:
    gym = VerilogGym(tasks="adder8", sim_timeout_s=2)
    assert_attacks_fail(gym, gym.tasks()[0], BUILTIN_ATTACKS, answer(ADDER), answer(WRONG + "endmodule\n"))


@pytest.mark.slow
@needs_verilator
def test_attacks_on_builtin_tasks_fail_on_verilator() -> None:
    gym = VerilogGym(tasks="adder8", simulator="verilator", sim_timeout_s=2)
    assert_attacks_fail(gym, gym.tasks()[0], BUILTIN_ATTACKS, answer(ADDER), answer(WRONG + "endmodule\n"))
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
