"""`harness leaderboard`: every run under RESULTS/runs/ in one table, as Markdown, CSV and a page.

The published leaderboard is `harness leaderboard --results results` (scripts/publish-results.sh);
the default root is this machine's own (harness/outputs.py), so an ad-hoc run never changes it.
One row per key (gym, system configuration with the steps, repeats and control measured,
policy/profile/placement, hardware fingerprint):
the latest run of that key that measured both modes (else the latest run). Latest, not best:
picking the best of several tries would publish the luckiest one. Runs from a dirty tree (or of
unknown commit) are left out unless asked for: a published figure must name the code that made
it. Output depends on the run records alone: rows sorted by key, fixed number formats, no
generation time, so the same runs give the same bytes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from html import escape
from pathlib import Path
from typing import Any

from harness.catalogue import CATALOGUE, Board, Metric
from harness.html import Cell, cell, page, table
from harness.intervals import NOT_SIGNIFICANT, not_significant
from harness.outputs import write_text
from harness.report import REPORT, write_report
from harness.rundir import RunDirError, load_summary
from harness.summary import RunSummary

MARKDOWN, CSV, INDEX = "leaderboard.md", "leaderboard.csv", "index.html"
INTRO = (
    "One row per (gym, configuration with the steps and repeats measured, policy / profile / placement, hardware): "
    "the latest run of that key "
    "that measured both modes, from a clean tree. Emulated rows wait a hardware profile's times for "
    "generation, training and weight sync, placed as the policy column says; their gym work is real. "
    "Speedup is the mean over the run's repeats (sync/async pairs in ABBA order) with its 95% interval; "
    "the control is the same configuration with an instant gym."
)


@dataclass(frozen=True)
class Row:
    gym: str
    configuration: str
    policy: str
    stages: str  # "measured" or "emulated" (generation, training and weight sync)
    hardware: str
    fingerprint: str
    figures: dict[str, float | int | None]  # by Board.field: the catalogue's leaderboard columns
    run_id: str
    runs: int  # runs of this key; the row shows the chosen one
    commit: str
    tools: str

    def get(self, field: str) -> Any:
        """A column's value: a figure, or one of the fields above."""
        return self.figures[field] if field in self.figures else getattr(self, field)


@dataclass(frozen=True)
class Column:
    field: str
    header: str
    show: Callable[[Any], str]  # for Markdown and the page; CSV keeps more digits
    numeric: bool = False


def _figure_columns() -> list[Column]:
    """The catalogue's leaderboard columns, in its order."""
    return [Column(b.field, b.header, m.text, numeric=True) for m in CATALOGUE for b in m.board]


COLUMNS = (
    Column("gym", "gym", str),
    Column("run_id", "run", str),
    Column("configuration", "configuration", str),
    Column("policy", "policy / profile", str),
    Column("stages", "stages", str),
    Column("hardware", "hardware", str),
    *_figure_columns(),
    Column("runs", "runs of key", str, numeric=True),
    Column("commit", "commit", str),
    Column("fingerprint", "hardware fingerprint", str),
    Column("tools", "tool versions", str),
)
PROVENANCE = ("commit", "fingerprint", "tools")  # Markdown puts these in a second table


@dataclass(frozen=True)
class Published:
    paths: list[Path]
    rows: list[Row]
    warnings: list[str]  # one line per run left out or without a report


def publish(results_root: Path, include_dirty: bool = False) -> Published:
    """Write results/leaderboard.md, leaderboard.csv and index.html; report runs that lack one,
    and the runs left out for coming from a dirty tree (unless `include_dirty`)."""
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
    out = [results_root / MARKDOWN, results_root / CSV, results_root / INDEX]
    for path, text in zip(out, (markdown(rows), csv_text(rows), index_html(rows))):
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
        fingerprint=fingerprint(s.hardware),
        figures={b.field: _board_value(m, b, s) for m in CATALOGUE for b in m.board},
        run_id=run_id,
        runs=1,
        commit=str(s.git.get("commit") or "unknown") + ("+dirty" if s.git.get("dirty") else ""),
        tools=tool_versions(s.tools),
    )


