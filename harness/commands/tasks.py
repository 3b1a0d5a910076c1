"""`harness tasks`: per task, what runs trained on and how their policies did (harness/task_figures.py)."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer
from rich.table import Table

from harness.console import console
from harness.options import Json, Results
from harness.outputs import RESULTS


def tasks(
    runs: Annotated[list[str], typer.Argument(help="Runs (ids or directories); the first is the base the others "
                                              "are compared with, e.g. fifo then cost-aware.")],
    slow: Annotated[Optional[list[str]], typer.Option(
        help="A task id prefix of the selection (repeatable): its tasks together get a row, and each run after "
        "the first its difference from the first there.")] = None,
    mode: Annotated[str, typer.Option(help="The mode whose trajectories count.")] = "async",
    late: Annotated[int, typer.Option(min=1, help="Late reward: of the trajectories the policy's last LATE "
                                      "versions generated.")] = 10,
    results: Results = RESULTS,
    as_json: Json = False,
) -> None:
    """Each task's trained fraction and late reward, per run, with 95% intervals over its repeats:
    which tasks a schedule lets the policy learn from, and what it learned there."""
    from harness.rundir import find_run
    from harness.task_figures import difference, run_tasks

    select = tuple(slow or ())
    figures = [run_tasks(find_run(run, results), mode, select, late) for run in runs]
    differences = [difference(figures[0], other) for other in figures[1:]] if select else []
    if as_json:
        print(json.dumps({"runs": figures, "differences": differences}, indent=2))
        return
    table = Table("task", *(f"{f['run_id']} ({f['schedule']})" for f in figures), title=(
        f"{mode}: trained fraction / late reward (versions >= steps - {late}), mean [95% over repeats]"))
    rows = [(task, [f["tasks"].get(task) for f in figures]) for task in sorted({t for f in figures for t in f["tasks"]})]
    if select:
        rows.append((f"slow: {', '.join(select)}*", [f["selected"] for f in figures]))
    for label, cells in rows:
        table.add_row(label, *(_cell(c) for c in cells))
    console.print(table)
    for other, diff in zip(figures[1:], differences):
        parts = [f"{name.replace('_', ' ')} {_signed(d)}" for name, d in diff.items() if d is not None]
        console.print(f"{other['run_id']} less {figures[0]['run_id']} on the slow tasks: " + "; ".join(parts),
                      soft_wrap=True)  # one line, whatever the terminal's width


def _cell(figures: dict | None) -> str:
    if figures is None:
        return "-"
    return " / ".join(_spread(figures[name]) for name in ("trained_fraction", "late_reward"))


def _spread(i: dict) -> str:
    if i["mean"] is None:
        return "-"
    return f"{i['mean']:.2f}" + (f" [{i['low']:.2f}, {i['high']:.2f}]" if i["low"] is not None else "")


def _signed(d: dict) -> str:
    text = f"{d['mean']:+.2f}"
    if d["low"] is not None:
        text += f" [{d['low']:+.2f}, {d['high']:+.2f}]"
        if d["low"] <= 0 <= d["high"]:
            text += " (not significant)"
    return text
