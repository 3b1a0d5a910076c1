"""Means and 95 % intervals over the repeats of `harness benchmark --repeats N`.

Each repeat is one sync/async pair run back to back (ABBA order across repeats), so a repeat's
speedup is a paired figure; the interval is Student's t over the per-repeat values. A ratio (a
speedup) is averaged on the log scale: its mean is the geometric mean and its interval the
exponential of the mean log's, so neither can fall below 0 and 2x and 0.5x average to 1x.
An interval that holds a figure's no-effect value (a speedup of 1, an idle drop of 0) is not
significant, and every view says so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.catalogue import CATALOGUE, RATIOS

# Two-sided 95 % quantiles of Student's t by degrees of freedom; between table entries the
# next lower df is used, which widens the interval slightly rather than narrowing it.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}  # fmt: skip
_Z95 = 1.960


def t95(df: int) -> float:
    if df < 1:
        raise ValueError("an interval needs at least two values")
    return _Z95 if df > max(_T95) else _T95[max(d for d in _T95 if d <= df)]


def interval(
    values: Sequence[float], domain: tuple[float, float] = (-math.inf, math.inf), ratio: bool = False
) -> dict[str, Any]:
    """{mean, low, high, n}: low and high are None for a single value (no spread to measure);
    they are cut at the figure's `domain`. A `ratio` is taken on the log scale."""
    if ratio:
        logs = interval(_logs(values))
        return {k: (math.exp(v) if k != "n" and v is not None else v) for k, v in logs.items()}
    n = len(values)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean = statistics.fmean(values)
    if n == 1:
        return {"mean": mean, "low": None, "high": None, "n": 1}
    half = t95(n - 1) * statistics.stdev(values) / math.sqrt(n)
    low, high = max(mean - half, domain[0]), min(mean + half, domain[1])
    return {"mean": mean, "low": low, "high": high, "n": n}


def mean(values: Sequence[float], ratio: bool = False) -> float:
    """The mean of a figure over repeats: geometric for a ratio, as `interval` takes it."""
    return math.exp(statistics.fmean(_logs(values))) if ratio else statistics.fmean(values)


def _logs(ratios: Sequence[float]) -> list[float]:
    if any(v <= 0 for v in ratios):
        raise ValueError(f"a ratio must be positive to be averaged on the log scale, got {list(ratios)}")
    return [math.log(v) for v in ratios]


def not_significant(spread: Mapping[str, Any] | None, null: float | None) -> bool:
    """Whether `spread` (an `interval`) holds `null`, the figure's no-effect value; False when there
    is no interval (one repeat) or the figure has no such value."""
    if not spread or null is None or spread.get("low") is None:
        return False
    return spread["low"] <= null <= spread["high"]


NOT_SIGNIFICANT = "not significant"


def with_interval(
    value: float, spread: Mapping[str, Any] | None, fmt: Callable[[float], str], null: float | None = None
) -> str:
    """`value` formatted, with " [low, high]" after it when `spread` (an `interval`) has bounds, and
    "(not significant)" when they hold `null`."""
    text = fmt(value)
    if spread and spread.get("low") is not None:
        text += f" [{fmt(spread['low'])}, {fmt(spread['high'])}]"
    if not_significant(spread, null):
        text += f" ({NOT_SIGNIFICANT})"
    return text


def over_repeats(repeats: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The intervals of the catalogue's figures that get one, over repeats ({"modes": ...,
    "comparison": ...} each), cut at each figure's domain (a t interval over few repeats can reach
    past it: a speedup below zero, an idle ratio of -0.0 %). A figure that some repeat lacks (one
    mode only, or no gym wait at all) is left out."""
    out = {}
    for metric in CATALOGUE:
        for name, mode in metric.interval_names():
            values = [metric.value(r, mode) for r in repeats]
            if values and all(v is not None for v in values):
                out[name] = interval(values, metric.domain, metric.ratio)
    return out


def over_block(block: dict[str, Any]) -> None:
    """Set a run's (or its control's) `comparison` to the mean over the repeats that compared both
    modes (geometric for a ratio), and its `intervals` (`over_repeats`), from `block["repeats"]`.
    A figure some repeat lacks (a learning target one mode never reached) has no mean: averaging
    the others would hide the miss."""
    compared = [r["comparison"] for r in block["repeats"] if r.get("comparison")]
    if compared:
        keys = dict.fromkeys(k for c in compared for k in c)  # in first-seen order
        block["comparison"] = {k: mean_of([c.get(k) for c in compared], k in RATIOS) for k in keys}
    block["intervals"] = over_repeats(block["repeats"])


def mean_of(values: Sequence[float | None], ratio: bool = False) -> float | None:
    """`mean`, or None when some value is missing."""
    return None if any(v is None for v in values) else mean(values, ratio)  # type: ignore[arg-type]
