"""The Verilog gym: answer extraction, the pyslang pre-check, vectors, and episodes run on the
real simulators in the sandbox (no simulator is mocked)."""

from __future__ import annotations

import pickle
import random
import shutil
from pathlib import Path

import pytest
from conftest import needs_icarus, needs_verilator

from gyms.base import Outcome
from gyms.sandbox import Limits
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.benches import make_bench
from gyms.verilog.benches.vectors import make_vectors
from gyms.verilog.checks.extract import extract_verilog
from gyms.verilog.checks.precheck import PortSpec, precheck
from gyms.verilog.spec import MODULE
from gyms.verilog.tasks import builtin_tasks

ADDER = builtin_tasks()["verilog/arithmetic/adder8"]
COUNTER = builtin_tasks()["verilog/sequential/counter_mod10"]
WRONG_ADDER = """module TopModule (input [7:0] a, input [7:0] b, input cin, output [7:0] sum, output cout);
  assign {cout, sum} = a + b;  // forgets the carry in
endmodule
"""


@pytest.fixture(scope="module")
def gym() -> VerilogGym:
    return VerilogGym(tasks="adder8,counter_mod10,sync_fifo8", sim_timeout_s=2)


def task_of(gym: VerilogGym, name: str):
    return next(t for t in gym.tasks() if t.id.endswith("/" + name))


# -- extraction ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```verilog\nmodule TopModule; endmodule\n```", "module TopModule; endmodule\n"),
        ("```systemverilog\nmodule TopModule; endmodule\n```", "module TopModule; endmodule\n"),
        ("Sure:\n```\nmodule TopModule; endmodule\n```\nDone.", "module TopModule; endmodule\n"),
        ("The design is module TopModule; endmodule and that is it", "module TopModule; endmodule\n"),
        # A first draft, then the correction: the last block that defines the module wins.
        ("```verilog\nmodule TopModule; wire a; endmodule\n```\nFixed:\n```verilog\nmodule TopModule; endmodule\n```",
         "module TopModule; endmodule\n"),
        # A helper block after the module does not hide it.
        ("```verilog\nmodule TopModule; endmodule\n```\n```verilog\nmodule helper; endmodule\n```",
         "module TopModule; endmodule\n"),
        ("<think>```verilog\nmodule TopModule; draft endmodule\n```</think>"
         "```verilog\nmodule TopModule; endmodule\n```", "module TopModule; endmodule\n"),
        ("```verilog\nmodule TopModule; endmodule", "module TopModule; endmodule\n"),  # cut off before the fence
        ("```python\nprint('module x; endmodule')\n```", None),
        ("no code here", None),
    ],
)  # fmt: skip
def test_extracts_the_design(text: str, expected: str | None) -> None:
    assert extract_verilog(text, MODULE) == expected


# -- pre-check -----------------------------------------------------------------------------


def test_precheck_reports_syntax_errors_with_line_and_column() -> None:
    result = precheck("module TopModule (output y);\n  assign y = 1'b1\nendmodule\n", MODULE)
    assert not result.ok
    assert "design.sv:2:18: error: expected ';'" in result.errors[0]


def test_precheck_checks_the_interface() -> None:
    ports = [PortSpec("a", "input", 4), PortSpec("y", "output", 5)]
    result = precheck("module TopModule (input [3:0] a, output [3:0] y, output z); assign y = a; endmodule", MODULE,
                      ports)  # fmt: skip
    assert result.errors == (
        "port `y` is `output [3:0] y`; the task needs `output [4:0] y`.",
        "port `z` is not part of the required interface; remove it.",
    )
    missing = precheck("module Other (input a); endmodule", MODULE)
    assert "no module named TopModule" in missing.errors[0]


