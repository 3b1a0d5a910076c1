"""`harness metrics`: the metric catalogue (harness/catalogue.py) as a table."""

from __future__ import annotations

from rich.table import Table

from harness import catalogue
from harness.console import console


def metrics() -> None:
    """Every figure a run reports (harness/catalogue.py): where it is read, its unit and meaning."""
    table = Table("figure", "key", "unit", "interval", "shown in", "meaning")
    for m in catalogue.CATALOGUE:
        shown = [*sorted(m.views), *(["leaderboard"] if m.board else [])]
        where = {"mode": "per mode", "comparison": "comparison", "run": "run"}[m.scope]
        table.add_row(m.label, f"{m.key} ({where})", m.unit or "-", "95 %" if m.interval else "-",
                      ", ".join(shown) or "-", m.meaning)  # fmt: skip
    console.print(table)
