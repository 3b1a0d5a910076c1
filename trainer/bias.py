"""The slow-sample bias audit: does staleness drop slow trajectories more than fast ones?

Slow trajectories are the ones that go stale, and under heavy verification the slow ones may
be the good ones (a correct design runs the whole testbench; a wrong one may stop at its first
mismatch). The audit sorts the trajectories that got a verdict from the trainer (trained, or
dropped as stale) by gym latency, the sum of their gym steps' service times, and compares the
share trained in each quartile. Errored trajectories are the infrastructure's and in-flight
ones have no fate yet: both are counted, and left out of the quartiles.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from trainer.types import DROPPED_STALE, FATES, TRAINED, Fate


def audit(fates: Sequence[Fate]) -> dict:
    """The summary's `bias` block (docs/architecture.md, metrics)."""
    decided = sorted((f for f in fates if f.fate in (TRAINED, DROPPED_STALE)), key=lambda f: f.gym_s)
    quartiles = []
    if len(decided) >= 4:
        n = len(decided)
        for q in range(4):
            part = decided[q * n // 4 : (q + 1) * n // 4]
            trained = sum(f.fate == TRAINED for f in part)
            quartiles.append({"gym_s_min": part[0].gym_s, "gym_s_max": part[-1].gym_s, "decided": len(part),
                              "trained": trained, "acceptance": trained / len(part)})  # fmt: skip
    fastest = quartiles[0]["acceptance"] if quartiles else 0.0
    total_gym_s = sum(f.gym_s for f in fates)
    return {
        "fates": {name: sum(f.fate == name for f in fates) for name in FATES},
        "quartiles": quartiles,
        "reward_trained": _mean_reward(decided, TRAINED),
        "reward_dropped": _mean_reward(decided, DROPPED_STALE),
        "slow_fast_acceptance": quartiles[-1]["acceptance"] / fastest if fastest else None,
        "gym_s_dropped_share": sum(f.gym_s for f in fates if f.fate == DROPPED_STALE) / total_gym_s
        if total_gym_s
        else 0.0,
    }


def _mean_reward(fates: Sequence[Fate], fate: str) -> float | None:
    rewards = [f.reward for f in fates if f.fate == fate]
    return statistics.fmean(rewards) if rewards else None
