"""The leaderboard as people read it: Markdown and a page (harness/leaderboard.py makes the rows).

A main table short enough to read in one window (gym, run, configuration, policy / profile with
the emulated label, hardware in short, speedup with its 95 % interval, trainer idle sync -> async,
control speedup, repeats); every other figure and the provenance per row below it: a details view
on the page, tables of their own in the Markdown. On the page, the speedup and idle cells carry
inline SVG charts (harness/charts.py) on axes shared by all rows. A column that is '-' in every
row says nothing and is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from harness import charts, hackability
from harness.catalogue import CATALOGUE
from harness.html import Cell, cell, page, table
from harness.intervals import NOT_SIGNIFICANT, not_significant, with_interval
from harness.hackability import Hackability
from harness.report import REPORT

if TYPE_CHECKING:
    from harness.leaderboard import Row

INTRO = (
    "One row per (gym, configuration with the steps and repeats measured, policy / profile / placement, hardware): "
    "the latest run of that key that measured both modes, from a clean tree. Emulated rows wait a hardware "
    "profile's times for generation, training and weight sync, placed as the policy column says; their gym work "
    "is real. A configuration that names no schedule ran fifo (docs/architecture.md, the scheduler). "
    "Speedup and trainer idle are means over the run's repeats (sync/async pairs in ABBA order) with "
    "their 95% intervals; the control is the same configuration with an instant gym."
)
EMPTY = "-"
README_START = "<!-- leaderboard: written by `harness leaderboard --readme`, edit the code instead -->"
README_END = "<!-- /leaderboard -->"

BOARDS = {b.field: (m, b) for m in CATALOGUE for b in m.board}


def _bounds() -> dict[str, tuple[str, str]]:
    """The fields of the 95 % interval's bounds of each figure column that has them."""
    at = {(m.key, *b.parts): b.field for m in CATALOGUE for b in m.board}
    found = {}
    for (key, control, stat, mode), field in at.items():
        low, high = at.get((key, control, "low", mode)), at.get((key, control, "high", mode))
        if stat in (None, "mean") and low and high:
            found[field] = (low, high)
    return found


BOUNDS = _bounds()


def figure(row: Row, field: str, bounds: bool = True) -> str:
    """A figure's text, with its interval (and 'not significant' where it holds the no-effect value)."""
    metric, _ = BOARDS[field]
    value = row.figures[field]
    if value is None:
        return EMPTY
    spread = dict(zip(("low", "high"), (row.figures[f] for f in BOUNDS[field]))) if field in BOUNDS else None
    return with_interval(value, spread if bounds else None, metric.text, metric.null)


@dataclass(frozen=True)
class Shown:
    """A column of the Markdown tables and the page."""

    header: str
    text: Callable[[Row], str]
    sort: Callable[[Row], Any] | None = None  # a figure: the page sorts on its raw value, and it aligns right
    draw: str = ""  # what the cell holds beyond the text: "run", "policy", "hardware", "speedup", "idle"


def _policy(row: Row) -> str:
    return row.policy + (", emulated" if row.stages == "emulated" else "")


def _idle(row: Row) -> str:
    sync, asyn = (figure(row, f, bounds=False) for f in ("idle_sync", "idle_async"))
    return EMPTY if sync == asyn == EMPTY else f"{sync} → {asyn}"


def _raw(field: str) -> Callable[[Row], Any]:
    return lambda row: row.figures[field]


RUN = Shown("run", lambda r: r.run_id, draw="run")
MAIN = (
    Shown("gym", lambda r: r.gym),
    RUN,
    Shown("configuration", lambda r: r.configuration),
    Shown("policy / profile", _policy, draw="policy"),
    Shown("hardware", lambda r: r.machine, draw="hardware"),
    Shown("speedup [95%]", lambda r: figure(r, "speedup"), _raw("speedup"), draw="speedup"),
    Shown("trainer idle sync → async", _idle, _raw("idle_async"), draw="idle"),
    Shown("control speedup", lambda r: figure(r, "control_speedup", bounds=False), _raw("control_speedup")),
    Shown("repeats", lambda r: figure(r, "repeats"), _raw("repeats")),
)
IN_MAIN = {"speedup", "repeats"}  # shown in full there; the details give the rest with their intervals
FIGURES = tuple(
    Shown(b.header, lambda r, f=b.field: figure(r, f), _raw(b.field))
    for m in CATALOGUE for b in m.board if b.parts[1] in (None, "mean") and b.field not in IN_MAIN
)  # fmt: skip
DETAILS = (Shown("hardware (full)", lambda r: r.hardware), *FIGURES,
           Shown("runs of key", lambda r: str(r.runs), lambda r: r.runs))  # fmt: skip
