"""The timing contract (docs/gyms/verilog.md, "Timing contract"): outputs are compared over time,
not at one instant. A design that is right only at the instants a bench samples, or that
glitches for part of a clock period, fails on every bench (the VerilogEval trace bench, the
built-in SystemVerilog and cocotb testbenches); the references, and zero-delay logic that
glitches only within a time step, still pass. Real simulators throughout."""

from __future__ import annotations

import random
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import needs_icarus, needs_verilator
from test_verilog_conformance import needs_cocotb

from gyms.base import Outcome
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.benches import testbench
from gyms.verilog.benches.vectors import make_vectors
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.spec import DesignTask
from gyms.verilog.tasks import builtin_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "verilog" / "verilog_eval"
VERILOG_EVAL = f"verilog-eval:{FIXTURES}"
PROBLEMS = sorted(p.name.removesuffix("_test.sv") for p in FIXTURES.glob("*_test.sv"))

# -- glitching variants of a reference ------------------------------------------------------

# How `wrong` is driven; while it is high, every output of the wrapped reference is inverted.
# `{inputs}` is the reference's inputs as a sensitivity list. Delays are in the testbench's unit
# (ps for the VerilogEval fixtures, ns for the built-in tasks).
GLITCHES = {
    # Right at the end of each time step in which an input changed, wrong from 1 unit later:
    # the instants the former VerilogEval recorder sampled at.
    "right only at the instants the inputs change":
        "initial forever begin @({inputs}); wrong = 1'b0; #1 wrong = 1'b1; end",
    # Wrong from 3 to 7 units of every 10: around each rising edge of a VerilogEval testbench's
    # clock (at 5 of every 10 ps), between the inputs' changes on its falling edges.
    "wrong around each rising edge on a free-running delay":
        "initial forever begin #3 wrong = 1'b1; #4 wrong = 1'b0; #3; end",
}


def glitching(reference: str, ports: list[PortSpec], driver: str) -> str:
    """`reference` (module TopModule) renamed and wrapped: its outputs are inverted while `wrong`,
    which `driver` drives, is high."""
    def width(p: PortSpec) -> str:
        return f"[{p.width - 1}:0] " if p.width > 1 else ""

    inputs = [p.name for p in ports if p.direction == "input"]
    outputs = [p for p in ports if p.direction == "output"]
    header = ", ".join(f"{p.direction} {width(p)}{p.name}" for p in ports)
    conns = ", ".join(f".{p.name}({p.name}{'_inner' if p.direction == 'output' else ''})" for p in ports)
    lines = [f"module TopModule ({header});", *(f"  wire {width(p)}{p.name}_inner;" for p in outputs),
             f"  heavygym_inner inner ({conns});", "  reg wrong = 1'b0;",
             "  " + driver.format(inputs=" or ".join(inputs)),
             *(f"  assign {p.name} = {p.name}_inner ^ {{{p.width}{{wrong}}}};" for p in outputs), "endmodule"]  # fmt: skip
    inner = re.sub(r"\bmodule\s+TopModule\b", "module heavygym_inner", reference)
    return "\n".join(lines) + "\n" + inner


def ports_of(task) -> list[PortSpec]:  # noqa: ANN001 - a gym Task
    return [PortSpec(*p) for p in task.metadata["ports"]]


# -- VerilogEval: at least as strict as the dataset's own testbench -------------------------


def as_shipped(problem: str, design: str, workdir: Path) -> tuple[int, int]:
    """(mismatches, samples) the problem's own testbench reports, built and run with Icarus as
    VerilogEval ships it: its testbench, its RefModule and the design."""
    (workdir / "design.sv").write_text(design)
    sources = [FIXTURES / f"{problem}_test.sv", FIXTURES / f"{problem}_ref.sv", workdir / "design.sv"]
    subprocess.run(["iverilog", "-g2012", "-s", "tb", "-o", str(workdir / "sim"), *map(str, sources)], check=True)
    ran = subprocess.run(["vvp", "-n", str(workdir / "sim")], capture_output=True, text=True, timeout=60)
    (found,) = re.findall(r"Mismatches: (\d+) in (\d+) samples", ran.stdout)
    return int(found[0]), int(found[1])


