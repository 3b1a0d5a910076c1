"""`harness`: the command line of heavygym."""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gyms.base import Gym
from gyms.conformance import CheckResult, check_gym
from gyms.registry import load_class, make, registered
from harness import catalogue, errors, gpu_usage, gymstep, outputs
from harness import serve as serving
from harness.errors import BenchmarkInterrupted, start_gym
from harness.intervals import with_interval
from trainer.attribution import PARTS as WAIT_PARTS
from trainer.policies.replay import PLACEMENTS as PLACEMENT_WORDS

if TYPE_CHECKING:
    from trainer.pipeline import StepRecord

# Commands import what only they need (torch, matplotlib) when they run, so that every command
# starts quickly, and so do the gym pool's workers, which import this module again (spawn).

app = typer.Typer(
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
    epilog="Exit codes: 0 done; 1 a check failed; 2 an error (one line on stderr names the file or value and "
    "the fix); 130 interrupted (Ctrl-C).",
)  # fmt: skip
gyms_app = typer.Typer(no_args_is_help=True, help="List, check and profile the installed gyms.")
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
def gyms_list(
    only: Annotated[
        Optional[str], typer.Argument(metavar="[NAME]", help="Only this gym, made with the -o options.")
    ] = None,
    gym_option: GymOptions = None,
) -> None:
    """Show every installed gym: version, task count, and whether its tools are available; then the
    tasks a gym excluded (a benchmark's tasks whose own files fail), with why."""
    if gym_option and only is None:
        raise typer.BadParameter("gym options need a gym: harness gyms list NAME -o KEY=VALUE", param_hint="NAME")
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
    name: str,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Check only the first K tasks.")] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="Gym pool size (default: core count).")] = None,
    split: str = "train",
    gym_option: GymOptions = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Conformance check: references pass, bad answers fail, timeouts end as fails."""
    gym = start_gym(name, parse_options(gym_option), split)
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

    report = check_gym(gym, limit=limit, split=split, workers=workers, on_check=progress)
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
    name: str,
    task: Annotated[str, typer.Option("--task", help="The task's id.")],
    answer_file: Annotated[
        list[str], typer.Option("--answer-file", help="A file holding one answer, - for stdin (repeatable: one per turn).")
    ],
    split: str = "train",
    gym_option: GymOptions = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the steps as JSON.")] = False,
) -> None:
    """Step one episode of TASK with each answer in turn, in a real pool worker (sandbox, limits and
    timeouts as in training), and show each step's outcome, reward, stage, feedback and info."""
    gym = start_gym(name, parse_options(gym_option), split)
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


def _benchmark_table(summary: dict) -> Table:
    """The catalogue's console figures per mode, with the improvement of the second over the first."""
    modes = summary["modes"]
    table = Table("metric", *modes, *(["improvement"] if len(modes) == 2 else []))
    for metric in catalogue.shown_in(catalogue.CONSOLE):
        if metric.colocated_only and summary.get("placement") != "colocated":
            continue
        values = [metric.value(summary, mode) for mode in modes]
        label = f"{metric.label} (s)" if metric.unit == "s" else metric.label
        cells = [metric.shown(summary, mode, unit=False) for mode in modes]
        table.add_row(label, *cells, *_improvement(metric, values))
        if metric.key == "train_wait_mean" and all(m.get("wait_split") for m in modes.values()):
            for part in WAIT_PARTS:  # what the trainer waited on (trainer/attribution.py)
                cells = []
                for m in modes.values():
                    total = m["train_wait_mean"]
                    share = f" ({m['wait_split'][part] / total:.0%})" if total > 0 else ""
                    cells.append(f"{m['wait_split'][part]:.2f}{share}")
                table.add_row(f"  wait: {part} (s)", *cells, *(["-"] if len(modes) == 2 else []))
    return table


def _improvement(metric: catalogue.Metric, values: list) -> list[str]:
    """The improvement cell of two modes' values: none for one mode, '-' where the figure has no better side."""
    if len(values) != 2:
        return []
    a, b = values
    if a is None or b is None or metric.better is None:
        return ["-"]
    if metric.better == "lower":
        return ["to ~0"] if b <= 0.01 * a else [f"{a / b:.2f}x lower"]  # a ratio against almost nothing says nothing
    return [f"{b / a:.2f}x higher"] if a > 0 else ["-"]