def _board_value(metric: Metric, board: Board, s: RunSummary) -> float | int | None:
    """One leaderboard cell's figure (Board.where says where in the summary)."""
    where = board.where
    if where in ("low", "high"):
        return (s.intervals.get(metric.key) or {}).get(where)
    block: Mapping[str, Any] = s
    if where.startswith("control"):
        block = s.control or {}
        where = where.removeprefix("control").strip()
    return metric.value(block, where or None)


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


def fingerprint(hw: dict[str, Any]) -> str:
    """What makes one machine kind: CPU model, cores, memory, accelerators (not kernel or Python)."""
    keys = {k: hw.get(k) for k in ("cpu", "cores", "memory_gb", "accelerators")}
    return hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:12]


def report_link(row: Row) -> str:
    return f"runs/{row.run_id}/{REPORT}"


def markdown(rows: list[Row]) -> str:
    main = [c for c in COLUMNS if c.field not in PROVENANCE]
    lines = [
        "# heavygym leaderboard",
        "",
        (
            f"{INTRO} Columns: [docs/reports.md](../docs/reports.md)."
        ),
        "",
    ]
    lines += _md_table(main, rows)
    lines += ["", "## Provenance", ""]
    lines += _md_table([c for c in COLUMNS if c.field in ("run_id", *PROVENANCE)], rows)
    return "\n".join(lines) + "\n"


def _md_cell(row: Row, column: Column) -> str:
    text = _shown(row, column).replace("|", "\\|")
    if column.field == "run_id":
        return f"[{text}]({report_link(row)})"
    if column.field == "stages" and row.stages != "measured":
        return f"**{text}**"
    return text


# A figure column whose metric has a no-effect value and an interval: its cell says when the
# interval holds that value (harness/intervals.py)
_TESTED = {b.field: m for m in CATALOGUE if m.null is not None for b in m.board if b.where == ""}


def _shown(row: Row, column: Column) -> str:
    text = column.show(row.get(column.field))
    metric = _TESTED.get(column.field)
    if metric is not None:
        low, high = ([row.figures.get(b.field) for b in metric.board if b.where == end][0] for end in ("low", "high"))
        if not_significant({"low": low, "high": high}, metric.null):
            text += f" ({NOT_SIGNIFICANT})"
    return text


def _md_table(columns: list[Column], rows: list[Row]) -> list[str]:
    lines = [[c.header for c in columns], ["---:" if c.numeric else "---" for c in columns]]
    lines += [[_md_cell(r, c) for c in columns] for r in rows]
    return ["| " + " | ".join(line) + " |" for line in lines]


def csv_text(rows: list[Row]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.field for c in COLUMNS] + ["report"])
    for r in rows:
        values = [r.get(c.field) for c in COLUMNS]
        cells = ["" if v is None else f"{v:.6f}" if isinstance(v, float) else v for v in values]
        writer.writerow([*cells, report_link(r)])
    return buf.getvalue()


def index_html(rows: list[Row]) -> str:
    body = [
        "<h1>heavygym leaderboard</h1>",
        (
            f"<p class=sub>{escape(INTRO)} Click a column header to sort. Each run links to its report; "
            "<span class=badge>emulated</span> marks the emulated rows.</p>"
        ),
    ]
    if rows:
        body.append(table([c.header for c in COLUMNS], [[_html_cell(r, c) for c in COLUMNS] for r in rows],
                          sortable=True, table_id="leaderboard"))  # fmt: skip
    else:
        body.append("<p>No runs yet: run <code>harness benchmark</code>, then <code>harness leaderboard</code>.</p>")
    return page("heavygym leaderboard", "\n".join(body), sortable=True, wide=True)


def _html_cell(row: Row, column: Column) -> Cell:
    value = row.get(column.field)
    text = _shown(row, column)
    if column.field == "run_id":
        return Cell(f'<a href="{escape(report_link(row))}">{escape(text)}</a>', sort=row.run_id)
    if column.field == "stages" and row.stages != "measured":
        return Cell(f"<span class=badge>{escape(text)}</span>", sort=text)
    if column.field == "commit":  # the full commit is in the CSV, the Markdown and the tooltip
        return Cell(f'<small class=mono title="{escape(text)}">{escape(text[:12])}</small>', sort=text)
    if column.field in ("fingerprint", "tools"):
        return Cell(f"<small class=mono>{escape(text)}</small>", sort=text)
    if column.numeric:
        return cell(text, sort="" if value is None else value, numeric=True)
    return cell(text)
