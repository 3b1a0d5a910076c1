"""summary.json's schema: the typed record of a run.

`harness benchmark` writes a RunSummary (harness/record.py) and every reader gets one back from
the one loader (harness/rundir.py `load_summary`), which reads every older schema. A record's
fields are the schema: writing or reading a key that is not one is an error, not a new key.
A mode's figures are trainer/metrics.py's ModeSummary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainer.metrics import ModeSummary
from trainer.records import Record

# Version 1 (no field) covers every run written before the version was recorded; harness/rundir.py
# `upgrade` reads each older version as the current one. Version 3: the ratios over repeats
# (speedup, ideal speedup, achieved/ideal) are geometric means with log-scale intervals; before,
# they were arithmetic.
SCHEMA_VERSION = 3


def _modes(modes: dict[str, Any], where: str = "") -> dict[str, ModeSummary]:
    typed = {}
    for mode, figures in modes.items():
        try:
            typed[mode] = figures if isinstance(figures, ModeSummary) else ModeSummary.from_json(figures)
        except ValueError as exc:
            raise ValueError(f"{where}mode {mode}: {exc}") from None
    return typed


@dataclass(frozen=True)
class Repeat(Record):
    """One sync/async pair of a run with --repeats, in the order it ran (ABBA over repeats)."""

    repeat: int  # from 1
    order: list[str]
    modes: dict[str, ModeSummary]
    comparison: dict[str, float] | None = None  # trainer/metrics.py `compare`; None unless both modes ran

    @classmethod
    def _typed(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "modes": _modes(data["modes"], f"repeat {data['repeat']}'s ")}


@dataclass(frozen=True, kw_only=True)
class Measured(Record):
    """One gym's measurements: a run's own, or its control's (`RunSummary.control`)."""

    gym: str
    # the first repeat's modes (the report's figures come from them); empty before the first ends
    modes: dict[str, ModeSummary] = field(default_factory=dict)
    repeats: list[Repeat] = field(default_factory=list)
    comparison: dict[str, float] | None = None  # means over the repeats that ran both modes
    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)  # 95 % intervals (harness/intervals.py)
    bias: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # per mode, pooled over the repeats
    gym_workers: int | None = None
    gym_pool: dict[str, int] | None = None  # the pool's calls, errors, gym exceptions and restarts

    @classmethod
    def _typed(cls, data: dict[str, Any]) -> dict[str, Any]:
        repeats = [r if isinstance(r, Repeat) else Repeat.from_json(r) for r in data.get("repeats", [])]
        return {**data, "modes": _modes(data.get("modes", {})), "repeats": repeats}


@dataclass(frozen=True, kw_only=True)
class RunSummary(Measured):
    """A run: what was asked, where it ran, and what it measured (with its control, if asked)."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    spec: dict[str, Any]  # harness/benchmark.py's BenchmarkSpec
    git: dict[str, Any]
    hardware: dict[str, Any]
    tools: dict[str, Any]  # the gym's describe() and the package versions
    policy: dict[str, Any]
    emulated: bool
    placement: str | None  # where the emulated stages ran; None for measured stages
    profile: dict[str, Any] | None  # the hardware profile of the emulated stages
    control: Measured | None = None
    interrupted: str | None = None  # the mode it was interrupted in; harness leaderboard leaves it out
    predicted: dict[str, Any] | None = None  # for the target cluster, by the planner and simulator (harness/predict.py)

    @classmethod
    def _typed(cls, data: dict[str, Any]) -> dict[str, Any]:
        control = data.get("control")
        if control is not None and not isinstance(control, Measured):
            try:
                control = Measured.from_json(control)
            except ValueError as exc:
                raise ValueError(f"control: {exc}") from None
        return {**super()._typed(data), "control": control}
