"""`harness leaderboard`: every run under RESULTS/runs/ in one table, as Markdown, CSV and a page.

The published leaderboard is `harness leaderboard --results results` (scripts/publish-results.sh);
the default root is this machine's own (harness/outputs.py), so an ad-hoc run never changes it.
One row per key (gym, system configuration with the steps, repeats and control measured,
policy/profile/placement, hardware fingerprint):
the latest run of that key that measured both modes (else the latest run). Latest, not best:
picking the best of several tries would publish the luckiest one. Runs from a dirty tree (or of
unknown commit) are left out unless asked for: a published figure must name the code that made
it. Output depends on the run records alone: rows sorted by key, fixed number formats, no
generation time, so the same runs give the same bytes. What people read, the Markdown and the
page, is drawn in harness/leaderboard_views.py; the CSV holds every column.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness import hackability
from harness.catalogue import CATALOGUE, Board, Metric
from harness.leaderboard_views import index_html, markdown, readme, report_link
from harness.outputs import write_text
from harness.report import REPORT, write_report
from harness.rundir import RunDirError, load_summary
from harness.summary import RunSummary

MARKDOWN, CSV, INDEX = "leaderboard.md", "leaderboard.csv", "index.html"


@dataclass(frozen=True)
class Row:
    gym: str
    configuration: str
    policy: str
    stages: str  # "measured" or "emulated" (generation, training and weight sync)
    hardware: str
    machine: str  # the hardware in short, for the main table
    fingerprint: str
    figures: dict[str, float | int | None]  # by Board.field: the catalogue's leaderboard columns
    run_id: str
    runs: int  # runs of this key; the row shows the chosen one
    commit: str
    tools: str

    def get(self, field: str) -> Any:
        """A column's value: a figure, or one of the fields above."""
        return self.figures[field] if field in self.figures else getattr(self, field)


# The CSV's columns: the key, the catalogue's figure columns in its order, the provenance.
COLUMNS = ("gym", "run_id", "configuration", "policy", "stages", "hardware",
           *(b.field for m in CATALOGUE for b in m.board), "runs", "commit", "fingerprint", "tools")  # fmt: skip


@dataclass(frozen=True)
class Published:
    paths: list[Path]
    rows: list[Row]
    warnings: list[str]  # one line per run left out or without a report


def publish(results_root: Path, include_dirty: bool = False, readme_file: Path | None = None) -> Published:
    """Write results/leaderboard.md, leaderboard.csv and index.html; report runs that lack one,
    and the runs left out for coming from a dirty tree (unless `include_dirty`). With `readme_file`,
    write the main table again between that file's leaderboard markers too."""
    runs_dir = results_root / "runs"
    if not runs_dir.is_dir():
        raise RunDirError(f"no runs: {runs_dir} does not exist (run harness benchmark first)")
    rows, warnings, dirty = [], [], []
    for path in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        try:
            summary = load_summary(path)
            if summary.interrupted:
                warnings.append(f"skipped {path}: the run was interrupted {summary.interrupted}")
                continue
            if not include_dirty and not clean(summary):
                dirty.append(path.name)
                continue
            if not (path / REPORT).is_file():  # a run from before reports, or one copied in
                write_report(path)
        except RunDirError as exc:
            warnings.append(f"skipped {exc}")
            continue
        rows.append(make_row(path.name, summary))
    if dirty:
        warnings.append(f"left out {len(dirty)} run(s) from a dirty tree or of unknown commit "
                        f"({', '.join(dirty)}); --include-dirty publishes them")  # fmt: skip
    rows = choose(rows)
    attacks, unread = hackability.load_all(results_root)  # each gym's attack figure, shown beside the runs
    warnings += unread
    out = [results_root / MARKDOWN, results_root / CSV, results_root / INDEX]
    texts = [markdown(rows, attacks), csv_text(rows), index_html(rows, attacks)]
    if readme_file is not None:
        links = Path(os.path.relpath(results_root, readme_file.parent)).as_posix() + "/"
        try:
            texts.append(readme(readme_file.read_text(), rows, links))
        except ValueError as exc:
            raise ValueError(f"{readme_file}: {exc}") from None
        out.append(readme_file)
    for path, text in zip(out, texts):
        write_text(path, text)
    return Published(out, rows, warnings)


def clean(summary: RunSummary) -> bool:
    """Whether the run came from a committed, clean tree: only then does its commit name its code."""
    git = summary.git
    return bool(git.get("commit")) and git.get("dirty") is False


def choose(rows: list[Row]) -> list[Row]:
    """One row per key: the latest run with both modes, else the latest run; sorted by key."""
    by_key: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        by_key.setdefault((row.gym, row.configuration, row.policy, row.hardware, row.fingerprint), []).append(row)
    chosen = []
    for key in sorted(by_key):
        runs = by_key[key]
        latest = max(runs, key=lambda r: (r.figures["speedup"] is not None, _natural(r.run_id)))
        chosen.append(replace(latest, runs=len(runs)))
    return chosen