@gyms_app.command("profile")
def gyms_profile(
    name: str,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Profile only the first K tasks.")] = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="Gym pool size (default: core count).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Card path (default: RESULTS/cards/NAME.json).")] = None,
    results: Annotated[Path, typer.Option(help="The results root (for the default --out).")] = Path("results"),
    gym_option: GymOptions = None,
) -> None:
    """Measure a gym's cost card: every replay candidate once through a gym pool, weighted to the
    replay policy's action mix. `harness plan` and `harness simulate` read RESULTS/cards/NAME.json."""
    from harness import costcard, gymprofile

    gym = start_gym(name, parse_options(gym_option))
    path = out or results / costcard.CARDS / f"{gym.name}.json"
    outputs.check_writable(path.parent, outputs.MB)  # before the measuring, not after it
    card = gymprofile.measure(gym, limit=limit, workers=workers)
    costcard.save(card, path)
    for line in costcard.describe(card):
        console.print(line)
    console.print(f"written: {path}")


def _nodes_table(summary: dict) -> Table:
    """Gym utilisation per node, so a user sees where to add capacity."""
    modes = summary["modes"]
    table = Table(f"gym node ({summary['spec'].get('executor', 'local')})", *(f"{m} utilisation" for m in modes))
    nodes = sorted({node for m in modes.values() for node in m["gym_utilisation_by_node"]})
    for node in nodes:
        cells = []
        for m in modes.values():
            n = m["gym_utilisation_by_node"].get(node)
            cells.append(f"{n['utilisation']:.1%} of {n['workers']:.1f} workers" if n else "-")
        table.add_row(node, *cells)
    return table


