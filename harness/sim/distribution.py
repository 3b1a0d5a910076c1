"""A distribution of seconds, small enough for a JSON card and enough to resample.

It keeps up to `POINTS` equally likely values: the samples themselves when there are that few,
else the quantiles at the midpoints of `POINTS` equal-probability bins. Drawing one of them
at random resamples the distribution with its mean and its tail: a table interpolated between
a few percentiles would smear a rare slow call (a timeout) over the whole top percentile.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

POINTS = 1000


@dataclass(frozen=True)
class Distribution:
    count: int  # samples it was built from
    mean: float
    p50: float
    p95: float
    p99: float
    max: float
    values: tuple[float, ...]  # equally likely, sorted

    @classmethod
    def of(cls, samples: Sequence[float], weights: Sequence[float] | None = None) -> Distribution:
        """From samples, optionally weighted (classes measured in other proportions than they occur).
        Unweighted, the percentiles are numpy's default (linear between closest ranks)."""
        if len(samples) == 0:
            raise ValueError("a distribution needs at least one sample")
        order = np.argsort(samples, kind="stable")
        x = np.asarray(samples, dtype=float)[order]
        w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=float)[order]
        if np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be >= 0 and not all 0")
        x, w = x[w > 0], w[w > 0]
        if len(x) == 1:
            percentiles = [x[0]] * 3
        else:  # each sample's place on [0, 1]: i / (n - 1) when the weights are equal
            place = (np.cumsum(w) - w) / (w.sum() - w[-1])
            percentiles = np.interp([0.5, 0.95, 0.99], place, x).tolist()
        if weights is None and len(x) <= POINTS:
            values = x
        else:  # the sample where the cumulative weight crosses each bin's midpoint
            cumulative = np.cumsum(w) / w.sum()
            values = x[np.minimum(np.searchsorted(cumulative, (np.arange(POINTS) + 0.5) / POINTS), len(x) - 1)]
        p50, p95, p99 = (float(p) for p in percentiles)
        return cls(len(x), float(np.average(x, weights=w)), p50, p95, p99, float(x[-1]), tuple(values.tolist()))

    @classmethod
    def constant(cls, value: float) -> Distribution:
        return cls(1, value, value, value, value, value, (value,))

    @classmethod
    def uniform(cls, low: float, high: float) -> Distribution:
        values = low + (high - low) * (np.arange(POINTS) + 0.5) / POINTS
        return cls(0, (low + high) / 2, *(low + (high - low) * q for q in (0.5, 0.95, 0.99)), high,
                   tuple(values.tolist()))  # fmt: skip

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.asarray(self.values)[rng.integers(0, len(self.values), n)]

    def stream(self, rng: np.random.Generator, chunk: int = 1 << 14) -> Iterator[float]:
        """Endless samples, drawn a chunk at a time (the simulator's hot loop takes one at a time)."""
        if len(self.values) == 1:
            while True:
                yield self.values[0]
        while True:
            yield from self.sample(rng, chunk).tolist()

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "mean": self.mean, "p50": self.p50, "p95": self.p95, "p99": self.p99,
                "max": self.max, "values": list(self.values)}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Distribution:
        values = tuple(float(x) for x in data["values"])
        if not values or any(b < a for a, b in zip(values, values[1:])) or values[0] < 0:
            raise ValueError("values must be non-negative seconds in increasing order")
        return cls(int(data["count"]), *(float(data[k]) for k in ("mean", "p50", "p95", "p99", "max")), values)
