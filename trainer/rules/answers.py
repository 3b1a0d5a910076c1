"""The replay policy's answers: which candidate it gives (trainer/policies/replay.py), the mix a
gym's cost card is weighted to (harness/gymcost.py), and how long an emulated response is.

A roll in [0, 1) picks a known-good candidate below `skill`, a non-terminating one below
`skill + timeout_rate`, and a known-bad one otherwise; a task without candidates of the kind a
roll asks for gives a known-bad one, or failing that a known-good one, or a hang.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from gyms import Candidate

SKILL = 0.5  # the replay policy's default chance of a known-good answer
TIMEOUT_RATE = 0.02  # and of a non-terminating one (costly for the gym)
RESPONSE_SPREAD = (0.5, 1.5)  # a response is the profile's mean length x U(0.5, 1.5): a reasoning model's


@dataclass(frozen=True)
class AnswerMix:
    skill: float = SKILL
    timeout_rate: float = TIMEOUT_RATE

    def __post_init__(self) -> None:
        if not 0 <= self.skill <= 1 or not 0 <= self.timeout_rate <= 1:
            raise ValueError("skill and timeout_rate are probabilities in [0, 1]")

    def kind(self, roll: float, kinds: Collection[str]) -> str:
        """The kind of candidate (`Candidate.expect`) a roll picks among those a task offers."""
        if "pass" in kinds and roll < self.skill:
            return "pass"
        if "timeout" in kinds and roll < self.skill + self.timeout_rate:
            return "timeout"
        return "fail" if "fail" in kinds else ("pass" if "pass" in kinds else "timeout")

    def pick(self, candidates: Sequence[Candidate], rng: random.Random) -> Candidate:
        kind = self.kind(rng.random(), {c.expect for c in candidates})
        return rng.choice([c for c in candidates if c.expect == kind])

    def shares(self, kinds: Collection[str]) -> dict[str, float]:
        """How often `pick` gives each kind: the width of the band of rolls that picks it."""
        hang = min(self.timeout_rate, 1.0 - self.skill)
        rest = 1.0 - (self.skill + hang)
        mix: Counter[str] = Counter()
        for start, width in ((0.0, self.skill), (self.skill, hang), (self.skill + hang, rest)):
            mix[self.kind(start, kinds)] += width
        return {kind: share for kind, share in mix.items() if share > 0}


def response_tokens(mean: int, rng: random.Random) -> int:
    """An emulated response's length in tokens, for a profile whose responses average `mean`."""
    low, high = RESPONSE_SPREAD
    return max(1, round(mean * rng.uniform(low, high))) if mean else 1