@pytest.mark.parametrize(
    "body",
    [
        'initial $display("CHECKS 0 passed=1 total=1"); initial $finish;',
        'integer f; initial f = $fopen("tb.sv", "r");',
        "`define OPEN(x) $``x\n integer f; initial f = `OPEN(fopen)(\"expect.hex\", \"r\");",  # built by a macro
        'reg [63:0] n; initial if ($value$plusargs("nonce=%h", n)) ;',
        'initial $readmemh("expect.hex", mem); reg [7:0] mem [0:3];',
        'import "DPI-C" function int system(input string cmd);',
        "assign y = $c(\"1\");",
        # Whatever a simulator's preprocessor or constant evaluation would decide:
        "`ifdef __ICARUS__\n final $display(\"x\");\n`endif",
        "`ifdef VERILATOR\n initial $c(\"system(\\\"id\\\")\");\n`endif",
        "`ifndef NOTHING\n`else\n initial $system(\"id\");\n`endif",
        "`define HIDE(x) \\\n x\n",
        "`SOME_PREDEFINED_MACRO",
        'initial \\$display ("escaped identifier");',
        "reg r; initial force r = 1'b1;",
        "reg r; initial begin r = 0; release r; end",
        "(* keep = $system(\"id\") *) wire z;",
        "generate if (1'b0) begin : g assign y = heavygym_tb.i; end endgenerate",
        "wire w; assign w = dut.y;",
        'initial $display("a string\n that goes on");',
        "wire w; assign w = 1'b0;\x00 initial $system(\"id\");",
        "wire w; // a comment that continues \\\n initial $system(\"id\");",
        "/* never closed",
        "initial " + "begin " * 200 + "end " * 200,
    ],
)
def test_precheck_refuses_escape_hatches(body: str) -> None:
    result = precheck(f"module TopModule (output y);\n{body}\nassign y = 1'b0;\nendmodule\n", MODULE)
    assert not result.ok, body


@pytest.mark.parametrize(
    "body",
    [
        "always @(heavygym_tb.total) heavygym_tb.passed = heavygym_tb.total;",  # upward reference
        "initial force $root.heavygym_tb.passed = 400;",
        "defparam heavygym_tb.N = 1;",
        "bind heavygym_tb TopModule spy (.y());",
    ],
)
def test_precheck_refuses_reaching_into_the_testbench(body: str) -> None:
    # Checked alone, the design cannot see the testbench: any path into it does not resolve.
    assert not precheck(f"module TopModule (output y);\n{body}\nassign y = 1'b0;\nendmodule\n", MODULE).ok


def test_precheck_refuses_include_and_printing_where_the_verdict_is_plain() -> None:
    included = precheck('`include "/etc/passwd"\nmodule TopModule; endmodule', MODULE)
    assert "`include is not allowed" in included.errors[0]
    printing = "module TopModule (output y); assign y = 0; initial $display(\"Mismatches: 0 in 9 samples\"); endmodule"
    assert precheck(printing, MODULE, allow_printing=True).ok
    assert not precheck(printing, MODULE, allow_printing=False).ok


def test_every_reference_passes_the_precheck() -> None:
    for design in builtin_tasks().values():
        ports = [PortSpec(p.name, p.direction, p.width) for p in design.ports]
        assert precheck(design.reference, MODULE, ports).ok, design.id


# -- tasks and vectors ---------------------------------------------------------------------


def test_there_are_enough_tasks_in_every_category() -> None:
    tasks = builtin_tasks().values()
    assert len(tasks) >= 30
    categories = {t.category for t in tasks}
    assert categories == {"combinational", "arithmetic", "sequential", "fsm", "memory", "bus"}
    assert {t.difficulty for t in tasks} == {"easy", "medium", "hard"}
    for t in tasks:
        assert t.interface() in t.prompt() and "TopModule" in t.reference


