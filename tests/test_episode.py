"""The turn bookkeeping every gym shares (gyms/base.py Episode.step)."""

from __future__ import annotations

import pytest
from toy_gyms import ToyGym

from gyms import Episode, Outcome, StepResult, Task, Verdict


def test_an_oversized_answer_is_refused_unread_and_costs_a_turn():
    gym = ToyGym(max_turns=2)
    episode = gym.open(gym.tasks()[0])
    # "pass" would pass: the cap must act before the gym ever sees the answer.
    result = episode.step("pass" + " " * (episode.max_answer_bytes - 3))
    assert result.outcome is Outcome.FAIL and result.reward == 0.0 and not result.done
    assert result.observation == "The answer is 65,537 bytes; the limit is 65,536. Answer again, shorter."
    assert result.info["answer_bytes"] == episode.max_answer_bytes + 1
    assert episode.step("pass").outcome is Outcome.PASS


def test_the_cap_counts_utf8_bytes_not_characters():
    episode = ToyGym().open(ToyGym().tasks()[0])
    result = episode.step("é" * (episode.max_answer_bytes // 2 + 1))  # two bytes each
    assert result.outcome is Outcome.FAIL and "the limit is 65,536." in result.observation
    assert result.info["answer_bytes"] == 2 * (episode.max_answer_bytes // 2 + 1)


class BrokenCheckerEpisode(Episode):
    """Its checker cannot judge any answer: every step is an infrastructure error."""

    def evaluate(self, action: str) -> Verdict:
        return Verdict(0.0, Outcome.ERROR, "the checker is missing")


def test_a_pass_terminates_the_episode_at_any_turn():
    gym = ToyGym(max_turns=2)
    first = gym.open(gym.tasks()[0]).step("pass")
    assert (first.terminated, first.truncated, first.done) == (True, False, True)
    episode = gym.open(gym.tasks()[0])
    episode.step("wrong")
    last = episode.step("pass")  # on the last turn: still the task's own end, not the limit's
    assert (last.turn, last.terminated, last.truncated, last.done) == (2, True, False, True)


def test_a_fail_with_turns_left_ends_nothing_and_one_on_the_last_turn_is_truncated():
    episode = ToyGym(max_turns=2).open(ToyGym().tasks()[0])
    first = episode.step("wrong")
    assert (first.terminated, first.truncated, first.done) == (False, False, False)
    last = episode.step("wrong")
    assert (last.turn, last.terminated, last.truncated, last.done) == (2, False, True, True)
    assert episode.done
    only = ToyGym(max_turns=1).open(ToyGym().tasks()[0]).step("wrong")
    assert (only.terminated, only.truncated) == (False, True)


def test_an_oversized_answer_on_the_last_turn_is_truncated_like_any_fail():
    episode = ToyGym(max_turns=1).open(ToyGym().tasks()[0])
    result = episode.step("x" * (episode.max_answer_bytes + 1))
    assert (result.outcome, result.terminated, result.truncated) == (Outcome.FAIL, False, True)


def test_an_error_terminates_the_episode_with_turns_left():
    episode = BrokenCheckerEpisode(Task("t", "p"), max_turns=3)
    result = episode.step("anything")
    assert (result.outcome, result.turn) == (Outcome.ERROR, 1)
    assert (result.terminated, result.truncated, result.done) == (True, False, True)
    assert episode.done


def test_a_step_result_cannot_be_both_terminated_and_truncated():
    with pytest.raises(ValueError, match="either terminated or truncated"):
        StepResult("obs", 1.0, terminated=True, truncated=True, outcome=Outcome.PASS, turn=1)