@pytest.fixture(scope="module")
def eval_gym(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VerilogGym]:
    """The fixture problems, their traces recorded afresh (a cache of this module's own)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path_factory.mktemp("traces")))
        yield VerilogGym(source=VERILOG_EVAL, sim_timeout_s=5)


def traced(gym: VerilogGym, problem: str, design: str):  # noqa: ANN201 - a StepResult
    (task,) = [t for t in gym.tasks() if t.id.endswith("/" + problem)]
    with gym.open(task) as episode:
        result = episode.step(answer(design))
    assert result.info["forgeable"] is False, "checked against the trace, not the testbench's printed verdict"
    return result


@needs_icarus
@pytest.mark.parametrize("problem", PROBLEMS)
def test_each_verilog_eval_reference_passes_its_testbench_and_its_trace(eval_gym, problem, tmp_path) -> None:
    (task,) = [t for t in eval_gym.tasks() if t.id.endswith("/" + problem)]
    assert as_shipped(problem, task.reference, tmp_path)[0] == 0
    result = traced(eval_gym, problem, task.reference)
    assert result.outcome is Outcome.PASS, result.observation


@needs_icarus
@pytest.mark.parametrize("mechanism", GLITCHES)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_glitching_reference_fails_its_testbench_and_its_trace(eval_gym, problem, mechanism, tmp_path) -> None:
    (task,) = [t for t in eval_gym.tasks() if t.id.endswith("/" + problem)]
    design = glitching(task.reference, ports_of(task), GLITCHES[mechanism])
    mismatches, samples = as_shipped(problem, design, tmp_path)
    assert mismatches > 0, "the dataset's testbench rejects it"
    result = traced(eval_gym, problem, design)
    assert result.outcome is Outcome.FAIL and result.reward < 1, result.observation
    assert "MISMATCH at " in result.observation


@needs_icarus
def test_trace_feedback_gives_the_time_of_a_change_the_reference_did_not_make(eval_gym) -> None:
    (task,) = [t for t in eval_gym.tasks() if t.id.endswith("/Prob001_nand3")]
    # One glitch, from 3.5 to 4.5 ps: between the inputs' changes at 0 and 10 ps, and finer than a ps.
    once = "`timescale 1ps/1fs\n" + glitching(task.reference, ports_of(task),
                                                "initial begin #3.5 wrong = 1'b1; #1 wrong = 1'b0; end")
    result = traced(eval_gym, "Prob001_nand3", once)
    assert result.outcome is Outcome.FAIL
    assert "MISMATCH at 3.5 ps: output y expected 1'h1 got 1'h0" in result.observation
    assert "  inputs at 3.5 ps: a=1'h0 b=1'h0 c=1'h0" in result.observation


@needs_icarus
def test_outputs_changing_far_more_often_than_the_reference_s_are_refused(eval_gym) -> None:
    (task,) = [t for t in eval_gym.tasks() if t.id.endswith("/Prob001_nand3")]
    ticking = task.reference.replace("assign y = ", "reg t = 1'b0;\n  always #1 t = ~t;\n  assign y = ")
    assert traced(eval_gym, "Prob001_nand3", ticking).outcome is Outcome.PASS  # t never reaches y
    toggling = ticking.replace("assign y = ", "assign y = t ^ ")
    result = traced(eval_gym, "Prob001_nand3", toggling)
    assert result.outcome is Outcome.FAIL and "outputs must change only when their inputs do" in result.observation


@needs_icarus
def test_a_zero_delay_glitch_within_the_inputs_time_step_passes_the_trace_check(eval_gym) -> None:
    delta = """module TopModule (input a, input b, input c, output reg y);
  always @(a or b or c) begin y = a & b & c; #0 y = ~(a & b & c); end