@app.command()
def benchmark(
    gym: Annotated[str, typer.Option(help="Gym name (harness gyms list) or module:Class.")] = "verilog",
    mode: Annotated[str, typer.Option(help="both, sync or async.")] = "both",
    steps: Annotated[int, typer.Option(min=2, help="Optimizer steps per mode; the first is warm-up.")] = 10,
    policy: Annotated[str, typer.Option(help="replay, tiny[:KEY=VALUE,...], hf:PATH[@DEVICE][:KEY=VALUE,...] or "
                                        "vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]][:KEY=VALUE,...]; learner options such "
                                        "as minibatches=4,epochs=1: docs/architecture.md, the loss; engine options: "
                                        "docs/engines.md.")] = "replay",
    profile: Annotated[str, typer.Option(help="Hardware profile for replay: a name or a JSON file.")] = "h100-qwen3-4b",
    gym_workers: Annotated[Optional[int], typer.Option(min=1, help="Gym pool size (default: core count).")] = None,
    batch: Annotated[int, typer.Option(min=1, help="Prompts (groups) per optimizer step.")] = 4,
    group: Annotated[int, typer.Option(min=1, help="Samples per prompt (GRPO group size).")] = 4,
    max_staleness: Annotated[int, typer.Option(min=0, help="Async: how many versions a sample may lag.")] = 1,
    oversample: Annotated[
        int, typer.Option(min=0, help="Groups in flight beyond what the steps need: a step trains on the first "
                          "--batch groups to complete; the rest train later if fresh enough, else are dropped.")
    ] = 0,
    seed: int = 0,
    gym_option: GymOptions = None,
    executor: Annotated[str, typer.Option(help="Where gym workers run: local, or ray (docs/ray.md).")] = "local",
    ray_address: Annotated[
        Optional[str], typer.Option(help="With --executor ray: a cluster's HOST:PORT (default: start Ray here).")
    ] = None,
    placement: Annotated[
        Optional[str],
        typer.Option(help="Replay: colocated (default; one accelerator pool time-shares generation and "
                     "training) or disaggregated (rollout and training accelerators of their own)."),
    ] = None,
    repeats: Annotated[
        int, typer.Option(min=1, help="Run the modes this many times, in ABBA order; report means and 95% intervals.")
    ] = 1,
    control: Annotated[
        bool, typer.Option(help="Also run the same configuration with an instant gym (harness/control.py).")
    ] = False,
    results: Annotated[Path, typer.Option(help="Where results/runs/<run-id>/ is written.")] = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Run GRPO sync and async on the same tasks, seed and budget; report idle ratio and speedup."""
    modes = {"both": ("sync", "async"), "sync": ("sync",), "async": ("async",)}.get(mode)
    if modes is None:
        raise typer.BadParameter("use both, sync or async", param_hint="--mode")
    if placement is not None and placement not in PLACEMENT_WORDS:
        raise typer.BadParameter("use colocated or disaggregated", param_hint="--placement")
    from harness.benchmark import BenchmarkSpec, run_benchmark
    from harness.report import write_report

    spec = BenchmarkSpec(
        gym=gym, gym_options=parse_options(gym_option), modes=modes, steps=steps, policy=policy,
        profile=profile, gym_workers=gym_workers, batch_groups=batch, group_size=group,
        max_staleness=max_staleness, oversample=oversample, seed=seed, executor=executor, ray_address=ray_address,
        placement=placement, repeats=repeats, control=control,
    )  # fmt: skip

    def progress(mode_name: str, s: StepRecord) -> None:
        if not as_json:
            console.print(
                f"  {mode_name:5s} step {s.step + 1:3d}/{steps}  step_time {s.step_time:6.2f} s  "
                f"train_wait {s.train_wait:6.2f} s  reward {s.reward_mean:.3f}"
            )

    if not as_json:
        extra = (f", over-sampling {oversample} groups" if oversample else "") + (
            f", {repeats} repeats (ABBA)" if repeats > 1 else "") + (", with the instant-gym control" if control else "")
        console.print(f"[bold]benchmark[/] gym {gym}, policy {policy}, modes {', '.join(modes)}, {steps} steps{extra}")
    summary, run_dir = run_benchmark(spec, results, on_step=progress)
    write_report(run_dir)  # report.html and figures/ beside the run record
    if as_json:
        print(json.dumps(summary, indent=2, sort_keys=True))
        return
    stages = f"emulated: {summary['profile']['name']}, {summary['placement']}" if summary["emulated"] else "measured"
    console.print(f"\n[bold]{summary['gym']}[/] · policy {summary['policy']['policy']} ({stages})")
    console.print(_benchmark_table(summary))
    console.print(_nodes_table(summary))
    for block, name in ((summary, "speedup"), (summary.get("control"), "control speedup")):
        if block and "comparison" in block:
            console.print(_comparison_line(block, name))
    console.print(escape(gpu_usage.idle_line(summary["modes"])))  # the GPU's own account of the idle
    for name, m in summary["modes"].items():
        if m.get("weight_sync"):  # an engine that swaps weights in place (vllm)
            console.print(f"{name}: {_weight_sync_line(m['weight_sync'])}")
    for name, m in summary["modes"].items():
        acc = m["accounting"]
        console.print(
            f"{name}: {m['oscillation']}. Trajectories: generated {acc['generated']} = trained {acc['trained']}"
            f" + dropped stale {acc['dropped_stale']} + errored {acc['errored']} + in flight {acc['in_flight']}"
        )
        if summary.get("bias", {}).get(name):
            console.print(f"{name}: {_bias_line(summary['bias'][name])}")
    raised = summary.get("gym_pool", {}).get("gym_exceptions", 0)
    if raised:
        console.print(f"[yellow]warning:[/] the gym raised on {raised} answer(s); they count as fails, but each is a "
                      "bug in the gym: look for info['gym_exception'] (harness gyms step shows one answer's)")  # fmt: skip
    if summary["emulated"]:
        console.print(f"[yellow]generation, training and weight sync are emulated[/] with profile "
                      f"{summary['profile']['name']}: {summary['profile']['description']}; placement "
                      f"{summary['placement']}: {PLACEMENT_WORDS.get(summary['placement'], '')}")  # fmt: skip
    console.print(f"written: {run_dir}")


def _weight_sync_line(w: dict) -> str:
    return (
        f"weight sync {w['per_step_s'] * 1e3:.1f} ms per step ({w['share_of_step']:.1%} of it), load "
        f"{w['weight_load_s_mean'] * 1e3:.1f} ms, drain before it mean {w['drain_s_mean'] * 1e3:.1f} ms, max "
        f"{w['drain_s_max'] * 1e3:.1f} ms over {w['updates']} updates (docs/engines.md)"
    )


def _bias_line(b: dict) -> str:
    """The slow-sample bias audit in one line (trainer/bias.py), pooled over the repeats."""
    if not b["quartiles"]:
        return "slow-sample bias: too few trajectories trained or dropped to form latency quartiles"
    accepted = ", ".join(f"{q['acceptance']:.0%}" for q in b["quartiles"])
    ratio = "-" if b["slow_fast_acceptance"] is None else f"{b['slow_fast_acceptance']:.2f}"

    def reward(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    return (f"slow-sample bias {ratio} (acceptance slowest / fastest gym-latency quartile; by quartile {accepted}); "
            f"mean reward trained {reward(b['reward_trained'])}, dropped {reward(b['reward_dropped'])}; "
            f"gym time on dropped trajectories {b['gym_s_dropped_share']:.1%}")  # fmt: skip


def _comparison_line(block: dict, name: str) -> str:
    """'speedup 1.62x [1.55, 1.69] (ideal ...)': means over repeats, with 95% intervals when there are some."""
    c, iv = block["comparison"], block.get("intervals", {})

    def fig(key: str, fmt: str, suffix: str = "") -> str:
        return with_interval(c[key], iv.get(key), lambda v: f"{format(v, fmt)}{suffix}")

    repeats = len(block.get("repeats", [])) or 1
    over = f" (mean of {repeats} repeats, 95% intervals)" if repeats > 1 else ""
    return (
        f"{name} [bold]{fig('speedup', '.2f', 'x')}[/] (ideal {c['ideal_speedup']:.2f}x, achieved/ideal "
        f"{fig('achieved_over_ideal', '.0%')}); trainer idle ratio {fig('trainer_idle_ratio_sync', '.1%')} -> "
        f"{fig('trainer_idle_ratio_async', '.1%')}{over}"
    )


@app.command()
def report(
    run: Annotated[str, typer.Argument(help="A run id under RESULTS/runs/, or a run directory.")],
    results: Annotated[Path, typer.Option(help="The results root that holds runs/.")] = Path("results"),
) -> None:
    """Write a run's report.html and PNG figures (timeline, step time, waits, buffer, staleness, reward, gym)."""
    from harness.report import write_report
    from harness.rundir import find_run

    console.print(f"written: {write_report(find_run(run, results))}")


@app.command()
def leaderboard(
    results: Annotated[Path, typer.Option(help="The results root that holds runs/.")] = Path("results"),
    include_dirty: Annotated[
        bool, typer.Option(help="Also publish runs from a dirty tree (left out by default: their commit does "
                           "not name their code).")
    ] = False,
) -> None:
    """Collect every run under RESULTS/runs/ into leaderboard.md, leaderboard.csv and index.html."""
    from harness.leaderboard import publish

    published = publish(results, include_dirty)
    for warning in published.warnings:
        err.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    console.print(f"{len(published.rows)} rows; written: {', '.join(map(str, published.paths))}")


@app.command()
def metrics() -> None:
    """Every figure a run reports (harness/catalogue.py): where it is read, its unit and meaning."""
    table = Table("figure", "key", "unit", "interval", "shown in", "meaning")
    for m in catalogue.CATALOGUE:
        shown = [*sorted(m.views), *(["leaderboard"] if m.board else [])]
        where = {"mode": "per mode", "comparison": "comparison", "run": "run"}[m.scope]
        table.add_row(m.label, f"{m.key} ({where})", m.unit or "-", "95 %" if m.interval else "-",
                      ", ".join(shown) or "-", m.meaning)  # fmt: skip
    console.print(table)


@app.command()
def calibrate(
    policy: Annotated[str, typer.Option(help="tiny, hf:PATH[@DEVICE] (cuda, npu, cpu) or "
                                        "vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]], with options as in benchmark.")] = "tiny",
    name: Annotated[str, typer.Option(help="The profile's name.")] = "calibrated",
    out: Annotated[Path, typer.Option(help="Where the profile JSON is written.")] = Path("profile.json"),
    steps: Annotated[int, typer.Option(min=1, help="Measured steps (after one warm-up step).")] = 3,
    batch: Annotated[int, typer.Option(min=1)] = 4,
    group: Annotated[int, typer.Option(min=1)] = 4,
    gym: Annotated[Optional[str], typer.Option(help="Prompt with this gym's tasks (their real lengths); "
                                               "default: synthetic prompts of --prompt-chars.")] = None,
    gym_option: GymOptions = None,
    prompt_chars: Annotated[int, typer.Option(min=1, help="Length of the synthetic prompts.")] = 64,
    response_tokens: Annotated[Optional[int], typer.Option(
        min=1, help="Tokens per response (max_new_tokens); the vllm engine then generates exactly this many "
        "(ignore_eos). Default: the policy's max_new_tokens.")] = None,
) -> None:
    """Time a real policy's generation, training and weight sync; write a hardware profile."""
    from trainer.calibrate import calibrate as measure
    from trainer.calibrate import synthetic_prompts
    from trainer.policies import make_policy
    from trainer.policies.profiles import ZERO
    from trainer.policies.torch_lm import TorchPolicy

    if policy.startswith("vllm:"):  # a fixed length: the engine's throughput at a known response length
        overrides: dict[str, object] = {"ignore_eos": True}
    else:
        overrides = {}
    if response_tokens is not None:
        overrides["max_new_tokens"] = response_tokens
    if gym is not None:
        prompts = [t.prompt for t in start_gym(gym, parse_options(gym_option)).tasks()]
        source = f"the {gym} gym's {len(prompts)} task prompts"
    else:
        prompts, source = synthetic_prompts(batch, prompt_chars), f"synthetic, {prompt_chars} characters"
    outputs.check_writable(out.parent, outputs.MB)
    model = make_policy(policy, None, ZERO, overrides=overrides)  # type: ignore[arg-type]  (no gym: prompts only)
    if not isinstance(model, TorchPolicy):
        raise typer.BadParameter("calibrate a real model: tiny, hf:PATH or vllm:PATH", param_hint="--policy")
    console.print(f"calibrating {policy}: {steps} steps of {batch} x {group} samples, prompts {source}")
    profile = measure(model, name, prompts, steps=steps, batch=batch, group=group, prompt_source=source)
    with outputs.naming(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        profile.save(out)
    console.print(
        f"generate {profile.generate_s_per_token * 1e3:.3f} ms/token ({1 / profile.generate_s_per_token:.0f} tokens/s, "
        f"{profile.response_tokens} tokens per response), actor_train {profile.train_s_per_token * 1e3:.3f} ms/token, "
        f"update_weights {profile.update_weights_s:.3f} s"
    )
    console.print(f"written: {out} (use it with harness benchmark --profile {out})")


@app.command()
def simulate(
    replay: Annotated[Optional[str], typer.Option(help="Re-simulate this run (id or directory) from its own "
                                                    "measurements; prints predicted vs measured.")] = None,
    gym: Annotated[Optional[str], typer.Option(help="Gym whose cost card to use (found as harness plan finds it).")] = None,
    card: Annotated[Optional[Path], typer.Option(help="A cost card JSON (harness gyms profile).")] = None,
    profile: Annotated[str, typer.Option(help="Hardware profile: a name or a JSON file.")] = "h100-qwen3-4b",
    mode: Annotated[str, typer.Option(help="both, sync or async.")] = "both",
    steps: Annotated[Optional[int], typer.Option(help="Optimizer steps; the first is warm-up (default 10).")] = None,
    duration_s: Annotated[Optional[float], typer.Option(help="Simulated seconds to run instead of --steps.")] = None,
    batch: Annotated[int, typer.Option(help="Prompts (groups) per optimizer step.")] = 4,
    group: Annotated[int, typer.Option(help="Samples per prompt.")] = 4,
    max_staleness: Annotated[int, typer.Option(help="Async: how many versions a sample may lag.")] = 1,
    oversample: Annotated[int, typer.Option(help="Groups in flight beyond what the steps need (--replay takes "
                                            "the run's).")] = 0,
    gym_workers: Annotated[Optional[int], typer.Option(help="Gym workers in all (default: core count).")] = None,
    engines: Annotated[int, typer.Option(help="Rollout engines (one generation call each at a time).")] = 1,
    trainers: Annotated[int, typer.Option(help="Data-parallel trainer replicas.")] = 1,
    placement: Annotated[str, typer.Option(help="disaggregated (rollout and training accelerators of their own) "
                                           "or colocated (one pool takes generation and training in turn); "
                                           "--replay takes the run's.")] = "disaggregated",
    repeats: Annotated[int, typer.Option(help="--replay: simulations averaged (seeds SEED, SEED+1, ...).")] = 100,
    seed: int = 0,
    results: Annotated[Path, typer.Option(help="The results root that holds runs/ and cards/.")] = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    markdown: Annotated[bool, typer.Option(help="--replay: print the run's row of docs/simulate.md's table.")] = False,
) -> None:
    """Simulate the sync and async pipelines (discrete events, the trainer's rules) in seconds."""
    from gyms.pool import default_workers
    from harness import simulate as sim
    from harness.sim.pipeline import SimConfig

    if replay is not None:
        fidelity = sim.replay(replay, results, repeats, seed)
        if markdown:
            print(sim.MARKDOWN_HEADER, sim.fidelity_row(fidelity), sep="\n")
            return
        if as_json:
            print(json.dumps(fidelity.to_json(), indent=2))
            return
        console.print(f"[bold]{fidelity.gym}[/] run {fidelity.run_id}: predicted (mean ± sd of {repeats} "
                      "simulations from the run's own spans) vs measured")  # fmt: skip
        console.print(sim.fidelity_table(fidelity))
        console.print(sim.fidelity_line(fidelity))
        return
    modes = {"both": ("sync", "async"), "sync": ("sync",), "async": ("async",)}.get(mode)
    if modes is None:
        raise ValueError(f"--mode is both, sync or async, got {mode!r}")
    config = SimConfig(
        steps=steps if steps is not None else (10 if duration_s is None else 2**62), duration_s=duration_s,
        batch_groups=batch, group_size=group, max_staleness=max_staleness, oversample=oversample, engines=engines,
        trainers=trainers,
        gym_workers=gym_workers if gym_workers is not None else default_workers(), seed=seed, placement=placement,
    )  # fmt: skip
    summary = sim.simulate_gym(gym, card, profile, config, modes, results)
    if as_json:
        print(json.dumps(summary, indent=2, sort_keys=True))
        return
    console.print(f"[bold]{summary['gym']}[/] simulated: card {summary['card_from']}; stages {summary['stages']}, "
                  f"placement {config.placement}")  # fmt: skip
    console.print(sim.summary_table(summary))
    if "comparison" in summary:
        c = summary["comparison"]
        console.print(f"speedup [bold]{c['speedup']:.2f}x[/]; trainer idle ratio {c['trainer_idle_ratio_sync']:.1%}"
                      f" -> {c['trainer_idle_ratio_async']:.1%}")  # fmt: skip


@app.command()
def serve(
    gym: Annotated[str, typer.Argument(help="Gym name (harness gyms list) or module:Class.")],
    gym_option: GymOptions = None,
    host: Annotated[str, typer.Option(help="Address to listen on. Anything but loopback is reachable by others, "
                                      "with no authentication (docs/openenv.md).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: one the system picks; printed).")] = 8000,
    workers: Annotated[Optional[int], typer.Option(min=1, help="Gym pool size (default: core count).")] = None,
    max_sessions: Annotated[Optional[int], typer.Option(min=1, help="Concurrent sessions; one more is refused as "
                                                        "busy (default: 4 per gym worker).")] = None,
    idle_timeout: Annotated[float, typer.Option(min=1, help="Seconds a session may stay silent before it is "
                                                "closed.")] = serving.DEFAULT_IDLE_TIMEOUT_S,
    split: str = "train",
    seed: Annotated[int, typer.Option(help="Seed of the task order that plain resets follow.")] = 0,
    tasks_file: Annotated[Optional[Path], typer.Option(help="Also write the gym's tasks, with its known answers "
                                                       "(the answer key), as a tasks file for the openenv gym "
                                                       "(-o tasks=FILE), then serve.")] = None,
) -> None:
    """Serve a gym as an OpenEnv environment (HTTP and WebSocket reset/step/state), each step
    checked in the gym pool's sandboxes, until Ctrl-C."""
    serving.require_openenv()
    warning = serving.exposure_warning(host)
    if warning:
        err.print(f"[yellow]{escape(warning)}[/]", soft_wrap=True)
    chosen = start_gym(gym, parse_options(gym_option), split)
    if tasks_file is not None:
        from gyms.openenv.adapter import tasks_file_lines

        outputs.write_text(tasks_file, "\n".join(tasks_file_lines(chosen, split)) + "\n")
    serving.serve(chosen, host, port, workers, max_sessions, idle_timeout, split, seed,
                  say=lambda line: err.print(line, soft_wrap=True, highlight=False, markup=False))  # fmt: skip


@app.command("tiny-model")
def tiny_model(
    out: Annotated[Path, typer.Argument(help="The directory to write (a transformers model directory).")],
    hidden: Annotated[int, typer.Option(min=8, help="Hidden size.")] = 128,
    layers: Annotated[int, typer.Option(min=1)] = 2,
    seed: int = 0,
) -> None:
    """Build a tiny Qwen3-architecture model (random weights) and its tokenizer in code, for
    trying the hf and vllm policies without a download: --policy vllm:OUT."""
    from trainer.policies.tiny_hf import build

    outputs.check_writable(out, 16 * outputs.MB)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} exists and is not empty: name a new directory")
    build(out, hidden=hidden, layers=layers, seed=seed)
    console.print(f"written: {out} (use it with --policy vllm:{out} or --policy hf:{out})")


@app.command()
def plan(
    gym: Annotated[str, typer.Option(help="The gym to plan for.")],
    accelerators: Annotated[int, typer.Option(help="Accelerators per node (half generate, half train).")],
    cores_per_node: Annotated[int, typer.Option(help="CPU cores per node (gym workers are at most this).")],
    nodes: Annotated[int, typer.Option(help="Nodes.")] = 1,
    card: Annotated[Optional[Path], typer.Option(help="Cost card JSON. Default: RESULTS/cards/GYM.json "
                                                 "(harness gyms profile GYM), else the newest run of GYM under "
                                                 "RESULTS/runs/, else an error.")] = None,
    profile: Annotated[str, typer.Option(help="Hardware profile: a name or a JSON file.")] = "h100-qwen3-4b",
    batch: Annotated[Optional[int], typer.Option(help="Groups per step (default: 4 per rollout engine).")] = None,
    group: Annotated[int, typer.Option(help="Samples per prompt.")] = 4,
    target_idle: Annotated[float, typer.Option(help="Highest acceptable async trainer idle ratio.")] = 0.05,
    max_staleness_limit: Annotated[int, typer.Option(help="Largest max_staleness to consider.")] = 4,
    steps: Annotated[int, typer.Option(help="Simulated steps per candidate.")] = 40,
    seed: int = 0,
    results: Annotated[Path, typer.Option(help="The results root that holds runs/ and cards/.")] = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Recommend gym workers per node, max staleness and buffer depth, by simulation, with the
    predicted idle ratio and speedup and the sizing rule's answer beside it."""
    from harness import plan as planner
    from harness.costcard import find_card
    from harness.sim.stages import from_profile
    from trainer.policies.profiles import load_profile

    cluster = planner.Cluster(nodes, accelerators, cores_per_node)
    cost, where = find_card(gym, results, card)
    stages = from_profile(load_profile(profile))
    result = planner.plan(cost, stages, cluster, batch, group, target_idle, max_staleness_limit, steps, seed,
                          on_try=lambda line: err.print(f"  {line}", highlight=False, soft_wrap=True))  # fmt: skip
    if as_json:
        print(json.dumps(planner.to_json(result, where, stages.source), indent=2, sort_keys=True))
        return
    for line in planner.render(result, where, stages.source):
        console.print(line, soft_wrap=True, markup=False, style="yellow" if line.startswith("warning") else None)


def restore_ctrl_c() -> None:
    """Make Ctrl-C raise KeyboardInterrupt even when SIGINT was ignored at start-up.

    A non-interactive shell starts background jobs (`make test &`, CI runners, scripts) with
    SIGINT ignored; the ignore is inherited across exec, and Python then installs no handler of
    its own, so a SIGINT would be dropped and the run would go on as if never interrupted.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> None:
    restore_ctrl_c()
    try:
        app()
    except BenchmarkInterrupted as exc:
        err.print(f"[yellow]{escape(str(exc))}[/]", soft_wrap=True)
        sys.exit(errors.INTERRUPTED)
    except Exception as exc:  # the one error boundary of every command: a line, never a traceback
        if os.environ.get(errors.SHOW_TRACEBACK) == "1":
            traceback.print_exc()
        err.print(f"[red]error:[/] {escape(errors.error_line(exc))}", soft_wrap=True, highlight=False)
        sys.exit(errors.FAILED)