# Learning beside speed (trainer/learning.py): the rows of a policy that learns.
LEARNING_INTRO = (
    "Rows of a policy that learns: the time each mode took to reach the target reward (the pair's starting "
    "reward plus half of sync's rise; the first step whose 5-step running mean reaches it), sync's time over "
    "async's, and each mode's final reward (its last 10 steps, at equal trained samples). A gap whose interval "
    "holds 0 is async at no measured cost in quality. Definitions: docs/architecture.md."
)


def _pair(row: Row, field: str) -> str:
    sync, asyn = (figure(row, f"{field}_{mode}", bounds=False) for mode in ("sync", "async"))
    return EMPTY if sync == asyn == EMPTY else f"{sync} → {asyn}"


LEARNING = (
    Shown("gym", lambda r: r.gym),
    RUN,
    Shown("configuration", lambda r: r.configuration),
    Shown("policy", _policy, draw="policy"),
    Shown("target reward", lambda r: figure(r, "target_reward"), _raw("target_reward")),
    Shown("time to target sync → async", lambda r: _pair(r, "time_to_target"), _raw("time_to_target_async")),
    Shown("learning speedup [95%]", lambda r: figure(r, "learning_speedup"), _raw("learning_speedup")),
    Shown("final reward sync → async", lambda r: _pair(r, "final_reward"), _raw("final_reward_async")),
    Shown("final reward gap [95%]", lambda r: figure(r, "final_reward_gap"), _raw("final_reward_gap")),
    Shown("repeats", lambda r: figure(r, "repeats"), _raw("repeats")),
)


def learning_rows(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.figures.get("final_reward_gap") is not None]


PROVENANCE = (Shown("commit", lambda r: r.commit), Shown("hardware fingerprint", lambda r: r.fingerprint),
              Shown("tool versions", lambda r: r.tools))  # fmt: skip


def shown(columns: Sequence[Shown], rows: list[Row]) -> list[Shown]:
    """The columns that say something: not '-' in every row."""
    return [c for c in columns if any(c.text(r) != EMPTY for r in rows)]


def report_link(row: Row) -> str:
    return f"runs/{row.run_id}/{REPORT}"


# Markdown


def markdown(rows: list[Row], attacks: Sequence[Hackability] = ()) -> str:
    lines = ["# heavygym leaderboard", "", f"{INTRO} Columns: [docs/reports.md](../docs/reports.md).", ""]
    lines += main_table(rows)
    if hackability.rows(list(attacks)):
        lines += ["", "## Reward integrity", "", hackability.INTRO, ""]
        lines += ["| " + " | ".join(hackability.HEADERS) + " |", "| " + " | ".join("---" for _ in hackability.HEADERS) + " |"]
        lines += ["| " + " | ".join(cells) + " |" for cells in hackability.rows(list(attacks))]
    if learning_rows(rows):
        lines += ["", "## Learning", "", LEARNING_INTRO, ""]
        lines += _md_table(LEARNING, learning_rows(rows))
    lines += ["", "## All figures", "", "Every figure of each row, with its 95% interval where the run had repeats.",
              ""]  # fmt: skip
    lines += _md_table([RUN, *shown(DETAILS, rows)], rows)
    lines += ["", "## Provenance", ""]
    lines += _md_table([RUN, *PROVENANCE], rows)
    return "\n".join(lines) + "\n"


def main_table(rows: list[Row], links: str = "") -> list[str]:
    """The main table's Markdown lines (the README embeds them), runs linked under `links`."""
    return _md_table(shown(MAIN, rows), rows, links)


def readme(text: str, rows: list[Row], links: str) -> str:
    """`text` (a README) with the main table between its markers, written again."""
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"no leaderboard markers: put the lines {README_START!r} and {README_END!r} "
                         "where the table goes")  # fmt: skip
    table_lines = "\n".join(main_table(rows, links))
    return f"{text[: start + len(README_START)]}\n{table_lines}\n{text[end:]}"


def _md_table(columns: list[Shown], rows: list[Row], links: str = "") -> list[str]:
    lines = [[c.header for c in columns], ["---:" if c.sort else "---" for c in columns]]
    lines += [[_md_cell(r, c, links) for c in columns] for r in rows]
    return ["| " + " | ".join(line) + " |" for line in lines]


def _md_cell(row: Row, column: Shown, links: str) -> str:
    text = column.text(row).replace("|", "\\|")
    if column.draw == "run":
        return f"[{text}]({links}{report_link(row)})"
    if column.draw == "policy" and row.stages == "emulated":
        return text.removesuffix("emulated") + "**emulated**"
    return text


# The page


