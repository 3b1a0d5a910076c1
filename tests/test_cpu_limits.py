"""The Lean and Modelica gyms limit the answer's work in CPU time, backed by a wall-clock limit
three times as long (`gyms.warm.WALL_PER_CPU`), so a busy machine does not fail a correct answer.

Beside busy loops (four per core to begin with), a correct answer whose wall time under the load
is past its limit (a wall-clock limit fails it) still passes, as its CPU time is below the limit;
a non-terminating answer still fails as timed out within the gym's step timeout. Both run
through the gym, on the real wasm Lean and on the real rumoca runner in the sandbox.

The limit is set from the answer's own run under the same load (`conftest.past_its_limit`: at
least twice its CPU time, and tried again under more or fewer loops where the wall time missed
the window between the limit and the backstop): how much the loops slow a checker down depends
on what else the machine runs (1.3 to more than 6 times here).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import replace

import pytest
from conftest import busy_loops, past_its_limit
from test_lean_wasm import wasm_lean  # noqa: F401  (the fixture: installs the wasm Lean if missing)

from gyms.base import Episode, Gym, Outcome, StepResult, Task
from gyms.lean import LeanGym
from gyms.lean.episode import client
from gyms.lean.gym import LOOP_PROOF
from gyms.modelica import ModelicaGym
from gyms.modelica.catalog import load_catalog, suite_catalog
from gyms.modelica.mutations import as_answer
from gyms.modelica.simulation import COMPILE_ALLOWANCE_S

pytestmark = pytest.mark.slow

QUICK_FAIL = "by skip"  # a proof Lean refuses at once ("unsolved goals"): it starts a checker


def step(gym: Gym, task: Task, answer: str) -> tuple[StepResult, float]:
    """The result of one step and its wall time."""
    episode: Episode = gym.open(task)
    with episode:
        started = time.monotonic()
        result = episode.step(answer)
    return result, time.monotonic() - started


def _seen(result: StepResult, wall_s: float, stage: str) -> tuple[float | None, float]:
    """(CPU, wall) seconds of a passing step's `stage`; (None, the step's wall seconds) for a step
    that did not pass."""
    if result.outcome is not Outcome.PASS:
        return None, wall_s
    return result.info[f"{stage}_cpu_s"], result.info[f"{stage}_s"]


def test_lean_a_correct_proof_near_its_cpu_limit_passes_on_a_busy_machine(wasm_lean) -> None:  # noqa: F811
    probe = LeanGym(suite="heavy")
    task = next(t for t in probe.tasks("train") if t.id == "heavy/heavy_fin_mul_mod_comm")
    proof = f"```lean\n{task.reference}\n```"
    loops = 4 * len(os.sched_getaffinity(0))
    step(probe, task, QUICK_FAIL)  # starts the checker: its start is not the proof's work
    with busy_loops(loops):
        measured, _ = step(probe, task, proof)
    client(probe.settings, "").close()  # ~1.4 GB
    assert measured.outcome is Outcome.PASS, measured.observation

    def run(limit: float, loops: int) -> tuple[StepResult, float, StepResult, float, LeanGym]:
        gym = LeanGym(suite="heavy", check_timeout_s=limit)
        try:
            # A checker starts only outside the load: under many loops a start can take minutes,
            # and a loaded step past its backstop is killed, so its replacement would start there.
            step(gym, task, QUICK_FAIL)
            with busy_loops(loops):
                loaded, loaded_wall = step(gym, task, proof)
            step(gym, task, QUICK_FAIL)
            with busy_loops(loops):
                hung, hung_wall = step(gym, task, LOOP_PROOF)
        finally:
            client(gym.settings, "").close()  # and the replacement of the killed checker with it
        return loaded, loaded_wall, hung, hung_wall, gym

    (loaded, _, hung, hung_wall, gym), limit = past_its_limit(
        run, lambda r: _seen(r[0], r[1], "check"), (measured.info["check_cpu_s"], measured.info["check_s"]), loops
    )
    assert loaded.outcome is Outcome.PASS, f"{loaded.observation[:300]} (limit {limit} s, {measured.info})"
    assert hung.outcome is Outcome.FAIL and hung.info.get("timed_out") is True, hung.observation[:300]
    assert hung_wall < gym.step_timeout_s


def _thermostats(times: int) -> Task:
    """heavy/room-thermostats simulated `times` times as long (as many switchings): a correct
    answer (the reference) whose CPU cost scales, so that it can be made a good fraction of a
    budget on any machine."""
    spec = next(s for s in suite_catalog("heavy") if s.id == "heavy/room-thermostats")
    setup = replace(spec.setup, stop_time=spec.setup.stop_time * times, intervals=spec.setup.intervals * times)
    return Task(f"{spec.id}-x{times}", "", reference=spec.reference, metadata=setup.to_metadata())


def test_modelica_a_correct_model_near_its_cpu_limit_passes_on_a_busy_machine() -> None:
    probe = ModelicaGym(suite="heavy")

    def passed(task: Task) -> StepResult:
        result, _ = step(probe, task, as_answer(task.reference or ""))
        assert result.outcome is Outcome.PASS, result.observation
        return result

    correct = _thermostats(max(1, math.ceil(2.5 / passed(_thermostats(1)).info["simulate_cpu_s"])))  # >= 2.5 CPU s
    loops = 4 * len(os.sched_getaffinity(0))
    with busy_loops(loops):
        measured = passed(correct)
    never_ends = next(s for s in load_catalog() if s.id == "event/drug-dosing")
    old, new = never_ends.mutations["never-ends"]

    def run(budget: float, loops: int) -> tuple[StepResult, float, StepResult, float, ModelicaGym]:
        # The call's budget is the simulation's plus the compile allowance.
        gym = ModelicaGym(suite="heavy", sim_timeout_s=budget - COMPILE_ALLOWANCE_S["rumoca"])
        step(gym, never_ends.task(), as_answer(never_ends.reference))  # the runners start before the load
        with busy_loops(loops):
            loaded, loaded_wall = step(gym, correct, as_answer(correct.reference or ""))
            hung, hung_wall = step(gym, never_ends.task(), as_answer(never_ends.reference.replace(old, new)))
        return loaded, loaded_wall, hung, hung_wall, gym

    (loaded, _, hung, hung_wall, gym), budget = past_its_limit(
        run, lambda r: _seen(r[0], r[1], "simulate"),
        (measured.info["simulate_cpu_s"], measured.info["simulate_s"]), loops,
    )  # fmt: skip
    assert loaded.outcome is Outcome.PASS, f"{loaded.observation[:300]} (budget {budget} s, {measured.info})"
    assert hung.outcome is Outcome.FAIL and hung.info.get("timed_out") is True, hung.observation[:300]
    assert hung_wall < gym.step_timeout_s
