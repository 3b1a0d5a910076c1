"""`harness report`: one run's report.html and figures (harness/report.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.console import console
from harness.options import Results
from harness.outputs import RESULTS


def report(
    run: Annotated[str, typer.Argument(help="A run id under RESULTS/runs/, or a run directory.")],
    results: Results = RESULTS,
) -> None:
    """Write a run's report.html and PNG figures (timeline, step time, waits, buffer, staleness, reward, gym)."""
    from harness.report import write_report
    from harness.rundir import find_run

    console.print(f"written: {write_report(find_run(run, results))}")
