"""The turn bookkeeping every gym shares (gyms/base.py Episode.step)."""

from __future__ import annotations

from toy_gyms import ToyGym

from gyms import Outcome


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
