"""`harness simulate`: the sync and async pipelines as discrete events (harness/simulate.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.console import console
from harness.options import (
    Batch,
    Group,
    GymOptions,
    GymWorkers,
    Json,
    MaxStaleness,
    Mode,
    Oversample,
    Placement,
    Profile,
    Replicates,
    Results,  # fmt: skip
    Schedule,
    Seed,
    existing_results,
    modes_of,
    parse_options,
    placement_of,
    schedule_of,
)
from harness.outputs import RESULTS
from trainer.policies.profiles import DEFAULT_PROFILE
from trainer.rules.placement import DEFAULT_PLACEMENT
from trainer.rules.schedule import DEFAULT_SCHEDULE


def simulate(
    published: Annotated[Optional[str], typer.Option(help="A published setup (a shipped name, or a JSON file; "
                                                       "docs/simulate.md): predicted beside published.")] = None,
    run: Annotated[Optional[str], typer.Option(help="Re-simulate this run (id or directory) from its own "
                                                 "measurements; prints predicted vs measured.")] = None,
    gym: Annotated[Optional[str], typer.Option(help="Gym whose cost card to use (found as harness plan finds it).")] = None,
    card: Annotated[Optional[Path], typer.Option(help="A cost card JSON (harness gyms profile).")] = None,
    gym_option: GymOptions = None,
    profile: Profile = DEFAULT_PROFILE,
    mode: Mode = "both",
    steps: Annotated[Optional[int], typer.Option(help="Optimizer steps; the first is warm-up (default 10).")] = None,
    duration_s: Annotated[Optional[float], typer.Option(help="Simulated seconds to run instead of --steps.")] = None,
    batch: Batch = 4,
    group: Group = 4,
    max_staleness: MaxStaleness = 1,
    oversample: Oversample = 0,  # --run takes the run's
    gym_workers: GymWorkers = None,
    remote_gym_workers: Annotated[int, typer.Option(help="Of the gym workers, how many sit on nodes other than the "
                                                    "trainer's: each step there costs --dispatch-s more.")] = 0,
    dispatch_s: Annotated[Optional[float], typer.Option(help="Seconds a step on a remote gym worker costs on top of "
                                                        "its service (default: the measured Ray round trip).")] = None,
    engines: Annotated[int, typer.Option(help="Rollout engines (one generation call each at a time); colocated: "
                                         "as many as --trainers, one pool.")] = 1,
    trainers: Annotated[int, typer.Option(help="Data-parallel trainer replicas.")] = 1,
    placement: Placement = DEFAULT_PLACEMENT,  # --run takes the run's
    schedule: Schedule = DEFAULT_SCHEDULE,  # --run takes the run's
    repeats: Annotated[int, typer.Option(help="--run: simulations averaged (seeds SEED, SEED+1, ...).")] = 100,
    seed: Seed = 0,
    results: Results = RESULTS,
    as_json: Json = False,
    markdown: Annotated[bool, typer.Option(help="--run: print the run's row of docs/simulate.md's table.")] = False,
    target: Annotated[Optional[str], typer.Option(
        help="--run: print what the run predicts for this cluster, ACCELERATORSxCORES[xNODES][+GYM_NODE_CORES] "
        "per node, as harness benchmark does at its end (harness plan's answer, from the run's card and stages).")] = None,
    replicates: Replicates = 20,
) -> None:
    """Simulate the sync and async pipelines (discrete events, the trainer's rules) in seconds.

    Example: harness simulate --run 20261206T053157Z-verilog --target 8x192
    """
    from gyms.pool import default_workers
    from harness import simulate as sim
    from harness.sim.pipeline import SimConfig

    if published is not None:  # harness/published.py: self-contained, the other options do not apply
        from harness import published as tables

        result = tables.compare(tables.load(published))
        print(json.dumps(result, indent=2, default=vars) if as_json else "\n".join(tables.lines(result)))
        return
    results = existing_results(results)
    if target is not None:
        if run is None:
            raise typer.BadParameter("a prediction is made from a run: add --run RUN_ID", param_hint="--target")
        _predict(run, results, target, replicates, as_json)
        return
    if run is not None:
        fidelity = sim.resimulate(run, results, repeats, seed)
        if markdown:
            print(sim.MARKDOWN_HEADER, sim.fidelity_row(fidelity), sep="\n")
            return
        if as_json:
            print(json.dumps(fidelity.to_json(), indent=2))
            return
        console.print(f"[bold]{fidelity.gym}[/] run {fidelity.run_id} (schedule {fidelity.config.schedule}): "
                      f"predicted (mean ± sd of {repeats} "
                      "simulations from the run's own spans) vs measured")  # fmt: skip
        console.print(sim.fidelity_table(fidelity))
        console.print(sim.fidelity_line(fidelity))
        return
    modes = modes_of(mode)
    config = SimConfig(
        steps=steps if steps is not None else (10 if duration_s is None else 2**62), duration_s=duration_s,
        batch_groups=batch, group_size=group, max_staleness=max_staleness, oversample=oversample, engines=engines,
        trainers=trainers,
        gym_workers=gym_workers if gym_workers is not None else default_workers(), seed=seed, placement=placement_of(placement) or DEFAULT_PLACEMENT,
        schedule=schedule_of(schedule), remote_gym_workers=remote_gym_workers, dispatch_s=dispatch_s,
    )  # fmt: skip
    summary = sim.simulate_gym(gym, card, profile, config, modes, results, parse_options(gym_option))
    if as_json:
        print(json.dumps(summary.to_json(), indent=2, sort_keys=True))
        return
    console.print(f"[bold]{summary.gym}[/] simulated: card {summary.card_from}; stages {summary.stages}, "
                  f"placement {config.placement}, schedule {config.schedule}")  # fmt: skip
    console.print(sim.summary_table(summary))
    if summary.comparison:
        c = summary.comparison
        console.print(f"speedup [bold]{c['speedup']:.2f}x[/]; trainer idle ratio {c['trainer_idle_ratio_sync']:.1%}"
                      f" -> {c['trainer_idle_ratio_async']:.1%}")  # fmt: skip


def _predict(run: str, results: Path, target: str, replicates: int, as_json: bool) -> None:
    from harness import predict
    from harness.rundir import find_run
    from harness.target import Target

    try:
        cluster = Target.parse(target)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--target") from None
    block = predict.answer(predict.from_run(find_run(run, results), cluster, replicates=replicates)).block
    if as_json:
        print(json.dumps(block, indent=2, sort_keys=True))
        return
    for line in predict.lines(block):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
