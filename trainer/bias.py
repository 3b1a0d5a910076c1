"""The slow-sample bias audit: does staleness drop slow trajectories more than fast ones?

Slow trajectories are the ones that go stale, and under heavy verification the slow ones may
be the good ones (a correct design runs the whole testbench; a wrong one may stop at its first
mismatch). The audit sorts the trajectories that got a verdict from the trainer (trained, or
dropped as stale) by gym latency, the sum of their gym steps' service times, and compares the
share trained in each quartile. Errored trajectories are the infrastructure's and in-flight
ones have no fate yet: both are counted, and left out of the quartiles.

Predicted beside measured cost: where trajectories carry the gym time predicted for their task as
their group started (trainer/rules/cost.py), each quartile gives the mean predicted and the mean
measured gym time of those that have one, and the whole gives the Spearman rank correlation of
predicted with measured over every decided trajectory that has one: 1 when the predictions order
the trajectories as their checks did, 0 when they say nothing of it.
"""

from __future__ import annotations

import math
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
                              "trained": trained, "acceptance": trained / len(part), **_predicted(part)})  # fmt: skip
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
        "cost_rank_correlation": spearman([(f.predicted_gym_s, f.gym_s) for f in decided
                                           if f.predicted_gym_s is not None]),  # fmt: skip
    }


def _predicted(part: Sequence[Fate]) -> dict:
    """A quartile's mean predicted and mean measured gym time, of its trajectories with a prediction."""
    known = [f for f in part if f.predicted_gym_s is not None]
    return {
        "predicted": len(known),
        "predicted_gym_s_mean": statistics.fmean(f.predicted_gym_s for f in known) if known else None,
        "measured_gym_s_mean": statistics.fmean(f.gym_s for f in known) if known else None,
    }


def spearman(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Spearman's rank correlation of (x, y) pairs: the Pearson correlation of their ranks, tied
    values sharing their average rank. None for fewer than 2 pairs, or where either side is constant."""
    if len(pairs) < 2:
        return None
    rx, ry = _ranks([x for x, _ in pairs]), _ranks([y for _, y in pairs])
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else None


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i : j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _mean_reward(fates: Sequence[Fate], fate: str) -> float | None:
    rewards = [f.reward for f in fates if f.fate == fate]
    return statistics.fmean(rewards) if rewards else None