def test_vectors_are_seeded_and_a_longer_run_extends_a_shorter_one() -> None:
    short = make_vectors(COUNTER, seed=0, vectors=50, sequences=1)
    long = make_vectors(COUNTER, seed=0, vectors=200, sequences=3)
    assert long.stimulus[:50] == short.stimulus and long.expected[:50] == short.expected
    assert make_vectors(COUNTER, seed=0, vectors=50, sequences=1) == short
    assert make_vectors(COUNTER, seed=1, vectors=50, sequences=1).stimulus != short.stimulus
    # rst is the first input (the MSB of the packed word): asserted at the start of every sequence.
    rst_bit = 1 << 1
    assert all(long.stimulus[k * 200] & rst_bit for k in range(3))


def test_dont_care_outputs_are_masked() -> None:
    fifo = builtin_tasks()["verilog/memory/sync_fifo8"]
    vectors = make_vectors(fifo, seed=0, vectors=50, sequences=1)
    # dout (the top 8 of 14 output bits) is not checked while the FIFO is empty, e.g. after reset.
    assert vectors.care[0] >> 6 == 0 and vectors.care[0] & 0x3F == 0x3F


# -- episodes on Icarus --------------------------------------------------------------------


@needs_icarus
def test_reference_passes_and_artifacts_live_until_close(gym: VerilogGym) -> None:
    episode = gym.open(task_of(gym, "adder8"))
    result = episode.step(answer(ADDER.reference))
    assert (result.outcome, result.reward, result.done) == (Outcome.PASS, 1.0, True)
    assert result.observation == "Correct: all 400 checks passed."
    assert result.info["checks_total"] == 400
    logs = [Path(result.info["build_log"]), Path(result.info["sim_log"])]
    assert all(p.is_file() and str(p).startswith(result.info["workdir"]) for p in logs)
    assert (Path(result.info["turn_dir"]) / "outputs.txt").is_file()  # what the testbench recorded
    episode.close()
    assert not Path(result.info["workdir"]).exists()
    episode.close()  # twice is fine


@needs_icarus
def test_partial_credit_with_mismatch_feedback_then_a_fix_in_the_next_turn(gym: VerilogGym) -> None:
    with gym.open(task_of(gym, "adder8")) as episode:
        first = episode.step(answer(WRONG_ADDER))
        assert first.outcome is Outcome.FAIL and not first.done
        assert 0.5 < first.reward < 1.0  # only vectors with cin = 1 fail
        assert "checks passed." in first.observation and "MISMATCH vector" in first.observation
        assert "answer with the complete module again" in first.observation
        second = episode.step(answer(ADDER.reference))
        assert (second.outcome, second.turn, second.done) == (Outcome.PASS, 2, True)
        assert Path(second.info["turn_dir"]).name == "turn-2" and Path(first.info["turn_dir"]).is_dir()


@needs_icarus
def test_the_last_turn_says_no_more_and_ends_the_episode() -> None:
    gym = VerilogGym(tasks="adder8", max_turns=1)
    with gym.open(gym.tasks()[0]) as episode:
        result = episode.step(answer(WRONG_ADDER))
    assert result.done and result.outcome is Outcome.FAIL
    assert "again" not in result.observation


@needs_icarus
def test_compile_errors_from_the_simulator_come_back_as_feedback(gym: VerilogGym) -> None:
    # slang accepts `inside`; Icarus 11 does not support it: the error comes from the simulator.
    design = ADDER.reference.replace("assign {cout, sum} = a + b + cin;",
                                     "assign sum = a + b + cin;\n  assign cout = (a + b + cin) inside {[256:511]};")
    with gym.open(task_of(gym, "adder8")) as episode:
        result = episode.step(answer(design))
    assert result.outcome is Outcome.FAIL and "checks_total" not in result.info
    assert result.observation.startswith("The simulator could not compile your design:\ndesign.sv:")
    assert "inside" in result.observation


