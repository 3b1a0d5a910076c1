"""`harness leaderboard`: every clean-tree run in one table (harness/leaderboard.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.console import console, err
from harness.options import Results
from harness.outputs import RESULTS


def leaderboard(
    results: Results = RESULTS,
    include_dirty: Annotated[
        bool, typer.Option(help="Also publish runs from a dirty tree (left out by default: their commit does "
                           "not name their code).")
    ] = False,
    readme: Annotated[
        Optional[Path], typer.Option(help="Also write the main table into this file (README.md), between its "
                                     "leaderboard markers.", dir_okay=False)
    ] = None,
) -> None:
    """Collect every run under RESULTS/runs/ into leaderboard.md, leaderboard.csv and index.html."""
    from harness.leaderboard import publish

    published = publish(results, include_dirty, readme)
    for warning in published.warnings:
        err.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    console.print(f"{len(published.rows)} rows; written: {', '.join(map(str, published.paths))}")
