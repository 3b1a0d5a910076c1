"""GRPO's group advantages, in plain Python: the rollout computes them as a group ends, and the
simulator and the planner import the rollout without torch."""

from __future__ import annotations

import math
from collections.abc import Sequence


def group_advantages(rewards: Sequence[float], eps: float = 1e-6) -> list[float]:
    """GRPO advantages of one group: (r - mean) / (std + eps), population std."""
    if all(r == rewards[0] for r in rewards):
        # no signal, and exactly zero: the float mean of equal rewards may miss them by an ulp
        return [0.0] * len(rewards)
    mean = math.fsum(rewards) / len(rewards)
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / (std + eps) for r in rewards]
