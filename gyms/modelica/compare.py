"""Scoring simulated trajectories: match against a reference, and scalar requirements.

Trajectories are compared densely, not only at the task's output instants: both the
reference and the answer are simulated on a grid of `dense_intervals(intervals)` steps,
8 to 9 per output interval, whose spacing is set by a secret drawn once per process and
shares (almost) no point with the output grid. A model that is right at the output instants
and wrong between them, or one tuned to any grid it can predict, therefore fails.

Both trajectories come from the same simulation set-up, so their grids agree; the solvers
add event instants (a time repeated for the values before and after the event). Values are
compared on the grid, right after any event at a grid instant, and grid points within
`event_window` of a *reference* event are skipped: an event found a hair earlier or later
must not fail a correct model. Only reference events open windows, so a candidate cannot
hide a wrong trajectory behind events of its own.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Grid instants closer than this (relative to the stop time) are the same instant.
_SAME_INSTANT = 1e-9
# Simulated steps per output interval, at least: a wobble between output instants shows.
DENSITY = 8
# The process's secret share of one more step per interval: the dense grid is not predictable,
# so no answer can be tuned to be right exactly on it. Never sent to the sandbox.
_GRID_SECRET = random.SystemRandom().uniform(0.05, 0.95)
# When event windows would hide more of the grid than this, the check says so and fails.
_MAX_MASKED = 0.5


@dataclass(frozen=True)
class Tolerance:
    """|candidate - reference| <= rtol * |reference| + atol, with atol = max(rtol * range, atol_floor).

    The absolute part scales with the variable's range over the run so that values crossing
    zero are not judged by a vanishing relative bound.
    """

    rtol: float = 1e-3
    atol_floor: float = 1e-9

    def bound(self, reference: np.ndarray) -> np.ndarray:
        spread = float(np.ptp(reference)) if reference.size else 0.0
        return self.rtol * np.abs(reference) + max(self.rtol * spread, self.atol_floor)


@dataclass(frozen=True)
class CheckOutcome:
    name: str  # what was checked, as the feedback names it
    passed: bool
    detail: str  # one line for the model: what was found, and what was required


def grid(stop_time: float, intervals: int) -> np.ndarray:
    return np.linspace(0.0, stop_time, intervals + 1)


def dense_intervals(intervals: int, secret: float | None = None) -> int:
    """How many intervals to simulate for a task with `intervals` output intervals.

    Between DENSITY and DENSITY + 1 times as many, and never a multiple of `intervals`, so
    the dense grid does not simply refine the output grid.
    """
    share = _GRID_SECRET if secret is None else secret
    count = math.ceil((DENSITY + share) * intervals)
    return count + 1 if count % intervals == 0 else count


def on_grid(time: Sequence[float], values: Sequence[float], points: np.ndarray) -> np.ndarray:
    """Values at the grid points: the last sample at that instant (after its event), else interpolated."""
    t = np.asarray(time, dtype=float)
    v = np.asarray(values, dtype=float)
    eps = _SAME_INSTANT * max(float(points[-1]), 1.0)
    right = np.searchsorted(t, points + eps, side="right") - 1  # last sample at or before the point
    exact = (right >= 0) & (np.abs(t[np.clip(right, 0, None)] - points) <= eps)
    out = np.interp(points, t, v)
    out[exact] = v[right[exact]]
    return out


def event_times(time: Sequence[float], points: np.ndarray) -> np.ndarray:
    """Instants where the solver stopped for an event: repeated times and times off the grid."""
    t = np.asarray(time, dtype=float)
    if t.size == 0:
        return t
    eps = _SAME_INSTANT * max(float(points[-1]), 1.0)
    repeated = t[1:][np.diff(t) <= eps]
    idx = np.clip(np.searchsorted(points, t), 1, len(points) - 1)
    gap = np.minimum(np.abs(points[idx] - t), np.abs(points[idx - 1] - t))
    off_grid = t[gap > eps]
    return np.unique(np.concatenate([repeated, off_grid]))


def match_trajectory(
    name: str,
    reference: tuple[Sequence[float], Sequence[float]],
    candidate: tuple[Sequence[float], Sequence[float]],
    points: np.ndarray,
    tolerance: Tolerance,
    event_window: float,
) -> CheckOutcome:
    """Does the candidate's `name` follow the reference within tolerance, outside event windows?"""
    ref = on_grid(*reference, points)
    cand = on_grid(*candidate, points)
    keep = np.ones(points.shape, dtype=bool)
    for te in event_times(reference[0], points):
        keep &= np.abs(points - te) > event_window
    if keep.mean() < 1 - _MAX_MASKED:
        return CheckOutcome(name, False, f"`{name}`: the reference has too many events to compare; fix the task")
    error = np.abs(cand - ref)
    allowed = tolerance.bound(ref)
    bad = keep & ~(error <= allowed)  # a nan error is bad too
    if not bad.any():
        return CheckOutcome(name, True, f"`{name}` matches the expected trajectory")
    first = int(np.argmax(bad))
    worst = int(np.nanargmax(np.where(keep, error, -np.inf))) if np.isfinite(error[keep]).any() else first
    return CheckOutcome(
        name,
        False,
        f"`{name}` differs from the expected trajectory from time {points[first]:.4g} on "
        f"(expected {ref[first]:.6g}, got {cand[first]:.6g}); largest difference {error[worst]:.3g} "
        f"at time {points[worst]:.4g}; {int(bad.sum())} of {int(keep.sum())} compared points are off",
    )


def check_requirement(
    requirement: Mapping[str, Any], time: Sequence[float], values: Sequence[float]
) -> CheckOutcome:
    """A scalar requirement on one trajectory: overshoot, settling time, final value or peak."""
    kind, var = requirement["kind"], requirement["variable"]
    t = np.asarray(time, dtype=float)
    y = np.asarray(values, dtype=float)
    after = t >= requirement.get("from_time", 0.0)
    t, y = t[after], y[after]
    name = f"{kind.replace('_', ' ')} of `{var}`"
    if kind == "overshoot":
        target, start = requirement["target"], y[0]
        step = target - start
        value = max(0.0, float(np.max((y - target) / step))) if step else float("inf")
        limit = requirement["max"]
        return CheckOutcome(name, value <= limit, f"{name}: {value:.2%} (required: at most {limit:.2%})")
    if kind == "settling_time":
        target, band = requirement["target"], requirement.get("band", 0.02)
        allowed = band * abs(target - y[0]) if target != y[0] else band
        outside = np.nonzero(np.abs(y - target) > allowed)[0]
        if outside.size and outside[-1] == len(y) - 1:
            value = float("inf")
            found = f"never settles within {band:.0%} of {target:g}"
        else:
            value = float(t[outside[-1] + 1] - t[0]) if outside.size else 0.0
            found = f"settles within {band:.0%} of {target:g} after {value:.4g}"
        limit = requirement["max"]
        return CheckOutcome(name, value <= limit, f"{name}: {found} (required: after at most {limit:g})")
    if kind == "final_value":
        target, tol = requirement["target"], requirement["tolerance"]
        value = float(y[-1])
        ok = abs(value - target) <= tol
        return CheckOutcome(name, ok, f"{name}: {value:.6g} (required: {target:g} ± {tol:g})")
    if kind == "peak":
        value, limit = float(np.max(np.abs(y))), requirement["max"]
        return CheckOutcome(name, value <= limit, f"{name}: largest magnitude {value:.6g} (required: at most {limit:g})")
    raise ValueError(f"unknown requirement kind {kind!r}; use overshoot, settling_time, final_value or peak")
