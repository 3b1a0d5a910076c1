"""`harness plan`: size a cluster for a gym by simulation (harness/plan.py), answered by the one
prediction (harness/predict.py) that `simulate --target` and the benchmark print too."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.console import console, err
from harness.options import (
    Group,
    GymOptions,
    IdleKind,
    Json,
    Placement,
    Profile,
    Replicates,
    Results,
    Schedule,
    Seed,
    existing_results,
    idle_kind_of,
    parse_options,
    placement_of,
    schedule_of,
)
from harness.outputs import RESULTS
from trainer.policies.profiles import DEFAULT_PROFILE
from trainer.rules.placement import DEFAULT_PLACEMENT
from trainer.rules.schedule import DEFAULT_SCHEDULE


def plan(
    gym: Annotated[str, typer.Option(help="The gym to plan for.")],
    accelerators: Annotated[int, typer.Option(help="Accelerators per node (colocated: each generates and trains "
                                              "in turn; disaggregated: half generate, half train).")],
    cores_per_node: Annotated[int, typer.Option(help="CPU cores per accelerator node (its gym workers are at most "
                                                "this).")],
    nodes: Annotated[int, typer.Option(help="Accelerator nodes; the trainer runs on the first.")] = 1,
    gym_node_cores: Annotated[int, typer.Option(
        help="Cores of a CPU-only gym node: the plan adds the fewest such nodes that reach the target once the "
        "accelerator nodes' cores do not (0: none).")] = 0,
    max_gym_nodes: Annotated[int, typer.Option(help="The most CPU-only gym nodes to consider.")] = 256,
    price: Annotated[Optional[str], typer.Option(
        help="accel=PRICE,cpu=PRICE: an accelerator node's and a CPU-only gym node's price per hour. The plan then "
        "weighs every mix of 1 to --nodes accelerator nodes, each with the fewest gym nodes, at one batch, and "
        "answers for the cheapest per trained sample that reaches the target.")] = None,
    card: Annotated[Optional[Path], typer.Option(help="Cost card JSON, or a run's directory. Default: a card of "
                                                 "GYM measured with the same -o options, under RESULTS/cards/ "
                                                 "(harness gyms profile) or the newest such run under RESULTS/runs/, "
                                                 "then in the published results; else an error that lists the "
                                                 "cards found.")] = None,
    gym_option: GymOptions = None,
    profile: Profile = DEFAULT_PROFILE,
    placement: Placement = DEFAULT_PLACEMENT,
    schedule: Schedule = DEFAULT_SCHEDULE,
    batch: Annotated[Optional[int], typer.Option(min=1, help="Groups per step (default: 4 per rollout engine).")] = None,
    group: Group = 4,
    target_idle: Annotated[float, typer.Option(help="Highest acceptable async idle ratio, of the kind --idle names.")] = 0.05,
    idle: IdleKind = None,
    max_staleness_limit: Annotated[int, typer.Option(help="Largest max_staleness to consider.")] = 4,
    steps: Annotated[int, typer.Option(help="Simulated steps per candidate.")] = 40,
    replicates: Replicates = 20,
    seed: Seed = 0,
    results: Results = RESULTS,
    as_json: Json = False,
) -> None:
    """Recommend gym workers per node (and CPU-only gym nodes), max staleness and buffer depth, by
    simulation, with the predicted idle ratios and speedup (intervals over seeds and a bootstrap
    of the card), the inputs that decide them, and how far to trust them.

    Example: harness plan --gym verilog -o suite=heavy --accelerators 8 --cores-per-node 192 --gym-node-cores 64
    """
    from harness import plan as planner
    from harness import predict
    from harness.costcard import find_card
    from harness.sim.stages import from_profile
    from trainer.policies.profiles import load_profile

    schedule = schedule_of(schedule)
    cluster = planner.Cluster(nodes, accelerators, cores_per_node, placement_of(placement) or DEFAULT_PLACEMENT,
                              gym_node_cores, max_gym_nodes)  # fmt: skip
    cost, where, run_dir = find_card(gym, existing_results(results), card, parse_options(gym_option))
    stages = from_profile(load_profile(profile))
    priced = []
    if price is not None:
        try:
            prices = planner.Prices.parse(price)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--price") from None
        priced = planner.mixes(cost, stages, cluster, prices, batch, group_size=group, target_idle=target_idle,
                               staleness_limit=max_staleness_limit, steps=steps, seed=seed, schedule=schedule,
                               idle_kind=idle_kind_of(idle))  # fmt: skip
        batch = batch or planner.GROUPS_PER_ENGINE * cluster.engines  # the mixes' one batch
        cluster = replace(cluster, nodes=priced[0].nodes)
    question = predict.Question(cost, where, stages, cluster, group, schedule, batch,
                                target_idle, idle_kind_of(idle), max_staleness_limit, steps, seed, replicates,
                                card_run=run_dir)  # fmt: skip
    result = predict.answer(question, on_try=lambda line: err.print(f"  {line}", highlight=False, soft_wrap=True))
    if as_json:
        print(json.dumps({"prediction": result.block, "planner": planner.to_json(result.plan),
                          "mixes": [vars(m) for m in priced]}, indent=2, sort_keys=True))  # fmt: skip
        return
    for line in [*(planner.mix_lines(priced) if priced else []), *predict.lines(result.block),
                 *planner.details(result.plan)]:  # fmt: skip
        console.print(line, soft_wrap=True, markup=False, style="yellow" if "do not trust" in line else None)
