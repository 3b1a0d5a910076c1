"""Reward hacks against the math gym (gyms/math/attacks.py), each through a real GymPool worker and
the warm checker: all must `fail` with readable feedback, leave the worker's later verdicts
unaffected, and the correct answers beside them (CONTROLS) must pass through the same pool."""

from __future__ import annotations

import pytest

from gyms.base import Outcome
from gyms.math import MathGym
from gyms.math.attacks import CONTROLS, RIGHT, TASK_ID
from gyms.pool import GymPool
from tests.attacks import assert_suite_holds


@pytest.mark.timeout(300)
def test_math_attacks_fail() -> None:
    gym = MathGym(size=10, max_turns=1)
    (suite,) = gym.attack_suites()
    assert suite.task.id == TASK_ID and suite.task.metadata["gold"] == RIGHT
    assert_suite_holds(gym, suite)


def test_correct_answers_pass_through_the_pool() -> None:
    gym = MathGym(size=10, max_turns=1)
    task = next(t for t in gym.tasks() if t.id == TASK_ID)
    with GymPool(1, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:
        for answer in CONTROLS:
            call = pool.step(gym.open(task), answer)
            call.episode.close()
            assert call.result.outcome is Outcome.PASS, (answer, call.result.observation)


def test_the_checker_never_evaluates_an_answer_as_python(tmp_path) -> None:
    """Past the gym's screen too: the checker itself must treat an answer as data."""
    from gyms.math import verifier

    planted = tmp_path / "ran"
    for code in (f"__import__('os').system('touch {planted}')", f"open('{planted}','w').write('1')"):
        reply = verifier.check([code], RIGHT)
        assert reply["correct"] is False
    assert not planted.exists()
