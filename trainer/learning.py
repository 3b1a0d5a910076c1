"""Learning beside speed: how fast each mode reaches a reward, and what reward it ends at.

A speedup per step says nothing about quality: async trains on answers up to max_staleness
versions old, and the claim to check is that this costs no learning. So a sync/async pair of a
policy that learns (not the replay policy, whose rewards are a fixed mix) gets:

* the **target reward**: the pair's starting reward (both modes' first WINDOW steps) plus half of
  sync's rise to its final reward. It is set by the pair itself, so a run never asks for a
  reward its model cannot reach, and it is the same target for both modes;
* each mode's **time to the target**: seconds from the mode's start to the end of the first step
  at which the reward, averaged over that step and the WINDOW - 1 before it, reaches the target
  (the average keeps one lucky batch from counting), and the trained samples by then;
* the **learning speedup**: sync's time to the target over async's, a ratio like the speedup;
* each mode's **final reward**: the mean of the last FINAL steps. Both modes train the same steps
  of the same batch, so this is the reward at equal samples, and the **final reward gap**
  (async minus sync) is the quality async pays, or not.

No figure is made where sync did not rise (nothing learned, no target to set), and a mode that
never reaches the target has no time to it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Protocol

WINDOW = 5  # steps: the starting reward, and the running mean that must reach the target
FINAL = 10  # steps: the final reward


class Step(Protocol):
    end: float  # seconds from the mode's start to the end of the step
    reward_mean: float
    trajectories: int  # trained in the step


def final_reward(steps: Sequence[Step]) -> float:
    return statistics.fmean(s.reward_mean for s in steps[-FINAL:])


def reached(steps: Sequence[Step], target: float) -> tuple[float, int] | None:
    """(seconds, trained samples) at the end of the first step whose running mean reaches `target`."""
    samples = 0
    for i, step in enumerate(steps):
        samples += step.trajectories
        if i + 1 >= WINDOW and statistics.fmean(s.reward_mean for s in steps[i + 1 - WINDOW : i + 1]) >= target:
            return step.end, samples
    return None


def compare(sync: Sequence[Step], async_: Sequence[Step]) -> dict[str, float]:
    """The learning figures of one sync/async pair (see the module's docstring); {} for runs too
    short to tell a start from an end. A figure that does not exist (a mode that never reached the
    target) is left out, not None: a run's comparison is a table of numbers (harness/rundir.py)."""
    if min(len(sync), len(async_)) < WINDOW + FINAL:
        return {}
    start = statistics.fmean(s.reward_mean for s in [*sync[:WINDOW], *async_[:WINDOW]])
    finals = {"final_reward_sync": final_reward(sync), "final_reward_async": final_reward(async_)}
    figures: dict[str, float] = {**finals, "final_reward_gap": finals["final_reward_async"] - finals["final_reward_sync"]}
    rise = finals["final_reward_sync"] - start
    if rise <= 0:
        return figures
    target = start + rise / 2
    times = {mode: reached(steps, target) for mode, steps in (("sync", sync), ("async", async_))}
    figures["target_reward"] = target
    for mode, at in times.items():
        if at is not None:
            figures[f"time_to_target_{mode}"], figures[f"samples_to_target_{mode}"] = at
    if times["sync"] and times["async"]:
        figures["learning_speedup"] = times["sync"][0] / times["async"][0]
    return figures
