"""`harness`: the command line of heavygym."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from gyms.conformance import CheckResult, check_gym
from gyms.registry import GymLoadError, UnknownGymError, make, registered

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
gyms_app = typer.Typer(no_args_is_help=True, help="List and check the installed gyms.")
app.add_typer(gyms_app, name="gyms")
console = Console()
err = Console(stderr=True)

GymOptions = Annotated[
    Optional[list[str]],
    typer.Option("--gym-option", "-o", help="A gym option as KEY=VALUE (repeatable)."),
]


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    options = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--gym-option")
        options[key.strip()] = value
    return options


@gyms_app.command("list")
def gyms_list() -> None:
    """Show every installed gym: version, task count, and whether its tools are available."""
    table = Table("gym", "version", "tasks", "tools", "from")
    for name, entry in registered().items():
        try:
            gym = make(name)
            tools = gym.tools()
            missing = [t for t in tools if not t.available]
            status = (
                "[green]ok[/]"
                if not missing
                else "[red]missing:[/] " + "; ".join(f"{t.name} ({t.install_hint})" for t in missing)
            )
            table.add_row(name, gym.version, str(len(gym.tasks("train"))), status, entry.distribution)
        except Exception as exc:  # one broken plugin is shown, not fatal
            table.add_row(name, "?", "?", f"[red]broken:[/] {exc}", entry.distribution)
    console.print(table)


@gyms_app.command("check")
def gyms_check(
    name: str,
    limit: Annotated[Optional[int], typer.Option(help="Check only the first K tasks.")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Gym pool size (default: core count).")] = None,
    split: str = "train",
    gym_option: GymOptions = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Conformance check: references pass, bad answers fail, timeouts end as fails."""
    gym = make(name, **parse_options(gym_option))
    done = 0

    def progress(check: CheckResult) -> None:
        nonlocal done
        done += 1
        if not as_json and (not check.ok or done % 25 == 0):
            mark = "[green]ok[/]" if check.ok else f"[red]VIOLATION[/] {check.problem}"
            console.print(f"  {done:5d}  {check.task_id} / {check.label}: {mark}")

    report = check_gym(gym, limit=limit, split=split, workers=workers, on_check=progress)
    if as_json:
        print(json.dumps({**asdict(report), "ok": report.ok}, indent=2))
    else:
        for note in report.notes:
            console.print(f"[yellow]note:[/] {note}")
        verdict = "[green]PASS[/]" if report.ok else "[red]FAIL[/]"
        console.print(
            f"{verdict} gym {gym.name} {gym.version}: {report.tasks} tasks, {len(report.checks)} checks, "
            f"{len(report.violations)} violations"
        )
        for v in report.violations:
            console.print(f"  [red]{v.task_id} / {v.label}[/] (expected {v.expect}): {v.problem}")
    raise typer.Exit(0 if report.ok else 1)


def main() -> None:
    try:
        app()
    except (GymLoadError, UnknownGymError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
