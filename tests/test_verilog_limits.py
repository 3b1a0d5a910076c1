"""The Verilog gym's limits on the answer's work: the pre-check's elaboration runs under CPU and
memory limits outside the gym worker, and the simulation's limit is CPU time, so a busy machine
does not fail a correct design. Everything runs through a real `GymPool`."""

from __future__ import annotations

import multiprocessing
import os
import random
from pathlib import Path

from attacks import Attack, assert_attacks_fail
from conftest import busy_loops, needs_icarus, past_its_limit

from gyms.base import Outcome, StepResult
from gyms.pool import GymPool
from gyms.steps import StepCall
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.checks.precheck import ELABORATE_MEMORY_MB
from gyms.verilog.tasks import builtin_tasks

ADDER = builtin_tasks()["verilog/arithmetic/adder8"].reference
PORTS = "module TopModule (input [7:0] a, input [7:0] b, input cin, output [7:0] sum, output cout);\n"
WIDE = 8_000_000  # bits: under slang's own limit on a constant (8388608), so only our limits stop it

# Answers whose elaboration costs seconds or gigabytes, each a different mechanism.
COSTLY = {
    "a constant function that multiplies wide values in a loop": answer(
        PORTS + f"  function automatic logic [{WIDE - 1}:0] f(input integer n);\n"
        f"    logic [{WIDE - 1}:0] s; s = {{{WIDE}{{1'b1}}}};\n"
        "    for (int i = 0; i < n; i++) s = s * s + s;\n    return s;\n  endfunction\n"
        f"  localparam logic [{WIDE - 1}:0] P = f(100000);\n"
        "  assign {cout, sum} = a + b + cin + P[0];\nendmodule\n"
    ),
    "hundreds of wide parameters": answer(
        PORTS + "".join(f"  localparam logic [{WIDE - 1}:0] P{i} = {{{WIDE}{{1'b1}}}} + {i};\n" for i in range(300))
        + "  assign {cout, sum} = a + b + cin + " + " + ".join(f"P{i}[{i}]" for i in range(300)) + ";\nendmodule\n"
    ),
    "a wide parameter in each of thousands of generate blocks": answer(
        PORTS + "  wire [1999:0] w;\n  for (genvar i = 0; i < 2000; i++) begin : g\n"
        f"    localparam logic [{WIDE - 1}:0] P = '1;\n    assign w[i] = P[i];\n  end\n"
        "  assign {cout, sum} = a + b + cin + w[3];\nendmodule\n"
    ),
}


def _worker_peak_mb() -> float:
    """The high-water mark of resident memory of the pool's (one) worker process."""
    (worker,) = multiprocessing.active_children()
    status = Path(f"/proc/{worker.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


@needs_icarus
def test_costly_elaboration_fails_within_its_limits_and_the_worker_does_not_grow() -> None:
    gym = VerilogGym(tasks="adder8", sim_timeout_s=2)
    task = gym.tasks()[0]
    with GymPool(1, step_timeout_s=gym.step_timeout_s) as pool:
        assert pool.step(gym.open(task), answer(ADDER)).result.outcome is Outcome.PASS
        baseline_mb = _worker_peak_mb()
        for label, costly in COSTLY.items():
            call = pool.step(gym.open(task), costly)
            res = call.result
            assert res.outcome is Outcome.FAIL, f"{label}: {res.outcome.value}: {res.observation[:300]}"
            assert "too large or too slow to elaborate" in res.observation, f"{label}: {res.observation[:300]}"
            assert call.service_s < gym.step_timeout_s
        peak_mb = _worker_peak_mb()
        # The worker itself never held the elaboration: it grew by the fork's bookkeeping at most.
        assert peak_mb - baseline_mb < ELABORATE_MEMORY_MB / 4, (baseline_mb, peak_mb)
        assert pool.step(gym.open(task), answer(ADDER)).result.outcome is Outcome.PASS


@needs_icarus
def test_costly_elaborations_leave_nothing_behind_and_later_verdicts_hold() -> None:
    gym = VerilogGym(tasks="adder8", sim_timeout_s=2)
    attacks = [Attack(label, costly) for label, costly in COSTLY.items()]
    wrong = answer(PORTS + "  assign {cout, sum} = a + b;\nendmodule\n")
    assert_attacks_fail(gym, gym.tasks()[0], attacks, answer(ADDER), wrong, min_attacks=len(attacks))


def _seen(call: StepCall) -> tuple[float | None, float]:
    """(CPU, wall) seconds of a passing step's simulation; (None, the step's service time) for a
    step that did not pass."""
    result = call.result
    if result.outcome is not Outcome.PASS:
        return None, call.service_s
    return result.info["sim_cpu_s"], result.info["sim_s"]


@needs_icarus
def test_a_correct_simulation_near_its_cpu_limit_passes_on_a_busy_machine() -> None:
    # 100000 vectors per sequence: a simulation of about half a second of CPU. Beside busy loops
    # it is measured once under a generous limit, then checked again under a limit between the
    # CPU and the wall time it took (conftest.past_its_limit): a wall-clock limit would fail it, a
    # CPU-time one passes it.
    generous = VerilogGym(tasks="adder8", vectors=100000, sim_timeout_s=60)
    task = generous.tasks()[0]
    (hang,) = [c for c in generous.candidates(task, random.Random(0)) if c.expect == "timeout"]
    loops = 4 * len(os.sched_getaffinity(0))
    with GymPool(1, step_timeout_s=generous.step_timeout_s) as pool:
        assert pool.step(generous.open(task), answer(ADDER)).result.outcome is Outcome.PASS  # started before the load

        def run(limit: float, loops: int) -> tuple[StepCall, StepResult]:
            tight = VerilogGym(tasks="adder8", vectors=100000, sim_timeout_s=limit)
            with busy_loops(loops):
                return pool.step(tight.open(task), answer(ADDER)), pool.step(tight.open(task), hang.action).result

        with busy_loops(loops):
            measured = pool.step(generous.open(task), answer(ADDER)).result
        assert measured.outcome is Outcome.PASS
        (loaded_call, hung), limit = past_its_limit(
            run, lambda calls: _seen(calls[0]), (measured.info["sim_cpu_s"], measured.info["sim_s"]), loops
        )
    loaded = loaded_call.result
    assert loaded.outcome is Outcome.PASS, f"{loaded.observation[:300]} (limit {limit} s, {loaded.info})"
    assert hung.outcome is Outcome.FAIL and hung.info.get("timed_out") is True, hung.observation[:300]