endmodule
"""
    assert traced(eval_gym, "Prob001_nand3", delta).outcome is Outcome.PASS


# -- built-in tasks: outputs hold their value over the whole window -------------------------

ADDER = builtin_tasks()["verilog/arithmetic/adder8"]
COUNTER = builtin_tasks()["verilog/sequential/counter_mod10"]


def wrapped(design: DesignTask, driver: str) -> str:
    return glitching(design.reference, [PortSpec(p.name, p.direction, p.width) for p in design.ports], driver)


def right_only_around(ns: float) -> str:
    """Right for 1 ns around `ns` of every 10 ns vector, wrong the rest of the time."""
    return f"initial begin wrong = 1'b1; #{ns - 0.5}; forever begin wrong = 1'b0; #1 wrong = 1'b1; #9; end end"


# Designs the former benches passed: each is right at the instant they sampled at (inputs at
# +1 ns, then +4 ns for a combinational task; rising edge at +5 ns, then +2 ns for a clocked one).
LATE = {
    "right only around the former combinational sampling instant": (ADDER, wrapped(ADDER, right_only_around(5))),
    "right only around the former clocked sampling instant": (COUNTER, wrapped(COUNTER, right_only_around(7))),
    "settling 3 ns after the inputs (assign #3)": (ADDER, ADDER.reference.replace("assign", "assign #3")),
    "glitching for 1 ps after each input change": (ADDER, wrapped(ADDER, "initial forever begin @({inputs}); "
                                                   "#0.001 wrong = 1'b1; #0.001 wrong = 1'b0; end")),
    "registers updated 1 ns after the edge (<= #1)": (COUNTER, COUNTER.reference.replace("<=", "<= #1")),
}
# Zero-delay designs pass, even where an output glitches within the time step its inputs change.
ON_TIME = {
    "the adder's reference": (ADDER, ADDER.reference),
    "the counter's reference": (COUNTER, COUNTER.reference),
    "an adder glitching within its inputs' time step (#0)": (ADDER, ADDER.reference.replace(
        "output [7:0] sum,\n  output cout", "output reg [7:0] sum,\n  output reg cout").replace(
        "assign {cout, sum} = a + b + cin;",
        "always @(a or b or cin) begin {cout, sum} = ~(a + b + cin); #0 {cout, sum} = a + b + cin; end")),
}
BENCHES = ["sv", pytest.param("cocotb", marks=needs_cocotb)]


@pytest.fixture(scope="module", params=BENCHES)
def builtin_gym(request: pytest.FixtureRequest) -> VerilogGym:
    return VerilogGym(tasks="adder8,counter_mod10,ticker,updown_counter8", testbench=request.param, sim_timeout_s=10)


def stepped(gym: VerilogGym, design: DesignTask, code: str):  # noqa: ANN201 - a StepResult
    (task,) = [t for t in gym.tasks() if t.id == design.id]
    with gym.open(task) as episode:
        return episode.step(answer(code))


@needs_icarus
@pytest.mark.parametrize("label", LATE)
def test_a_design_right_only_at_the_former_sampling_instant_fails(builtin_gym, label) -> None:
    design, code = LATE[label]
    assert ON_TIME[f"the {'adder' if design is ADDER else 'counter'}'s reference"][1] != code
    result = stepped(builtin_gym, design, code)
    assert result.outcome is Outcome.FAIL, result.observation
    assert "but it changed in between" in result.observation


@needs_icarus
@pytest.mark.parametrize("label", ON_TIME)
def test_zero_delay_designs_pass(builtin_gym, label) -> None:
    design, code = ON_TIME[label]
    result = stepped(builtin_gym, design, code)
    assert result.outcome is Outcome.PASS, result.observation


# Registered outputs between the inputs' change and the rising edge, which the benches once left
# unchecked: each design equals the counter's register at every instant from the edge on.
_COUNTER_ON_WIRES = COUNTER.reference.replace("output reg [3:0] count,", "output [3:0] count,").replace(
    "  assign tc = (count == 4'd9);\n", "  reg [3:0] q;\n  assign tc = (count == 4'd9);\n  {drive}\n").replace(
    "count <=", "q <=").replace("(count == 4'd9) ?", "(q == 4'd9) ?").replace("count + 4'd1", "q + 4'd1")
BEFORE_THE_EDGE = {
    "a synchronous reset that clears the count at once (from the input)":
        _COUNTER_ON_WIRES.replace("{drive}", "assign count = rst ? 4'd0 : q;"),
    "a register that changes without a clock edge (an asynchronous reset the spec does not ask for)":
        COUNTER.reference.replace("always @(posedge clk)", "always @(posedge clk or posedge rst)"),
}
TICKER = builtin_tasks()["verilog/sequential/ticker"]  # a Mealy output: tick follows `period`
UPDOWN = builtin_tasks()["verilog/sequential/updown_counter8"]  # an asynchronous reset


@needs_icarus
@pytest.mark.parametrize("label", BEFORE_THE_EDGE)
def test_a_registered_output_that_moves_before_the_edge_fails(builtin_gym, label) -> None:
    code = BEFORE_THE_EDGE[label]
    assert "{drive}" not in code and code != COUNTER.reference
    result = stepped(builtin_gym, COUNTER, code)
    assert result.outcome is Outcome.FAIL, result.observation
    assert "being a registered output, it changed without a clock edge" in result.observation


@needs_icarus
@pytest.mark.parametrize("design", [COUNTER, TICKER, UPDOWN], ids=lambda d: d.name)
def test_registered_mealy_and_asynchronously_reset_references_pass(builtin_gym, design) -> None:
    result = stepped(builtin_gym, design, design.reference)
    assert result.outcome is Outcome.PASS, result.observation


@needs_icarus
def test_the_trace_check_fails_a_registered_output_wrong_until_the_next_edge(eval_gym) -> None:
    """Under the VerilogEval trace every time step is compared, so an output wrong only from an
    input's change until the next rising edge fails there too; the reference passes."""
    stale = glitching((FIXTURES / "Prob002_count_down_ref.sv").read_text().replace("RefModule", "TopModule"),
                      [PortSpec("clk", "input", 1), PortSpec("load", "input", 1), PortSpec("d", "input", 4),
                       PortSpec("q", "output", 4)],
                      "initial forever begin @(load or d); wrong = 1'b1; @(posedge clk); wrong = 1'b0; end")
    result = traced(eval_gym, "Prob002_count_down", stale)
    assert result.outcome is Outcome.FAIL, result.observation
    assert "MISMATCH" in result.observation