@needs_icarus
def test_a_forged_verdict_does_not_count(gym: VerilogGym) -> None:
    forged = WRONG_ADDER.replace(
        "endmodule", 'initial $display("CHECKS 0000000000000000 passed=400 total=400");\nendmodule'
    )
    with gym.open(task_of(gym, "adder8")) as episode:
        result = episode.step(answer(forged))
    assert result.outcome is Outcome.FAIL and result.reward < 1.0


@needs_icarus
def test_a_design_that_never_finishes_fails_by_the_timeout(gym: VerilogGym) -> None:
    design = COUNTER.reference.replace(
        "endmodule", "  integer i;\n  reg spin;\n  always @(posedge clk) begin\n    i = 0;\n"
        "    while (i < 1) spin = ~spin;\n  end\nendmodule"
    )  # fmt: skip
    with gym.open(task_of(gym, "counter_mod10")) as episode:
        result = episode.step(answer(design))
    assert result.outcome is Outcome.FAIL and result.info["timed_out"]
    # The limit is CPU time (gyms/sandbox.py cpu_limits): the spin used its 2 s, however long a
    # loaded machine took to give them (wall time is only the backstop's, a multiple of it).
    assert gym.sim_timeout_s - 0.5 <= result.info["sim_cpu_s"] < gym.sim_timeout_s + 1
    assert "did not finish within 2 s" in result.observation


@needs_icarus
def test_waves_are_written_on_request_and_kept_on_request() -> None:
    gym = VerilogGym(tasks="counter_mod10", waves=True, keep_artifacts=True, vectors=20)
    episode = gym.open(gym.tasks()[0])
    result = episode.step(answer(COUNTER.reference))
    episode.close()
    workdir = Path(result.info["workdir"])
    try:
        assert result.outcome is Outcome.PASS
        waves = Path(result.info["waves"])
        assert waves.is_file() and "$enddefinitions" in waves.read_text()
    finally:
        shutil.rmtree(workdir)  # kept by close(): the test removes it


@needs_icarus
def test_an_episode_stays_small_when_pickled(gym: VerilogGym) -> None:
    episode = gym.open(task_of(gym, "sync_fifo8"))
    try:
        episode.step("no code at all")
        episode.step(answer(builtin_tasks()["verilog/memory/sync_fifo8"].reference))
        blob = pickle.dumps(episode)
        assert len(blob) < 8000
        assert pickle.loads(blob).workdir.path == episode.workdir.path
    finally:
        episode.close()


@needs_icarus
def test_the_vector_count_is_an_option() -> None:
    heavy = VerilogGym(tasks="counter_mod10", vectors=1000, sequences=4)
    with heavy.open(heavy.tasks()[0]) as episode:
        result = episode.step(answer(COUNTER.reference))
    assert result.outcome is Outcome.PASS and result.info["checks_total"] == 2 * 4000
    assert heavy.sim_timeout_s > VerilogGym(tasks="counter_mod10").sim_timeout_s


# -- infrastructure errors and options -----------------------------------------------------


@needs_verilator
def test_an_unusable_compiler_cache_is_refused_at_start_up(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ValueError, match="ccache_dir.*not usable.*ccache_dir=off"):
        VerilogGym(simulator="verilator", tasks="adder8", ccache_dir=str(blocker / "cache"))
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(ValueError, match="cannot be read by sandboxed builds.*not searchable"):
        VerilogGym(simulator="verilator", tasks="adder8", ccache_dir=str(private / "cache"))