def index_html(rows: list[Row], attacks: Sequence[Hackability] = ()) -> str:
    body = [
        "<h1>heavygym leaderboard</h1>",
        (f"<p class=sub>{escape(INTRO)} Click a column header to sort; each run links to its report, and "
         "<i>details</i> under a row holds its other figures and provenance.</p>"),
    ]
    if rows:
        axis = charts.speedup_axis([row.figures[f] for row in rows for f in _SPEEDUP_FIGURES])
        columns, details = shown(MAIN, rows), shown(DETAILS, rows)
        body.append(f"<p class=legend>{charts.legend()}</p>")
        body.append(table([c.header for c in columns], [[_html_cell(r, c, axis) for c in columns] for r in rows],
                          sortable=True, table_id="leaderboard",
                          details=[_details(r, details) for r in rows]))  # fmt: skip
        if learning_rows(rows):
            body.append(f"<h2>Learning</h2>\n<p class=sub>{escape(LEARNING_INTRO)}</p>")
            body.append(table([c.header for c in LEARNING], [[_html_cell(r, c, axis) for c in LEARNING]
                                                              for r in learning_rows(rows)],
                              sortable=True, table_id="learning"))  # fmt: skip
    else:
        body.append("<p>No runs yet: run <code>harness benchmark</code>, then <code>harness leaderboard</code>.</p>")
    if hackability.rows(list(attacks)):
        body.append(f"<h2>Reward integrity</h2>\n<p class=sub>{escape(hackability.INTRO)}</p>")
        body.append(table(hackability.HEADERS, [[cell(text, numeric=text.isdigit()) for text in cells]
                                                for cells in hackability.rows(list(attacks))], table_id="integrity"))  # fmt: skip
    return page("heavygym leaderboard", "\n".join(body), sortable=True, wide=True)


# The speedup axis holds every mean; the interval of a row with few repeats may run off its edge.
_SPEEDUP_FIGURES = ("speedup", "ideal_speedup", "control_speedup")


def _html_cell(row: Row, column: Shown, axis: charts.Axis) -> Cell:
    text = column.text(row)
    sort = column.sort(row) if column.sort else None
    numeric = column.sort is not None
    if column.draw == "run":
        return Cell(f'<a class=mono href="{escape(report_link(row))}">{escape(text)}</a>', sort=text)
    if column.draw == "policy":  # its parts unbroken: "h100-qwen3-4b" is one name
        parts = ", ".join(f"<span class=nowrap>{escape(p)}</span>" for p in row.policy.split(", "))
        return Cell(parts + (" <span class=badge>emulated</span>" if row.stages == "emulated" else ""), sort=text)
    if column.draw == "hardware":
        return Cell(f'<span class=nowrap title="{escape(row.hardware)}">{escape(text)}</span>', sort=text)
    if column.draw == "speedup":  # text above its chart, left-aligned with it
        return Cell(_speedup_text(row) + _speedup_chart(row, axis), "" if sort is None else str(sort))
    if column.draw == "idle":
        return Cell(escape(text) + _idle_chart(row), "" if sort is None else str(sort))
    return cell(text, sort="" if numeric and sort is None else sort, numeric=numeric)


def _speedup_text(row: Row) -> str:
    metric, _ = BOARDS["speedup"]
    value, low, high = (row.figures[f] for f in ("speedup", "speedup_low", "speedup_high"))
    if value is None:
        return EMPTY
    text = f"<b>{escape(metric.text(value))}</b>"
    if low is not None:
        text += f" <small>[{escape(metric.text(low))}, {escape(metric.text(high))}]</small>"
    if not_significant({"low": low, "high": high}, metric.null):
        text += f"<br><span class=ns>{NOT_SIGNIFICANT}</span>"
    return text


def _estimate(row: Row, field: str) -> charts.Estimate:
    low, high = BOUNDS[field]
    return charts.Estimate(row.figures[field], row.figures[low], row.figures[high])


def _speedup_chart(row: Row, axis: charts.Axis) -> str:
    if row.figures["speedup"] is None:
        return ""
    ideal = row.figures["ideal_speedup"]
    title = f"speedup {figure(row, 'speedup')}; ideal {figure(row, 'ideal_speedup')}; " \
            f"control {figure(row, 'control_speedup')}"  # fmt: skip
    return charts.speedup_chart(axis, _estimate(row, "speedup"), ideal, _estimate(row, "control_speedup"), title)


def _idle_chart(row: Row) -> str:
    run = (_estimate(row, "idle_sync"), _estimate(row, "idle_async"))
    control = (_estimate(row, "control_idle_sync"), _estimate(row, "control_idle_async"))
    title = (f"trainer idle: sync {figure(row, 'idle_sync')}, async {figure(row, 'idle_async')}; control: "
             f"sync {figure(row, 'control_idle_sync')}, async {figure(row, 'control_idle_async')}")  # fmt: skip
    return charts.idle_chart(run, control, title)


def _details(row: Row, figures: list[Shown]) -> str:
    """The row's other figures, then its provenance a line each."""
    items = "".join(f"<div><dt>{escape(c.header)}</dt><dd>{escape(c.text(row))}</dd></div>" for c in figures)
    items += "".join(f"<div class=wide><dt>{escape(c.header)}</dt><dd class=mono>{escape(c.text(row))}</dd></div>"
                     for c in PROVENANCE)  # fmt: skip
    return f"<details><summary>details</summary><dl class=more>{items}</dl></details>"