@pytest.mark.slow
@needs_verilator
def test_verilator_compares_over_time_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path))
    gym = VerilogGym(source=VERILOG_EVAL, simulator="verilator", tasks="Prob002_count_down", sim_timeout_s=10)
    (task,) = gym.tasks()
    stale = glitching(task.reference, ports_of(task), GLITCHES["right only at the instants the inputs change"])
    for code, outcome in ((task.reference, Outcome.PASS), (stale, Outcome.FAIL)):
        assert traced(gym, "Prob002_count_down", code).outcome is outcome
    builtin = VerilogGym(tasks="adder8", simulator="verilator", sim_timeout_s=10)
    assert stepped(builtin, ADDER, LATE["right only around the former combinational sampling instant"][1]).outcome \
        is Outcome.FAIL


# -- scoring --------------------------------------------------------------------------------


def _recorded(design: DesignTask, vectors, rng: random.Random, flips: float, moves: float) -> bytes:  # noqa: ANN001
    """A file as the testbench writes it, with some values flipped and some outputs marked as moved."""
    widths = [p.width for p in design.outputs]
    lines = []
    for word in vectors.expected:
        row = [format(v, f"0{w}b") for v, w in zip(testbench._fields(word, widths), widths)]
        if rng.random() < flips:
            k = rng.randrange(len(row))
            row[k] = "".join(rng.choice("01x") for _ in row[k])
        moved = "".join("1" if rng.random() < moves else "0" for _ in widths)
        lines.append(" ".join([*row, moved]))
    return ("\n".join(lines) + "\n").encode()


def test_an_output_that_moved_in_its_window_fails_whatever_its_value() -> None:
    vectors = make_vectors(ADDER, 0, 4, 1)
    right = _recorded(ADDER, vectors, random.Random(0), 0.0, 0.0)
    assert testbench.score(ADDER, vectors, right).all_passed
    moved = right.replace(b" 00\n", b" 01\n", 1)  # cout of vector 0 changed in its window
    score = testbench.score(ADDER, vectors, moved)
    assert (score.passed, score.total) == (7, 8)
    assert "MISMATCH vector 0: output cout expected 1'h1 from the inputs at 1 ns until the next inputs at 11 ns, " \
        "but it changed in between (ending at 1'h1)" in score.mismatches


def test_whole_file_scoring_agrees_with_line_by_line_scoring_on_moved_outputs() -> None:
    rng = random.Random(5)
    for design in (ADDER, COUNTER, *(builtin_tasks()[f"verilog/{n}"] for n in ("memory/sync_fifo8", "bus/apb_registers"))):
        vectors = make_vectors(design, 0, 300, 2)
        widths = [p.width for p in design.outputs]
        for flips, moves in ((0.0, 0.0), (0.0, 0.01), (0.02, 0.02), (0.3, 0.3), (1.0, 1.0)):
            data = _recorded(design, vectors, rng, flips, moves)
            assert testbench.score(design, vectors, data) == testbench._line_score(design, vectors, widths, data)