@needs_verilator
def test_a_design_build_cannot_write_the_compiler_cache() -> None:
    # What a design that ran code in its build ($c, a compiler bug) would try: the cache is
    # only readable there; the trusted warm-up alone writes it.
    gym = VerilogGym(simulator="verilator", tasks="adder8")
    task = gym.tasks()[0]
    episode = gym.open(task)
    try:
        episode.turn = 1
        job = episode._job(make_bench(task, episode.settings.bench))
        cache = job.env["CCACHE_DIR"]
        assert job.env["CCACHE_READONLY"] == "1" and not job.shared
        probe = job.run(["sh", "-c", f'touch "{cache}/poison" || mkdir "{cache}/0/poison"'], Limits())
        assert not probe.ok and "Read-only file system" in probe.output
        assert not Path(cache, "poison").exists()
    finally:
        episode.close()


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="verilog gym option simulator='modelsim': use one of icarus, verilator"):
        VerilogGym(simulator="modelsim")
    with pytest.raises(ValueError, match="no task matches.*`harness gyms list verilog --tasks` prints the ids"):
        VerilogGym(tasks="nothing*")
    with pytest.raises(ValueError, match="cocotb works with the built-in tasks only"):
        VerilogGym(testbench="cocotb", source="rtllm:/tmp")
    with pytest.raises(ValueError, match="unknown split 'test'"):
        VerilogGym().tasks("test")
    assert [t.id for t in VerilogGym(tasks="fsm/*,adder8").tasks()][:1] == ["verilog/arithmetic/adder8"]


def test_tools_and_description_name_the_simulator() -> None:
    gym = VerilogGym(simulator="verilator")
    names = [t.name for t in gym.tools()]
    assert names[:2] == ["verilator", "iverilog"] and "pyslang" in names and "ccache" in names
    assert all(t.install_hint for t in gym.tools())
    assert gym.describe()["simulator"] == "verilator"
    assert VerilogGym().step_timeout_s < gym.step_timeout_s


def test_candidates_cover_pass_fail_and_timeout(gym: VerilogGym) -> None:
    found = gym.candidates(task_of(gym, "counter_mod10"), random.Random(0))
    expects = [c.expect for c in found]
    assert expects[0] == "pass" and expects.count("timeout") == 1 and expects.count("fail") >= 3
    labels = [c.label for c in found]
    assert "syntax-error" in labels and any(label.startswith("mutant:") for label in labels)


@needs_icarus
def test_a_design_may_not_redefine_the_testbench(gym: VerilogGym) -> None:
    hijack = ADDER.reference + "\nmodule heavygym_tb;\nendmodule\n"
    with gym.open(task_of(gym, "adder8")) as episode:
        result = episode.step(answer(hijack))
    assert result.outcome is Outcome.FAIL
    assert "heavygym_tb is used by the testbench" in result.observation


@needs_icarus
def test_mutants_are_simulated_first_under_settings_they_were_not_vetted_for() -> None:
    gym = VerilogGym(tasks="counter_mod10", seed=7, vectors=6, sim_timeout_s=2)
    task = gym.tasks()[0]
    offered = [c for c in gym.candidates(task, random.Random(0)) if c.label.startswith("mutant:")]
    for candidate in offered:  # with only 6 cycles some mutants pass: those are not offered
        with gym.open(task) as episode:
            assert episode.step(candidate.action).outcome is Outcome.FAIL, candidate.label


@needs_icarus
@pytest.mark.parametrize(
    "extra",
    [
        '`ifdef __ICARUS__\n  final $display("CHECKS 0 passed=400 total=400");\n`endif',
        "  initial #20 $finish;",
        '  integer fd; initial begin fd = $fopen("outputs.txt", "w"); $fwrite(fd, "00000000 0\\n"); end',
    ],
)
def test_without_the_screen_a_forging_design_still_fails(gym: VerilogGym, extra: str) -> None:
    # The verdict does not rest on the screen: run what it would refuse straight in the sandbox.
    task = task_of(gym, "adder8")
    episode = gym.open(task)
    try:
        episode.turn = 1
        bench = make_bench(task, episode.settings.bench)
        job = episode._job(bench)
        code = WRONG_ADDER.replace("endmodule", extra + "\nendmodule")
        verdict = episode._run(job, bench, code, {}, "")
    finally:
        episode.close()
    assert verdict.outcome is Outcome.FAIL and verdict.reward < 1.0, verdict.feedback
