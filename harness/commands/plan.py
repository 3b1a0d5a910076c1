"""`harness plan`: size a cluster for a gym by simulation (harness/plan.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.console import console, err
from harness.options import Group, Json, Placement, Profile, Results, Schedule, Seed, placement_of, schedule_of
from harness.outputs import RESULTS
from trainer.policies.profiles import DEFAULT_PROFILE
from trainer.rules.placement import DEFAULT_PLACEMENT
from trainer.rules.schedule import DEFAULT_SCHEDULE


def plan(
    gym: Annotated[str, typer.Option(help="The gym to plan for.")],
    accelerators: Annotated[int, typer.Option(help="Accelerators per node (colocated: each generates and trains "
                                              "in turn; disaggregated: half generate, half train).")],
    cores_per_node: Annotated[int, typer.Option(help="CPU cores per node (gym workers are at most this).")],
    nodes: Annotated[int, typer.Option(help="Nodes.")] = 1,
    card: Annotated[Optional[Path], typer.Option(help="Cost card JSON. Default: RESULTS/cards/GYM.json "
                                                 "(harness gyms profile GYM), else the newest run of GYM under "
                                                 "RESULTS/runs/, else an error.")] = None,
    profile: Profile = DEFAULT_PROFILE,
    placement: Placement = DEFAULT_PLACEMENT,
    schedule: Schedule = DEFAULT_SCHEDULE,
    batch: Annotated[Optional[int], typer.Option(min=1, help="Groups per step (default: 4 per rollout engine).")] = None,
    group: Group = 4,
    target_idle: Annotated[float, typer.Option(help="Highest acceptable async trainer idle ratio.")] = 0.05,
    max_staleness_limit: Annotated[int, typer.Option(help="Largest max_staleness to consider.")] = 4,
    steps: Annotated[int, typer.Option(help="Simulated steps per candidate.")] = 40,
    seed: Seed = 0,
    results: Results = RESULTS,
    as_json: Json = False,
) -> None:
    """Recommend gym workers per node, max staleness and buffer depth, by simulation, with the
    predicted idle ratio and speedup and the sizing rule's answer beside it; and the schedule
    (the search runs under --schedule; the other is simulated at the recommendation)."""
    from harness import plan as planner
    from harness.costcard import find_card
    from harness.sim.stages import from_profile
    from trainer.policies.profiles import load_profile

    schedule = schedule_of(schedule)
    cluster = planner.Cluster(nodes, accelerators, cores_per_node, placement_of(placement) or DEFAULT_PLACEMENT)
    cost, where = find_card(gym, results, card)
    stages = from_profile(load_profile(profile))
    result = planner.plan(cost, stages, cluster, batch, group, target_idle, max_staleness_limit, steps, seed,
                          on_try=lambda line: err.print(f"  {line}", highlight=False, soft_wrap=True),
                          schedule=schedule)  # fmt: skip
    if as_json:
        print(json.dumps(planner.to_json(result, where, stages.source), indent=2, sort_keys=True))
        return
    for line in planner.render(result, where, stages.source):
        console.print(line, soft_wrap=True, markup=False, style="yellow" if line.startswith("warning") else None)
