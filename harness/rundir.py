"""Reading a run directory (results/runs/<run-id>/) back: the summary, steps, buffer depth and spans,
and the gym service times derived from the spans.

Every problem with a run directory is a `RunDirError` naming the directory and the file, so
the report and the leaderboard can show one clear line instead of a traceback.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from harness import intervals
from harness.outputs import lookup_roots
from harness.summary import SCHEMA_VERSION, Measured, RunSummary
from trainer.pipeline import StepRecord
from trainer.timeline import Span
from trainer.types import FATES

MODE_ORDER = ("sync", "async")
# What the report and the leaderboard read from each mode of summary.json.
NUMBERS = ("step_time_mean", "train_wait_mean", "trainer_idle_ratio", "samples_per_s", "reward_mean",
           "staleness_mean", "ideal_step_time")  # fmt: skip
TABLES = ("staleness_histogram", "accounting", "config")
# The numbers of one quartile of a bias audit (trainer/bias.py), fastest quartile first.
QUARTILE_KEYS = ("gym_s_min", "gym_s_max", "decided", "trained", "acceptance")
# steps.csv holds StepRecord's fields (harness/record.py writes them), then its stats (STAT_COLUMNS).
STEP_FIELDS = tuple(f.name for f in fields(StepRecord) if f.name != "stats")
INT_FIELDS = {f.name for f in fields(StepRecord) if f.type == "int"}


class RunDirError(ValueError):
    """A run directory that is missing, partial or unreadable."""


@dataclass(frozen=True)
class Run:
    path: Path
    summary: RunSummary
    steps: dict[str, list[StepRecord]]  # by mode
    depth: dict[str, list[tuple[float, int]]]  # by mode: (time, ready-buffer depth)
    spans: dict[str, list[Span]]  # by mode

    @property
    def run_id(self) -> str:
        return self.summary.run_id

    @property
    def modes(self) -> list[str]:
        return ordered_modes(self.summary.modes)

    @property
    def emulated_label(self) -> str | None:
        """'emulated (profile NAME)' when generation, training and weight sync were emulated."""
        if not self.summary.emulated:
            return None
        return f"emulated (profile {(self.summary.profile or {}).get('name', '?')})"

    @property
    def placement(self) -> str | None:
        """Where the emulated stages ran: colocated or disaggregated; None for measured stages."""
        return self.summary.placement if self.summary.emulated else None


def ordered_modes(modes: dict[str, Any]) -> list[str]:
    """sync before async (summary.json sorts its keys alphabetically), then any other mode."""
    return [m for m in MODE_ORDER if m in modes] + sorted(m for m in modes if m not in MODE_ORDER)


def find_run(run: str, results_root: Path) -> Path:
    """A run directory from a path, or from a run id under RESULTS/runs/ (or the published runs)."""
    roots = lookup_roots(results_root)
    for candidate in (Path(run), *(root / "runs" / run for root in roots)):
        if candidate.is_dir():
            return candidate
    where = " or ".join(str(root / "runs") for root in roots)
    raise RunDirError(f"no run {run!r}: neither a directory nor a run under {where}")


def load_summary(path: Path) -> RunSummary:
    """summary.json of a run in the current schema, whatever schema it was written in."""
    file = path / "summary.json"
    if not file.is_file():
        raise RunDirError(f"{path}: summary.json is missing (a run that did not finish?)")
    try:
        summary = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(f"{file}: unreadable JSON ({exc})") from None
    if not isinstance(summary, dict):
        raise RunDirError(f"{file}: not a JSON object")
    missing = [k for k in ("run_id", "gym") if not isinstance(summary.get(k), str)]
    missing += [k for k in ("spec", "modes", "hardware", "git", "tools") if not isinstance(summary.get(k), dict)]
    if missing:
        raise RunDirError(f"{file}: missing {', '.join(missing)}")
    if not summary["modes"]:
        raise RunDirError(f"{file}: no measured mode")
    for mode, figures in summary["modes"].items():
        figures = figures if isinstance(figures, dict) else {}
        bad = [k for k in NUMBERS if not _number(figures.get(k))]
        bad += [k for k in TABLES if not isinstance(figures.get(k), dict)]
        if bad:
            raise RunDirError(f"{file}: mode {mode} lacks {', '.join(bad)}")
    for where, audit in _audits(summary):
        if not _is_audit(audit):
            raise RunDirError(f"{file}: {where} is not a bias audit (fates, 4 quartiles or none, rewards, shares)")
    comparison = summary.get("comparison") or {}  # none (null) when one mode ran
    if not isinstance(comparison, dict) or not all(_number(v) for v in comparison.values()):
        raise RunDirError(f"{file}: comparison is not a table of numbers")
    version = summary.get("schema_version", 1)
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise RunDirError(f"{file}: schema_version {version!r} is not one this heavygym reads (1 to "
                          f"{SCHEMA_VERSION}); a newer heavygym wrote it")  # fmt: skip
    try:
        return RunSummary.from_json(upgrade(summary))
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a field of the wrong shape
        raise RunDirError(f"{file}: {exc}") from None


def upgrade(summary: dict[str, Any]) -> dict[str, Any]:
    """`summary` (checked by load_summary) as JSON of the current schema, with what older runs lack
    filled in as they measured it, so that no reader needs to know a run's age:
    - before placement was an option, every emulated run was disaggregated, and no stage waited
      for a shared accelerator (accelerator wait 0);
    - before worker nodes were recorded, a mode has no per-node utilisation (empty, as a pool
      that reports no nodes);
    - before over-sampling, none was done (None: the report shows '-', as the run never said);
    - before the executor, gym workers ran locally;
    - before the scheduler, every run was fifo, with no cost card;
    - before a figure was measured, it is None (the defaults of trainer/metrics.py's ModeSummary);
    - before repeats, the run is its own single repeat; before pooled audits, a mode's own is its pool;
    - before version 3, ratios over repeats were averaged arithmetically, and an interval could reach
      below zero: the means and intervals are taken again from the repeats, on the log scale.
    """
    s = summary  # a fresh load: upgraded in place
    arithmetic = s.get("schema_version", 1) < 3
    s["schema_version"] = SCHEMA_VERSION
    s.setdefault("emulated", False)
    s["placement"] = s.get("placement") or ("disaggregated" if s["emulated"] else None)
    s["spec"] = {"oversample": None, "executor": "local", "schedule": "fifo", "card": None, **s["spec"]}
    for block in (s, s.get("control")):
        if not isinstance(block, dict):
            continue
        for figures in _mode_blocks(block):
            figures.setdefault("placement", s["placement"])
            figures.setdefault("accelerator_wait_mean", 0.0)
            figures.setdefault("gym_utilisation_by_node", {})
        pooled = block.get("bias") or {}
        own = {mode: figures.get("bias") for mode, figures in block.get("modes", {}).items()}
        block["bias"] = {mode: pooled.get(mode) or own.get(mode) for mode in sorted({*pooled, *own})}
        block.setdefault("repeats", [])
        block.setdefault("intervals", {})
        if arithmetic and block["repeats"]:
            intervals.over_block(block)
    return s


def _mode_blocks(block: dict[str, Any]) -> list[dict[str, Any]]:
    """The figures of every mode in `block`, its repeats' included (JSON not yet checked)."""
    repeats = [r.get("modes") for r in block.get("repeats") or [] if isinstance(r, dict)]
    modes = [block.get("modes"), *repeats]
    return [f for m in modes if isinstance(m, dict) for f in m.values() if isinstance(f, dict)]


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def bias_of(block: Measured, mode: str) -> dict[str, Any] | None:
    """The slow-sample bias audit of `mode` in a loaded summary (or its control block), pooled over
    the repeats; None for a run recorded before the audit."""
    return block.bias.get(mode)


def _audits(summary: dict[str, Any]) -> list[tuple[str, object]]:
    """Every bias audit the report and the leaderboard may read, named by where it is."""
    found = []
    for prefix, block in (("", summary), ("control ", summary.get("control"))):
        if not isinstance(block, dict):
            continue
        for mode, figures in (block.get("modes") or {}).items():
            if isinstance(figures, dict) and figures.get("bias") is not None:
                found.append((f"{prefix}mode {mode}'s bias", figures["bias"]))
        pooled = block.get("bias")
        if pooled is not None and not isinstance(pooled, dict):
            found.append((f"{prefix}bias", pooled))
        elif pooled:
            found += [(f"{prefix}bias of {mode}", audit) for mode, audit in pooled.items() if audit is not None]
    return found


def _is_audit(audit: object) -> bool:
    if not isinstance(audit, dict):
        return False
    fates, quartiles = audit.get("fates"), audit.get("quartiles")
    return (
        isinstance(fates, dict)
        and all(isinstance(fates.get(k), int) for k in FATES)
        and isinstance(quartiles, list)
        and len(quartiles) in (0, 4)
        and all(isinstance(q, dict) and all(_number(q.get(k)) for k in QUARTILE_KEYS) for q in quartiles)
        and all(audit.get(k) is None or _number(audit.get(k))
                for k in ("reward_trained", "reward_dropped", "slow_fast_acceptance", "cost_rank_correlation"))
        and _number(audit.get("gym_s_dropped_share"))
    )  # fmt: skip


def load_run(path: Path) -> Run:
    """Everything a report draws. Raises RunDirError for a missing or partial run."""
    summary = load_summary(path)
    steps: dict[str, list[StepRecord]] = {}
    for row in _csv_rows(path / "steps.csv", ("mode", *STEP_FIELDS)):
        try:
            typed = {k: (int(row[k]) if k in INT_FIELDS else float(row[k])) for k in STEP_FIELDS}
        except ValueError as exc:
            raise RunDirError(f"{path / 'steps.csv'}: {exc}") from None
        steps.setdefault(row["mode"], []).append(StepRecord(**typed))
    depth: dict[str, list[tuple[float, int]]] = {}
    for row in _csv_rows(path / "buffer.csv", ("mode", "time", "depth")):
        try:
            depth.setdefault(row["mode"], []).append((float(row["time"]), int(row["depth"])))
        except ValueError as exc:
            raise RunDirError(f"{path / 'buffer.csv'}: {exc}") from None
    spans = _spans(path / "timeline.jsonl")
    lacking = [m for m in summary["modes"] if not steps.get(m) or not spans.get(m)]
    if lacking:
        raise RunDirError(f"{path}: steps.csv or timeline.jsonl has no record of mode {', '.join(lacking)}")
    return Run(path, summary, steps, depth, spans)


# The columns of trajectories.csv its readers use (harness/record.py writes them all), and the whole
# numbers among them, read once here so that a bad value is one error naming the file
TRAJECTORY_READ = ("mode", "group", "task_id", "version", "turns", "reward", "fate")
_WHOLE = ("group", "version", "turns")


def trajectory_rows(directory: Path) -> list[dict[str, str]]:
    """The rows of a run's (or a repeat's) trajectories.csv, one per trajectory; [] for a run recorded
    before the file. Raises RunDirError for a file without the columns, or with a value that is not
    a number where one is."""
    file = directory / "trajectories.csv"
    if not file.is_file():
        return []
    rows = _csv_rows(file, TRAJECTORY_READ)
    try:
        for row in rows:
            [int(row[k]) for k in _WHOLE], float(row["reward"])
    except ValueError as exc:
        raise RunDirError(f"{file}: unreadable ({exc})") from None
    return rows


def _csv_rows(file: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    if not file.is_file():
        raise RunDirError(f"{file.parent}: {file.name} is missing")
    try:
        with file.open(newline="") as f:
            reader = csv.DictReader(f)
            absent = [c for c in columns if c not in (reader.fieldnames or [])]
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise RunDirError(f"{file}: unreadable ({exc})") from None
    if absent:
        raise RunDirError(f"{file}: no column {', '.join(absent)}")
    if any(None in row.values() for row in rows):
        raise RunDirError(f"{file}: a row is cut short (a run that did not finish?)")
    return rows


def _spans(file: Path) -> dict[str, list[Span]]:
    if not file.is_file():
        raise RunDirError(f"{file.parent}: {file.name} is missing")
    try:
        lines = file.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{file}: unreadable ({exc})") from None
    spans: dict[str, list[Span]] = {}
    for n, line in enumerate(lines, 1):
        try:
            d = json.loads(line)
            version = d["version"] if "version" in d else d["step"]  # "step" in runs before schema 2
            # where a span names them: its group, sample and turn (a rollout span's), its feedback's tokens
            optional = {k: None if d.get(k) is None else int(d[k])
                        for k in ("group", "sample", "turn", "feedback_tokens")}  # fmt: skip
            span = Span(str(d["resource"]), str(d["kind"]), float(d["start"]), float(d["end"]), int(version), **optional)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise RunDirError(f"{file}:{n}: not a span ({exc})") from None
        spans.setdefault(str(d["mode"]), []).append(span)
    return spans


@dataclass(frozen=True)
class ServiceStats:
    """Gym service time per call (the gym_step spans), in seconds."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float
    max: float


def service_times(spans: list[Span]) -> list[float]:
    return sorted(s.duration for s in spans if s.kind == "gym_step")


def service_stats(times: list[float]) -> ServiceStats | None:
    """Percentiles by linear interpolation between closest ranks (numpy's default)."""
    if not times:
        return None
    ordered = sorted(times)

    def pct(q: float) -> float:
        pos = (len(ordered) - 1) * q
        lo, hi = math.floor(pos), math.ceil(pos)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    return ServiceStats(len(ordered), sum(ordered) / len(ordered), pct(0.5), pct(0.95), pct(0.99), ordered[-1])
