"""`harness gyms list | check | step | card`: the installed gyms, one at a time."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from gyms.base import Gym
from gyms.conformance import CheckResult, check_gym
from gyms.registry import load_class, make, registered
from harness import gymstep, outputs
from harness.console import console, err
from harness.errors import start_gym
from harness.options import (
    GymArgument,
    GymOptions,
    GymWorkers,
    Json,
    Limit,
    Results,
    SandboxBackend,
    Split,
    WrappedHelp,
    parse_options,
)
from harness.outputs import RESULTS

gyms_app = typer.Typer(no_args_is_help=True, cls=WrappedHelp, rich_markup_mode=None,
                       help="List, check and step the installed gyms, and measure their cost cards.")


@gyms_app.command("list")
def gyms_list(
    only: Annotated[
        Optional[str], typer.Argument(metavar="[NAME]", help="Only this gym, made with the -o options.")
    ] = None,
    gym_option: GymOptions = None,
    tasks: Annotated[bool, typer.Option("--tasks", help="Print NAME's task ids instead, one a line (the ids "
                                        "that harness gyms step --task and an OpenEnv reset's task_id take).")] = False,
    split: Annotated[str, typer.Option(help="The split whose task ids --tasks lists.")] = "train",
) -> None:
    """Show every installed gym: version, task count, and whether its tools are available; then the
    tasks a gym excluded (a benchmark's tasks whose own files fail), with why. With --tasks: NAME's
    task ids."""
    if gym_option and only is None:
        raise typer.BadParameter("gym options need a gym: harness gyms list NAME -o KEY=VALUE", param_hint="NAME")
    if split != "train" and not tasks:
        raise typer.BadParameter("--split chooses the tasks --tasks lists: harness gyms list NAME --tasks --split "
                                 f"{split}", param_hint="--split")  # fmt: skip
    if tasks:
        if only is None:
            raise typer.BadParameter("--tasks lists one gym's tasks: harness gyms list NAME --tasks", param_hint="NAME")
        for task in start_gym(only, parse_options(gym_option), split).tasks(split):
            print(task.id)  # plain, for a script's `| grep`, with no markup to escape
        return
    entries = registered()
    table = Table("gym", "version", "tasks", "tools", "from")
    excluded: list[str] = []
    for name in [only] if only else entries:
        source = entries[name].distribution if name in entries else "-"  # "-": a module:Class name
        try:
            given = parse_options(gym_option)
            needed = [either for o in load_class(name).required_options if not set(either := o.split("|")) & set(given)]
            if needed:  # a gym of someone else's data or server: nothing to show without it
                ask = "; ".join(" or ".join(f"-o {o}=..." for o in either) for either in needed)
                table.add_row(name, "-", "-", f"[yellow]needs[/] {escape(ask)}", source)
                continue
            gym = make(name, **given)
            tools = gym.tools()
            missing = [t for t in tools if not t.available]
            status = (
                "[green]ok[/]"
                if not missing
                else "[red]missing:[/] " + "; ".join(f"{t.name} ({t.install_hint})" for t in missing)
            )
            table.add_row(name, gym.version, str(len(gym.tasks("train"))), status, source)
            excluded += _excluded_lines(gym)
        except Exception as exc:  # one broken plugin is shown, not fatal
            table.add_row(name, "?", "?", f"[red]broken:[/] {escape(str(exc))}", source)
    console.print(table)
    for line in excluded:
        console.print(line, soft_wrap=True)  # a tool's message, unwrapped


def _excluded_lines(gym: Gym) -> list[str]:
    """One line per task the gym left out of its tasks, with why (a tool's message, indented)."""
    return [f"[yellow]excluded:[/] {gym.name} {escape(task_id)}: " + escape(reason).replace("\n", "\n    ")
            for task_id, reason in gym.excluded_tasks().items()]  # fmt: skip


@gyms_app.command("check")
def gyms_check(
    name: GymArgument,
    limit: Limit = None,
    gym_workers: GymWorkers = None,
    split: Split = "train",
    gym_option: GymOptions = None,
    sandbox: SandboxBackend = None,
    as_json: Json = False,
) -> None:
    """Conformance check: references pass, bad answers fail, timeouts end as fails."""
    gym = start_gym(name, parse_options(gym_option), split, sandbox)
    if not as_json:
        for line in _excluded_lines(gym):
            console.print(line, soft_wrap=True)
    done = 0

    def progress(check: CheckResult) -> None:
        nonlocal done
        done += 1
        if not as_json and (check.status != "ok" or done % 25 == 0):
            mark = {"ok": "[green]ok[/]", "not applicable": "[yellow]not applicable[/]"}.get(check.status, "[red]VIOLATION[/]")
            why = escape(check.problem or check.not_applicable or "")
            console.print(f"  {done:5d}  {check.task_id} / {check.label}: {mark} {why}".rstrip())

    report = check_gym(gym, limit=limit, split=split, workers=gym_workers, on_check=progress)
    if as_json:
        counts = {"violations": len(report.violations), "not_applicable": len(report.not_applicable)}
        print(json.dumps({**asdict(report), "ok": report.ok, **counts, "excluded": dict(gym.excluded_tasks())}, indent=2))
    else:
        for note in report.notes:
            console.print(f"[yellow]note:[/] {note}")
        verdict = "[green]PASS[/]" if report.ok else "[red]FAIL[/]"
        console.print(
            f"{verdict} gym {gym.name} {gym.version}: {report.tasks} tasks, {len(report.checks)} checks, "
            f"{len(report.violations)} violations, {len(report.not_applicable)} not applicable"
        )
        for v in report.violations:
            console.print(f"  [red]{v.task_id} / {v.label}[/] (expected {v.expect}): {escape(v.problem or '')}")
        for c in report.not_applicable:  # the candidate tested nothing: neither passed nor a violation
            console.print(f"  [yellow]not applicable:[/] {c.task_id} / {c.label}: {escape(c.not_applicable or '')}")
    raise typer.Exit(0 if report.ok else 1)


@gyms_app.command("step")
def gyms_step(
    name: GymArgument,
    task: Annotated[str, typer.Option("--task", help="The task's id.")],
    answer_file: Annotated[
        list[str], typer.Option("--answer-file", help="A file holding one answer, - for stdin (repeatable: one per turn).")
    ],
    split: Split = "train",
    gym_option: GymOptions = None,
    sandbox: SandboxBackend = None,
    as_json: Json = False,
) -> None:
    """Step one episode of TASK with each answer in turn, in a real pool worker (sandbox, limits and
    timeouts as in training), and show each step's outcome, reward, stage, feedback and info."""
    gym = start_gym(name, parse_options(gym_option), split, sandbox)
    turns, unstepped = gymstep.step_answers(gym, gymstep.find_task(gym, task, split), answer_file)
    if as_json:
        print(json.dumps({"gym": gym.name, "task": task, "steps": [asdict(t) for t in turns], "unstepped": unstepped},
                         indent=2, default=str))  # fmt: skip
        return
    for t in turns:
        colour = {"pass": "green", "fail": "yellow"}.get(t.outcome, "red")
        ended = " (terminated)" if t.terminated else " (truncated)" if t.truncated else ""
        console.print(f"[bold]turn {t.turn}[/] {escape(t.answer_file)}: [{colour}]{t.outcome}[/]{ended}, reward "
                      f"{t.reward:g}, stage {t.stage or '-'}, {t.service_s:.2f} s")  # fmt: skip
        console.print(escape(t.feedback), soft_wrap=True, highlight=False)
        for key, value in t.info.items():
            console.print(f"  {key}: {escape(str(value))}", soft_wrap=True, highlight=False)
    if unstepped:
        console.print(f"[yellow]note:[/] the episode ended at turn {turns[-1].turn}; not stepped: "
                      f"{escape(', '.join(unstepped))}")  # fmt: skip


@gyms_app.command("attack")
def gyms_attack(
    name: GymArgument,
    gym_option: GymOptions = None,
    sandbox: SandboxBackend = None,
    results: Annotated[Optional[Path], typer.Option(help="Write the figure to RESULTS/attacks/ for the leaderboard "
                                                    "(harness leaderboard shows it, with the commit).")] = None,
    as_json: Json = False,
) -> None:
    """Run the gym's declared attack suites (reward hacks that must fail) through a real gym pool and
    report attacks tried, escapes, errors and defects; exit 1 if any attack was not contained.

    Example: harness gyms attack math
    """
    from gyms.attacks import run_gym
    from harness import hackability
    from harness.record import git_commit

    options = parse_options(gym_option)
    gym = start_gym(name, options, sandbox=sandbox)
    suites = list(gym.attack_suites())
    if not suites:
        raise ValueError(f"gym {gym.name} declares no attack suites (Gym.attack_suites): docs/writing-a-gym.md "
                         "says how to add them")  # fmt: skip
    say = None if as_json else lambda suite: err.print(f"suite {suite.name}: {len(suite.attacks)} attacks on "
                                                       f"{suite.task.id}", highlight=False)  # fmt: skip
    figure = hackability.of(gym.name, options, git_commit(), run_gym(gym, suites, say))
    written = hackability.save(results, figure) if results is not None else None
    if as_json:
        print(json.dumps({**asdict(figure), "written": str(written) if written else None}, indent=2, sort_keys=True))
    else:
        for suite in figure.suites:
            for finding in suite["findings"]:
                console.print(f"  [red]{finding['verdict']}[/] {escape(suite['suite'])} / {escape(finding['label'])}: "
                              f"{escape(finding['detail'])}", soft_wrap=True)  # fmt: skip
            for broken in suite["controls_broken"]:
                console.print(f"  [red]control[/] {escape(suite['suite'])}: {escape(broken)}", soft_wrap=True)
        console.print(f"{'[green]HELD[/]' if figure.held else '[red]BROKEN[/]'} {escape(figure.line())}")
        if written is not None:
            console.print(f"written: {written}")
    raise typer.Exit(0 if figure.held else 1)


@gyms_app.command("profile")
def gyms_profile(
    name: GymArgument,
    limit: Limit = None,
    gym_workers: GymWorkers = None,
    out: Annotated[Optional[Path], typer.Option(help="Card path (default: RESULTS/cards/NAME.json, or "
                                                "RESULTS/cards/NAME-KEY=VALUE.json with gym options).")] = None,
    results: Results = RESULTS,
    gym_option: GymOptions = None,
    sandbox: SandboxBackend = None,
) -> None:
    """Measure a gym's cost card: every replay candidate once through a gym pool, weighted to the
    replay policy's action mix. `harness plan` and `harness simulate` read RESULTS/cards/NAME.json."""
    from harness import costcard, gymcost

    options = parse_options(gym_option)
    gym = start_gym(name, options, sandbox=sandbox)
    path = out or costcard.profile_path(results, gym.name, options)
    fix = "pass --out FILE in a writable directory" if out else "pass --results DIR, a writable directory"
    outputs.check_writable(path.parent, outputs.MB, fix)  # before the measuring, not after it
    card = gymcost.measure(gym, limit=limit, workers=gym_workers,
                           say=lambda line: err.print(line, soft_wrap=True, highlight=False, markup=False))  # fmt: skip
    card = replace(card, gym_options=options)  # a card answers only for the gym with these options
    costcard.save(card, path)
    for line in costcard.describe(card):
        console.print(line)
    console.print(f"written: {path}")
