"""Run records: where a run came from (commit, machine, tool versions) and where it is written."""

from __future__ import annotations

import csv
import json
import os
import platform
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import asdict, astuple, fields
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness.outputs import RESULTS, naming, write_text
from harness.summary import SCHEMA_VERSION, RunSummary
from trainer.pipeline import RunResult, StepRecord
from trainer.types import Fate

class RunDir:
    """RESULTS/runs/<run-id>/, made at its first use, so a run that fails or is interrupted
    before it has anything to write leaves no directory behind."""

    def __init__(self, gym: str, root: Path = RESULTS) -> None:
        self._gym = gym
        self._root = root
        self._path: Path | None = None

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = new_run_dir(self._gym, self._root)
        return self._path

    def remove(self) -> None:
        if self._path is not None:
            shutil.rmtree(self._path)
            self._path = None


def new_run_dir(gym: str, root: Path = RESULTS) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = root / "runs" / f"{stamp}-{gym.replace(':', '_').replace('/', '_')}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    with naming(path):
        path.mkdir(parents=True)
    return path


def git_commit(here: Path = Path(__file__).resolve().parent.parent) -> dict[str, Any]:
    """The commit of the checkout `here` (heavygym's own), and whether its code has changes."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        # results/ holds outputs, not code: the runs a session has just written must not make
        # the next run of that session dirty.
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ".", ":(exclude)results"], cwd=here,
                               capture_output=True, text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def hardware() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    accelerators = []
    try:
        import torch

        if torch.cuda.is_available():
            accelerators = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # a broken CUDA install must not stop a CPU benchmark
        pass
    return {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "memory_gb": round(memory_gb, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "accelerators": accelerators,
    }


def package_versions(names: tuple[str, ...] = ("heavygym", "torch", "transformers")) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def repeat_dir(r: int) -> str:
    """Where repeat r (from 0) of a run keeps its steps.csv, trajectories.csv and timeline.jsonl,
    below the run directory: the first in the run directory itself."""
    return "" if r == 0 else f"repeat-{r + 1}"


def write_mode(run_dir: Path, mode: str, result: RunResult) -> None:
    """One finished mode's steps.csv, buffer.csv, trajectories.csv and timeline.jsonl rows (run_dir: the run's
    directory, or a repeat's or the control's directory below it)."""
    with naming(run_dir):
        run_dir.mkdir(parents=True, exist_ok=True)
    write_steps(run_dir / "steps.csv", mode, result)
    write_buffer_depth(run_dir / "buffer.csv", mode, result)
    write_trajectories(run_dir / "trajectories.csv", mode, result)
    with naming(run_dir / "timeline.jsonl"):
        result.timeline.write_jsonl(run_dir / "timeline.jsonl", mode)


# The learner's step statistics that steps.csv keeps, one column each after StepRecord's fields
# (trainer/policies/learner.py's Learner.train_step); empty for a policy that reports none (replay).
STAT_COLUMNS = ("loss", "clip_fraction", "ratio_deviation_mean", "ratio_deviation_max", "approx_kl",
                "optimizer_steps", "groups_zero_advantage", "tokens_left_out_fraction")  # fmt: skip


def write_steps(path: Path, mode: str, result: RunResult) -> None:
    columns = [k for k in asdict(result.steps[0]) if k != "stats"] if result.steps else []

    def row(step: StepRecord) -> list[Any]:
        values = asdict(step)
        return [mode, *(values[k] for k in columns), *(step.stats.get(k, "") for k in STAT_COLUMNS)]

    _append_csv(path, ["mode", *columns, *STAT_COLUMNS], map(row, result.steps))


def write_buffer_depth(path: Path, mode: str, result: RunResult) -> None:
    _append_csv(path, ["mode", "time", "depth"], ([mode, round(t, 6), d] for t, d in result.depth_series))


# trajectories.csv's columns after the mode: a Fate's fields (trainer/types.py)
TRAJECTORY_COLUMNS = tuple(f.name for f in fields(Fate))


def write_trajectories(path: Path, mode: str, result: RunResult) -> None:
    """One row per trajectory: its gym latency and fate, for the slow-sample bias audit (trainer/bias.py)."""
    rows = ([mode, *("" if v is None else v for v in astuple(fate))] for fate in result.fates)
    _append_csv(path, ["mode", *TRAJECTORY_COLUMNS], rows)


def _append_csv(path: Path, header: list[str], rows: Iterable[list[Any]]) -> None:
    """Append `rows` to the CSV file at `path`, after `header` if the file is new (each mode of a
    run, and each repeat's, appends to its directory's files)."""
    new = not path.exists()
    with naming(path), path.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(header)
        writer.writerows(rows)


def write_summary(run_dir: Path, draft: dict[str, Any]) -> RunSummary:
    """summary.json from the benchmark's `draft` of it, as a RunSummary of the current schema
    (harness/rundir.py reads every older one); its run id is the directory's name."""
    summary = RunSummary.from_json({**draft, "run_id": run_dir.name, "schema_version": SCHEMA_VERSION})
    write_text(run_dir / "summary.json", summary_json(summary))
    return summary


def summary_json(summary: RunSummary) -> str:
    """What summary.json holds (and `harness benchmark --json` prints)."""
    return json.dumps(summary.to_json(), indent=2, sort_keys=True) + "\n"
