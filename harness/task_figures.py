"""Per task, what a run trained on and how its policy did there: the figures of `harness tasks`.

A schedule decides which tasks' trajectories a policy learns from; the bias audit
(trainer/bias.py) shows it by gym-time quartile, this by task. For one mode of each repeat of a run
(the repeat's trajectories.csv):

* trained fraction: of the task's trajectories that were decided (trained, or dropped stale),
  the share trained;
* late reward: the mean reward of the task's trajectories that its policy's last `late` versions
  generated (pinned version >= steps - late), whatever became of them: what the policy had learned
  of the task by the end. A learning policy's figure; the replay policy learns nothing.

Each figure is the mean over the run's repeats with its 95 % interval (Student's t,
harness/intervals.py). Repeats of a run share its seed, so the interval is over what varies
between them (the gym's timing, and with it the order groups complete in), not over seeds.
A selection of tasks (id prefixes: the slow ones of a mix) adds a row for those tasks together,
and each run after the first gets its difference from the first on it, with Welch's interval
(the runs are independent).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.intervals import interval, t95
from harness.record import repeat_dir
from harness.rundir import RunDirError, load_summary, trajectory_rows
from trainer.types import DROPPED_STALE, TRAINED

LATE_VERSIONS = 10  # "the end of training": the policy's last ten versions, as the learning row's final reward
FIGURES = ("trained_fraction", "late_reward")


@dataclass(frozen=True)
class _Counts:
    decided: int = 0
    trained: int = 0
    late: int = 0  # trajectories of the late versions that ended
    late_reward: float = 0.0  # their rewards' sum

    def __add__(self, other: _Counts) -> _Counts:
        return _Counts(self.decided + other.decided, self.trained + other.trained, self.late + other.late,
                       self.late_reward + other.late_reward)  # fmt: skip

    def figures(self) -> dict[str, float | None]:
        return {"trained_fraction": self.trained / self.decided if self.decided else None,
                "late_reward": self.late_reward / self.late if self.late else None}  # fmt: skip


def run_tasks(run_dir: Path, mode: str, select: Sequence[str] = (), late: int = LATE_VERSIONS) -> dict[str, Any]:
    """One run's figures by task, and for the selected tasks together: each {figure: interval}."""
    summary = load_summary(run_dir)
    if mode not in summary.spec["modes"]:
        raise RunDirError(f"run {summary.run_id} has no {mode} mode (it ran {', '.join(summary.spec['modes'])})")
    first_late = int(summary.spec["steps"]) - late
    repeats = [_counts(run_dir / repeat_dir(r), mode, first_late) for r in range(int(summary.spec["repeats"]))]
    tasks = sorted({task for counts in repeats for task in counts})
    unmatched = [prefix for prefix in select if not any(task.startswith(prefix) for task in tasks)]
    if unmatched:
        raise ValueError(f"--slow {unmatched[0]!r} matches none of the run {summary.run_id}'s tasks "
                         f"({', '.join(tasks[:3])}{', ...' if len(tasks) > 3 else ''})")  # fmt: skip
    by_task = {task: _intervals([counts.get(task, _Counts()) for counts in repeats]) for task in tasks}
    selected = [sum((c for t, c in counts.items() if t.startswith(tuple(select))), _Counts()) for counts in repeats]
    return {
        "run_id": summary.run_id, "schedule": summary.spec["schedule"], "mode": mode, "repeats": len(repeats),
        "late_from_version": first_late, "tasks": by_task,
        "selected": {"prefixes": list(select), **_intervals(selected)} if select else None,
        "per_repeat": {"selected": [c.figures() for c in selected]} if select else None,
    }  # fmt: skip


def difference(base: dict[str, Any], other: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """`other`'s selected figures less `base`'s: the difference of the means, with Welch's 95 % interval."""
    out: dict[str, dict[str, Any] | None] = {}
    for figure in FIGURES:
        a = [r[figure] for r in base["per_repeat"]["selected"] if r[figure] is not None]
        b = [r[figure] for r in other["per_repeat"]["selected"] if r[figure] is not None]
        out[figure] = welch(a, b) if a and b else None
    return out


def welch(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """mean(b) - mean(a) with Welch's 95 % interval (None bounds with fewer than two of each)."""
    diff = statistics.fmean(b) - statistics.fmean(a)
    if len(a) < 2 or len(b) < 2:
        return {"mean": diff, "low": None, "high": None}
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"mean": diff, "low": diff, "high": diff}
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t95(max(1, math.floor(df))) * se
    return {"mean": diff, "low": diff - half, "high": diff + half}


def _intervals(counts: Sequence[_Counts]) -> dict[str, Any]:
    """Each figure's interval over the repeats that have it, and the trajectories behind it."""
    figures = [c.figures() for c in counts]
    out: dict[str, Any] = {}
    for figure in FIGURES:
        values = [f[figure] for f in figures if f[figure] is not None]
        out[figure] = interval(values, (0.0, 1.0))
    out["decided"] = sum(c.decided for c in counts)
    out["late"] = sum(c.late for c in counts)
    return out


def _counts(repeat: Path, mode: str, first_late: int) -> dict[str, _Counts]:
    """A repeat's counts by task, from its trajectories.csv."""
    if not (repeat / "trajectories.csv").is_file():
        raise RunDirError(f"{repeat}: trajectories.csv is missing (a run recorded before it has no per-task figures)")
    counts: dict[str, _Counts] = {}
    for row in trajectory_rows(repeat):
        if row["mode"] != mode or row["fate"] not in (TRAINED, DROPPED_STALE):
            continue
        late = int(row["version"]) >= first_late
        one = _Counts(1, int(row["fate"] == TRAINED), int(late), float(row["reward"]) if late else 0.0)
        counts[row["task_id"]] = counts.get(row["task_id"], _Counts()) + one
    return counts
