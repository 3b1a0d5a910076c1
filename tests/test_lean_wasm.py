"""The Lean gym on the real wasm Lean: references, acceptance, multi-turn feedback, timeouts,
cold checks and the conformance check.

The wasm Lean is installed by scripts/install-lean-wasm.sh if missing (a ~121 MB download
from npm, once). One warm checker (~1.4 GB, ~20-40 s to start) serves the whole module.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import harness

from gyms.base import Outcome
from gyms.lean import LeanGym
from gyms.lean.acceptance import judge
from gyms.lean.backends import WasmBackend
from gyms.lean.checker import CheckerPool, ColdChecker
from gyms.lean.episode import client
from gyms.lean.location import default_dir
from gyms.lean.tasks import core_tasks

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wasm_lean() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        why = "node and npm are needed for the wasm Lean (Debian: apt-get install nodejs npm)"
        if os.environ.get("CI"):  # scripts/setup.sh installs them: missing is a failure there
            pytest.fail(why)
        pytest.skip(why)
    if not WasmBackend().lean.installed():
        script = ROOT / "scripts" / "install-lean-wasm.sh"
        subprocess.run(["bash", str(script)], check=True, timeout=1200, env={**os.environ, "PYTHON": sys.executable})
    return default_dir()


@pytest.fixture(scope="module")
def gym(wasm_lean: Path) -> LeanGym:
    return LeanGym()


@pytest.fixture(scope="module")
def pool(gym: LeanGym) -> CheckerPool:
    """The warm checker that every episode of this process uses."""
    made = client(gym.settings, "")
    assert isinstance(made, CheckerPool)
    made.warm_up()
    return made


def _check(pool: CheckerPool, code: str, theorem: str):
    checked = pool.check(code, theorem, 60)
    return checked, judge(checked.messages, checked.axioms, checked.axioms_required)


def test_every_reference_passes_and_every_wrong_proof_fails(gym: LeanGym, pool: CheckerPool) -> None:
    for task in core_tasks():
        reference = pool.check(f"{task.statement} :=\n{task.reference}", task.name, 60)
        verdict = judge(reference.messages, reference.axioms, reference.axioms_required)
        assert verdict.accepted, (task.id, verdict)
        for wrong in task.wrong:
            assert not _check(pool, f"{task.statement} :=\n{wrong}", task.name)[1].accepted, (task.id, wrong)


def test_axioms_declared_by_the_text_are_caught_by_lean(pool: CheckerPool) -> None:
    # The screen refuses such text before Lean runs; this checks the rule behind it.
    checked, verdict = _check(pool, "axiom cheat : False\ntheorem t : 1 = 2 := cheat.elim", "t")
    assert any(a.name.endswith("cheat") and a.imported is False for a in checked.axioms or ())
    assert not verdict.accepted and "cheat" in verdict.problems[0]


def test_sorry_and_native_code_are_caught_by_lean(pool: CheckerPool) -> None:
    _, with_sorry = _check(pool, "theorem t : 1 = 1 := sorry", "t")
    assert not with_sorry.accepted
    checked, native = _check(pool, "theorem t : 10 < 20 := by native_decide", "t")
    assert {a.name for a in checked.axioms or ()} >= {"Lean.ofReduceBool"} and not native.accepted


def test_a_misnamed_theorem_is_not_accepted(pool: CheckerPool) -> None:
    _, verdict = _check(pool, "theorem other : 1 = 1 := rfl", "t")
    assert not verdict.accepted and "not declared" in verdict.problems[0]


def test_multi_turn_feedback_points_into_the_proof(gym: LeanGym, pool: CheckerPool) -> None:
    task = next(t for t in gym.tasks() if t.id == "core/nat_gap_two")
    episode = gym.open(task)
    first = episode.step("```lean\nby\n  intro x\n  exact Nat.lt_trans h₁ h₂\n```")
    assert first.outcome is Outcome.FAIL and not first.done
    assert "line 2, column" in first.observation and "You may try again" in first.observation
    second = episode.step(task.reference)
    assert second.outcome is Outcome.PASS and second.reward == 1.0 and second.done and second.turn == 2


def test_candidates_keep_their_promises(gym: LeanGym, pool: CheckerPool) -> None:
    task = gym.tasks()[1]
    for candidate in gym.candidates(task, random.Random(0)):
        if candidate.expect == "timeout":
            continue
        result = gym.open(task).step(candidate.action)
        assert (result.outcome is Outcome.PASS) == (candidate.expect == "pass"), (candidate.label, result.observation)
        assert result.outcome is not Outcome.ERROR


def test_a_looping_proof_times_out_as_a_fail_and_the_checker_comes_back(gym: LeanGym, pool: CheckerPool) -> None:
    task = gym.tasks()[0]
    loop = next(c for c in gym.candidates(task, random.Random(0)) if c.expect == "timeout")
    starts = pool.starts
    started = time.monotonic()
    result = gym.open(task).step(loop.action)
    assert result.outcome is Outcome.FAIL and result.info["timed_out"]
    assert time.monotonic() - started < gym.settings.check_timeout_s + 5
    assert gym.open(task).step(task.reference).outcome is Outcome.PASS
    assert pool.starts == starts + 1
    assert all(report.ok for report in pool.health())


def test_cold_mode_checks_with_a_lean_process_per_check(wasm_lean: Path) -> None:
    cold = LeanGym(mode="cold")
    assert isinstance(client(cold.settings, ""), ColdChecker)
    task = cold.tasks()[0]
    assert cold.open(task).step(task.reference).outcome is Outcome.PASS
    wrong = cold.open(task).step(task.metadata["wrong"][0])
    assert wrong.outcome is Outcome.FAIL and "line 1, column" in wrong.observation


def test_harness_gyms_check_lean(wasm_lean: Path) -> None:
    """The conformance check as a user runs it: a gym pool worker with its own warm checker.
    The first task carries the looping candidate, so a timeout is among the checks."""
    done = harness("gyms", "check", "lean", "--limit", "2", "--workers", "1", "--json", timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] and report["tasks"] == 2, [c for c in report["checks"] if c["problem"]]
    assert any(check["expect"] == "timeout" for check in report["checks"])
