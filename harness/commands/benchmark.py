"""`harness benchmark`: GRPO sync and async side by side on one gym (harness/benchmark.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from harness.console import console, err, print_benchmark
from harness.options import (
    Batch,
    Group,
    GymName,
    GymOptions,
    GymWorkers,
    Json,
    MaxStaleness,
    Mode,
    Oversample,
    Placement,  # fmt: skip
    Profile,
    Results,
    SandboxBackend,
    Schedule,
    Seed,
    modes_of,
    parse_options,
    placement_of,
    schedule_of,
)
from harness.outputs import RESULTS
from harness.target import DEFAULT_TARGET, Target
from trainer.policies.profiles import DEFAULT_PROFILE
from trainer.rules.schedule import DEFAULT_SCHEDULE

if TYPE_CHECKING:
    from trainer.pipeline import StepRecord

Policy = Annotated[str, typer.Option(help="replay, tiny[:KEY=VALUE,...], hf:PATH[@DEVICE][:KEY=VALUE,...] or "
                                     "vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]][:KEY=VALUE,...]; learner options "
                                     "such as minibatches=4,epochs=1: docs/architecture.md, the loss; engine "
                                     "options: docs/engines.md.")]  # fmt: skip


def benchmark(
    gym: GymName = "verilog",
    mode: Mode = "both",
    steps: Annotated[int, typer.Option(min=2, help="Optimizer steps per mode; the first is warm-up.")] = 10,
    policy: Policy = "replay",
    profile: Profile = DEFAULT_PROFILE,
    gym_workers: GymWorkers = None,
    batch: Batch = 4,
    group: Group = 4,
    max_staleness: MaxStaleness = 1,
    oversample: Oversample = 0,
    schedule: Schedule = DEFAULT_SCHEDULE,
    card: Annotated[Optional[Path], typer.Option(
        help="A cost card (harness gyms profile) whose per-task figures are the cost predictor's prior; "
        "without one, each task's cost is learned in the run.")] = None,
    seed: Seed = 0,
    gym_option: GymOptions = None,
    executor: Annotated[str, typer.Option(help="Where gym workers run: local, or ray (docs/ray.md).")] = "local",
    ray_address: Annotated[
        Optional[str], typer.Option(help="With --executor ray: a cluster's HOST:PORT (default: start Ray here).")
    ] = None,
    placement: Placement = None,
    sandbox: SandboxBackend = None,
    repeats: Annotated[
        int, typer.Option(min=1, help="Run the modes this many times, in ABBA order; report means and 95% intervals.")
    ] = 1,
    control: Annotated[
        bool, typer.Option(help="Also run the same configuration with an instant gym (harness/control.py).")
    ] = False,
    warmup: Annotated[int, typer.Option(
        min=0, help="A learning policy's supervised format warm-up before each mode, in optimizer steps: the "
        "gym's format examples (answers in its format, none tied to its prompt), as RL starts from a model that "
        "knows the format.")] = 0,
    target: Annotated[str, typer.Option(
        help="The cluster to predict for, ACCELERATORSxCORES[xNODES] per node: after the measured table, the "
        "planner's gym workers, max staleness, idle and speedup there (harness/predict.py).")] = DEFAULT_TARGET,
    results: Results = RESULTS,
    as_json: Json = False,
) -> None:
    """Run GRPO sync and async on the same tasks, seed and budget; report idle ratio and speedup,
    and what the planner predicts for the target cluster."""
    modes = modes_of(mode)
    placement = placement_of(placement)
    schedule = schedule_of(schedule)
    try:
        cluster = Target.parse(target)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--target") from None
    from harness.benchmark import BenchmarkSpec, run_benchmark
    from harness.record import summary_json
    from harness.report import write_report

    spec = BenchmarkSpec(
        gym=gym, gym_options=parse_options(gym_option), modes=modes, steps=steps, policy=policy,
        profile=profile, gym_workers=gym_workers, batch_groups=batch, group_size=group,
        max_staleness=max_staleness, oversample=oversample, seed=seed, executor=executor, ray_address=ray_address,
        placement=placement, sandbox=sandbox, repeats=repeats, control=control, warmup=warmup, schedule=schedule,
        card=str(card) if card is not None else None,
    )  # fmt: skip

    def progress(mode_name: str, s: StepRecord) -> None:
        if not as_json:
            console.print(
                f"  {mode_name:5s} step {s.step + 1:3d}/{steps}  step_time {s.step_time:6.2f} s  "
                f"train_wait {s.train_wait:6.2f} s  reward {s.reward_mean:.3f}"
            )

    if not as_json:
        extra = (f", over-sampling {oversample} groups" if oversample else "") + f", schedule {schedule}" + (
            f", {repeats} repeats (ABBA)" if repeats > 1 else "") + (", with the instant-gym control" if control else "")
        console.print(f"[bold]benchmark[/] gym {gym}, policy {policy}, modes {', '.join(modes)}, {steps} steps{extra}")
    def say(line: str) -> None:  # start-up progress, on stderr: --json's stdout is the JSON alone
        err.print(line, soft_wrap=True, highlight=False, markup=False)

    summary, run_dir = run_benchmark(spec, results, on_step=progress, say=say, target=cluster)
    write_report(run_dir)  # report.html and figures/ beside the run record
    if as_json:
        print(summary_json(summary), end="")
        return
    print_benchmark(summary, run_dir)
