"""Feedback that names the fault: failing outputs first, with the first mismatching input and the
expected and actual values where the bench knows them, never behind lines about outputs that
are right. Real simulations of the fixture problems (tests/fixtures/verilog), and the built-in
golden model's vectors."""

from __future__ import annotations

from pathlib import Path

from conftest import needs_icarus
from rtllm_shapes import write_designs

from gyms.base import Outcome
from gyms.sandbox import Limits, Sandbox
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.benches import testbench
from gyms.verilog.benches.base import DESIGN, TESTBENCH_HEADING
from gyms.verilog.benches.recorded import MAX_SHOWN, MISMATCH_HEADING
from gyms.verilog.benches.vectors import make_vectors
from gyms.verilog.benches.verilog_eval import VerilogEvalBench
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.checks.simulators import Job, make_simulator
from gyms.verilog.tasks import builtin_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "verilog"
VERILOG_EVAL = FIXTURES / "verilog_eval"
GATES7 = "Prob003_gates7"  # seven outputs; the wrong design below gets only the seventh wrong


def _gates7_task():
    gym = VerilogGym(source=f"verilog-eval:{VERILOG_EVAL}", tasks=GATES7)
    (task,) = gym.tasks()
    return gym, task


def _last_wrong(reference: str) -> str:
    wrong = reference.replace("assign y_mux = c ? b : a;", "assign y_mux = c ? a : b;")
    assert wrong != reference
    return wrong


@needs_icarus
def test_traced_feedback_leads_with_the_only_failing_output() -> None:
    gym, task = _gates7_task()
    with gym.open(task) as episode:
        result = episode.step(answer(_last_wrong(task.reference)))
    assert result.outcome is Outcome.FAIL and 0 < result.reward < 1 and result.info["forgeable"] is False
    block = result.observation.split(MISMATCH_HEADING + "\n", 1)[1].splitlines()
    assert block[0].startswith("Outputs that mismatch: y_mux (") and "y_and" not in block[0]
    assert block[1].startswith("MISMATCH at ") and "output y_mux expected 1'h" in block[1]
    assert block[2].startswith("  inputs at ") and " a=1'h" in block[2] and " c=1'h" in block[2]
    assert "no mismatches" not in result.observation
    assert all("output y_mux" in line for line in block if line.startswith("MISMATCH"))


def _as_shipped(design: str) -> tuple[VerilogEvalBench, object]:
    """The problem as VerilogEval ships it (its testbench beside the reference), simulated for real."""
    _, task = _gates7_task()
    ports = tuple(PortSpec(*p) for p in task.metadata["ports"])
    bench = VerilogEvalBench(VERILOG_EVAL, GATES7, ports, task.reference or "", "icarus")
    sandbox = Sandbox()
    simulator = make_simulator("icarus")
    with sandbox.workdir() as workdir:
        job = Job(sandbox, workdir, ".")
        job.write(DESIGN, design)
        build = bench.prepare(job)
        assert simulator.build(job, build, Limits(wall_s=60, cpu_s=60, processes=64)).ok
        ran = simulator.simulate(job, build, [], Limits(wall_s=60, cpu_s=60))
        return bench, bench.score(job, ran.stdout)


@needs_icarus
def test_the_testbench_hints_name_the_failing_output_first_and_drop_the_others() -> None:
    _, task = _gates7_task()
    _, score = _as_shipped(_last_wrong(task.reference))
    assert score.heading == TESTBENCH_HEADING and 0 < score.passed < score.total
    # VerilogEval prints one hint per output in port order: the seventh is the wrong one.
    assert score.mismatches[0].startswith("Hint: Output 'y_mux' has ")
    assert "First mismatch occurred at time " in score.mismatches[0]
    assert not any("no mismatches" in line for line in score.mismatches)
    assert score.mismatches[-1].startswith("Hint: Total mismatched samples is ")


def _recorded_lines(design, vectors, wrong: dict[str, set[int]]) -> bytes:
    """Recorded outputs as the testbench writes them, right except output `name` at lines `wrong[name]`."""
    widths = [p.width for p in design.outputs]
    lines = []
    for i, word in enumerate(vectors.expected):
        row = []
        for port, value, width in zip(design.outputs, testbench._fields(word, widths), widths):
            bits = format(value, f"0{width}b")
            if i in wrong.get(port.name, ()):
                bits = bits[:-1] + "10"[int(bits[-1])]
            row.append(bits)
        lines.append(" ".join([*row, "0" * len(widths)]))  # no output moved inside its window
    return ("\n".join(lines) + "\n").encode()


def test_builtin_feedback_shows_every_failing_output_before_more_of_one() -> None:
    adder = builtin_tasks()["verilog/arithmetic/adder8"]
    vectors = make_vectors(adder, 0, 64, 1)
    # `sum` is wrong everywhere, `cout` only at line 40: five mismatches of `sum` would hide it.
    data = _recorded_lines(adder, vectors, {"sum": set(range(len(vectors))), "cout": {40}})
    score = testbench.score(adder, vectors, data)
    widths = [p.width for p in adder.outputs]
    assert score == testbench._line_score(adder, vectors, widths, data)  # both comparisons agree
    lines = score.mismatches
    assert lines[0] == f"Outputs that mismatch: sum ({len(vectors)} samples), cout (1 sample)"
    described = [line for line in lines if line.startswith("MISMATCH")]
    assert described[0].startswith("MISMATCH vector 0: output sum expected")
    assert described[1].startswith("MISMATCH vector 40: output cout expected")
    assert len(described) == MAX_SHOWN and all(line.startswith("  inputs of vector") for line in lines[2::2])


@needs_icarus
def test_rtllm_feedback_leads_with_the_report_then_the_testbench_s_own_lines(tmp_path: Path) -> None:
    gym = VerilogGym(source=f"rtllm:{write_designs(tmp_path, {'mul_reg'})}")
    (task,) = gym.tasks()
    with gym.open(task) as episode:
        result = episode.step(answer(task.reference.replace("p <= a * b;", "p <= a * b + 1;")))
    assert result.outcome is Outcome.FAIL and result.reward == 0.0
    block = result.observation.split(TESTBENCH_HEADING + "\n", 1)[1].splitlines()
    assert block[0] == "===========Test completed with 40 /40 failures==========="
    # Then the lines it printed at each failed check, with the inputs and the expected value.
    assert block[1].startswith("Error at ") and "a = 0, b = 0, p = 1, expected 0" in block[1]
    assert len([line for line in block if line.startswith("Error at ")]) == MAX_SHOWN - 1
