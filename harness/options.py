"""The command line's options, defined once: each has one name, one bound and one help text in
every command that takes it (harness/commands/). Defaults live where the code that uses them
does (`outputs.RESULTS`, `profiles.DEFAULT_PROFILE`); the commands name them, never a copy."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from trainer.rules.placement import PLACEMENTS
from trainer.rules.schedule import SCHEDULES


class WrappedHelp(TyperGroup):
    """A command group whose help lists each command with its whole first paragraph, wrapped to
    the terminal (click's own list cuts it to one line with '...')."""

    def format_commands(self, ctx: typer.Context, formatter: typer._click.formatting.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


GymName = Annotated[str, typer.Option(help="Gym name (harness gyms list) or module:Class.")]
GymArgument = Annotated[str, typer.Argument(help="Gym name (harness gyms list) or module:Class.")]
GymOptions = Annotated[
    Optional[list[str]], typer.Option("--gym-option", "-o", help="A gym option as KEY=VALUE (repeatable).")
]
GymWorkers = Annotated[Optional[int], typer.Option(min=1, help="Gym pool size (default: core count).")]
Split = Annotated[str, typer.Option(help="The gym's task split.")]
SandboxBackend = Annotated[Optional[str], typer.Option(
    "--sandbox", help="Where the gym runs candidates: bwrap (the default where it runs), docker (a warm container "
    "of the gym's toolchain image per gym worker: `harness images build GYM` first; docs/sandbox.md) or process "
    "(rlimits only).")]  # fmt: skip
Limit = Annotated[Optional[int], typer.Option(min=1, help="Only the first K tasks.")]

Batch = Annotated[int, typer.Option(min=1, help="Prompts (groups) per optimizer step.")]
Group = Annotated[int, typer.Option(min=1, help="Samples per prompt (GRPO group size).")]
MaxStaleness = Annotated[int, typer.Option(min=0, help="Async: how many policy versions a sample may lag.")]
Oversample = Annotated[int, typer.Option(min=0, help="Groups in flight beyond what the steps need: a step trains "
                                         "on the first --batch groups to complete; the rest train later if fresh "
                                         "enough, else are dropped.")]  # fmt: skip
Schedule = Annotated[str, typer.Option(help="fifo (the default: tasks in order, groups trained as they complete) or "
                                       "cost-aware (deadline batching, a deadline-first gym queue, predicted-slow "
                                       "tasks first; the same staleness bound): docs/architecture.md, the scheduler.")]
Mode = Annotated[str, typer.Option(help="both, sync or async.")]
Seed = Annotated[int, typer.Option(help="Seed of every random choice the command makes (task order, sampled "
                                   "answers, initial weights, simulated draws): the same seed repeats a run.")]
Profile = Annotated[str, typer.Option(help="Hardware profile of the emulated stages: a name or a JSON file.")]
Placement = Annotated[Optional[str], typer.Option(help="Where the accelerator stages run, the same in benchmark, "
                                                  "simulate and plan: colocated (the default: one accelerator pool "
                                                  "takes generation and training in turn) or disaggregated (rollout "
                                                  "and training accelerators of their own).")]  # fmt: skip
Results = Annotated[Path, typer.Option(help="The results root: runs/, cards/ and the leaderboard.")]
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
IdleKind = Annotated[Optional[str], typer.Option(
    help="Which idle ratio --target-idle bounds: accelerator (the share of accelerator time spent neither "
    "generating nor training; the default under colocated placement) or trainer (the trainer's wait for a "
    "batch over its step time, \"GPU idle\"; the default under disaggregated placement).")]  # fmt: skip
Replicates = Annotated[int, typer.Option(min=1, help="Simulations of the recommendation, each with its own seed "
                                         "and bootstrap of the card's step times: the interval's.")]  # fmt: skip

MODES = {"both": ("sync", "async"), "sync": ("sync",), "async": ("async",)}


def modes_of(mode: str) -> tuple[str, ...]:
    """--mode as the modes to run."""
    if mode not in MODES:
        raise typer.BadParameter(f"{mode!r}: use both, sync or async", param_hint="--mode")
    return MODES[mode]


def placement_of(placement: str | None) -> str | None:
    """--placement, checked; None leaves it to the policy."""
    if placement is not None and placement not in PLACEMENTS:
        raise typer.BadParameter(f"{placement!r}: use {' or '.join(PLACEMENTS)}", param_hint="--placement")
    return placement


def idle_kind_of(idle: str | None) -> str | None:
    """--idle, checked; None leaves it to the placement."""
    if idle is not None and idle not in ("accelerator", "trainer"):
        raise typer.BadParameter(f"{idle!r}: use accelerator or trainer", param_hint="--idle")
    return idle


def existing_results(results: Path) -> Path:
    """--results, which must exist unless it is the default (a fresh machine has no results-local/
    yet: its lookups fall back to the published results/)."""
    from harness.outputs import RESULTS

    if results != RESULTS and not results.is_dir():
        raise typer.BadParameter(f"{results}: no such directory", param_hint="--results")
    return results


def schedule_of(schedule: str) -> str:
    """--schedule, checked."""
    if schedule not in SCHEDULES:
        raise typer.BadParameter(f"{schedule!r}: use {' or '.join(SCHEDULES)}", param_hint="--schedule")
    return schedule


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    """-o KEY=VALUE pairs as a dict (the gym's constructor checks the keys and values)."""
    options = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--gym-option")
        options[key.strip()] = value
    return options