def _natural(run_id: str) -> tuple:
    """Run ids start with a UTC timestamp; a numeric suffix (-2, -10) counts as a number."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", run_id))


def make_row(run_id: str, s: RunSummary) -> Row:
    """The leaderboard figures of one run (run_id: its directory's name under runs/)."""
    profile = (s.profile or {}).get("name")
    policy = str(s.spec.get("policy", "?")) + (f" / {profile}" if s.emulated else "")
    if s.placement:
        policy += f", {s.placement}"
    return Row(
        gym=s.gym,
        configuration=configuration(s),
        policy=policy,
        stages="emulated" if s.emulated else "measured",
        hardware=hardware_name(s.hardware),
        machine=machine(s.hardware),
        fingerprint=fingerprint(s.hardware),
        figures={b.field: _board_value(m, b, s) for m in CATALOGUE for b in m.board},
        run_id=run_id,
        runs=1,
        commit=str(s.git.get("commit") or "unknown") + ("+dirty" if s.git.get("dirty") else ""),
        tools=tool_versions(s.tools),
    )


def _board_value(metric: Metric, board: Board, s: RunSummary) -> float | int | None:
    """One leaderboard cell's figure (Board.where says where in the summary)."""
    control, stat, mode = board.parts
    block: Mapping[str, Any] = (s.control or {}) if control else s
    if stat is None:
        return metric.value(block, mode)
    spread = (block.get("intervals") or {}).get(f"{metric.key}_{mode}" if mode else metric.key) or {}
    if stat == "mean" and spread.get("mean") is None:  # a run without repeats: its one measurement
        return metric.value(block, mode)
    return spread.get(stat)


def tool_versions(tools: dict[str, str]) -> str:
    """'math 0.1.0, heavygym 0.1.0, torch 2.13.0, ...': the gym's own version first."""
    rest = {k: v for k, v in tools.items() if k not in ("gym", "version")}
    gym = [f"{tools['gym']} {tools['version']}"] if "gym" in tools and "version" in tools else []
    return ", ".join(gym + [f"{k} {v}" for k, v in sorted(rest.items())])


def configuration(s: RunSummary) -> str:
    spec = s.spec
    text = (
        f"batch {spec.get('batch_groups', '?')} x group {spec.get('group_size', '?')}, "
        f"max_staleness {spec.get('max_staleness', '?')}, {s.gym_workers or '?'} gym workers"
    )
    if spec["oversample"]:  # 0 or None (not recorded): nothing to say
        text += f", oversample {spec['oversample']}"
    if spec["schedule"] != "fifo":  # fifo, the baseline, goes unnamed, as oversample 0 does
        text += f", schedule {spec['schedule']}"
    if spec["executor"] != "local":
        text += f" on {spec['executor']}"
    options = spec.get("gym_options") or {}
    text += "".join(f", {k}={v}" for k, v in sorted(options.items()))
    # how much was measured is part of the key: a 4-step smoke run is not the row of a 3-repeat run
    repeats = len(s.repeats) or 1
    return text + f"; {spec.get('steps', '?')} steps x {repeats} repeat{'s' * (repeats > 1)}" + (
        " + control" if s.control else "")


def hardware_name(hw: dict[str, Any]) -> str:
    accelerators = hw.get("accelerators") or []
    names = sorted(set(accelerators))
    gpus = "".join(f", {accelerators.count(n)}x {n}" for n in names)
    return f"{hw.get('cpu', '?')}, {hw.get('cores', '?')} cores, {hw.get('memory_gb', '?')} GB{gpus}"


_NOT_THE_MODEL = r"\((R|TM)\)|\b(Intel|AMD|Processor|CPU)\b|\d+-Core|@.*"  # vendor, trademarks, cores, clock


def machine(hw: dict[str, Any]) -> str:
    """The hardware in short: 'Xeon, 2 cores, 8x H100 80GB HBM3' (vendor, trademarks and clock left out)."""
    cpu = re.sub(_NOT_THE_MODEL, " ", str(hw.get("cpu", "?")), flags=re.IGNORECASE)
    accelerators = [re.sub(r"^NVIDIA ", "", str(a)) for a in hw.get("accelerators") or []]
    gpus = "".join(f", {accelerators.count(n)}x {n}" for n in sorted(set(accelerators)))
    return f"{' '.join(cpu.split()) or '?'}, {hw.get('cores', '?')} cores{gpus}"


def fingerprint(hw: dict[str, Any]) -> str:
    """What makes one machine kind: CPU model, cores, memory, accelerators (not kernel or Python)."""
    keys = {k: hw.get(k) for k in ("cpu", "cores", "memory_gb", "accelerators")}
    return hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:12]


def csv_text(rows: list[Row]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*COLUMNS, "report"])
    for r in rows:
        values = [r.get(c) for c in COLUMNS]
        cells = ["" if v is None else f"{v:.6f}" if isinstance(v, float) else v for v in values]
        writer.writerow([*cells, report_link(r)])
    return buf.getvalue()
