"""What a benchmark run predicts for the cluster a team will rent: `harness benchmark --target`.

From the run's own measurements, with the planner and the simulator (harness/plan.py,
harness/sim/), never a formula beside them:
* `here`: the simulator's prediction of this very run (its configuration, its gym's measured
  step times, its stages), averaged over seeds, beside what was measured: how far to trust it;
* `plan`: the planner's answer for the target node(s): the gym workers the sizing rule and the
  search recommend, the max staleness, and the simulated idle and speedup at that size.
The stages are the run's hardware profile where they were emulated, else the run's own measured
stage times (this machine's, which a target with other accelerators would not have: said so).
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness import plan as planner
from harness.costcard import CostCard, run_card
from harness.rundir import load_run
from harness.sim.stages import Stages, from_profile, from_run
from harness.simulate import config_of, simulate_modes
from harness.summary import RunSummary
from harness.target import Target
from trainer.policies.profiles import HardwareProfile
from trainer.rules.placement import DEFAULT_PLACEMENT

SEEDS = 20  # simulations of this run averaged: a run of a few steps is one noisy draw


def predict(run_dir: Path, summary: RunSummary, target: Target) -> dict[str, Any]:
    """summary.json's `predicted` block (see the module's docstring)."""
    card, stages = run_card(run_dir), _stages(run_dir, summary)
    placement = summary.placement or DEFAULT_PLACEMENT
    cluster = planner.Cluster(target.nodes, target.accelerators, target.cores, placement)
    chosen = planner.plan(card, stages, cluster, group_size=int(summary.spec["group_size"]),
                          schedule=summary.spec["schedule"])  # fmt: skip
    async_, sync = chosen.summary.modes["async"], chosen.summary.modes["sync"]
    return {
        "target": {"accelerators_per_node": target.accelerators, "cores_per_node": target.cores, "nodes": target.nodes},
        "placement": placement,
        "stages": stages.source,
        "here": _here(card, summary, stages),
        "plan": {
            "sizing_rule_workers_per_node": chosen.rule.per_node,
            "workers_per_node": chosen.workers_per_node,
            "max_staleness": chosen.max_staleness,
            "batch_groups": chosen.batch_groups,
            "reached": chosen.reached,
            "target_idle": chosen.target_idle,
            "idle_ratio": planner.IDLE_NAMES[placement],
            "idle_async": planner.idle_ratio(async_, placement),
            "idle_sync": planner.idle_ratio(sync, placement),
            "trainer_idle_async": async_.trainer_idle_ratio,
            "trainer_idle_sync": sync.trainer_idle_ratio,
            "speedup": (chosen.summary.comparison or {}).get("speedup"),
            "warnings": chosen.warnings,
        },
    }  # fmt: skip


def _stages(run_dir: Path, summary: RunSummary) -> Stages:
    if summary.emulated and summary.profile:
        return from_profile(HardwareProfile(**summary.profile))
    measured = from_run(load_run(run_dir))
    return replace(measured, source=f"{measured.source}: this machine's stage times, not the target's accelerators'")


def _here(card: CostCard, summary: RunSummary, stages: Stages) -> dict[str, Any]:
    """This run simulated from its gym's measured step times (`card`) and `stages`, beside the measurement."""
    config, modes = config_of(summary), tuple(summary.modes)
    runs = [simulate_modes(card, stages, replace(config, seed=seed), modes) for seed in range(SEEDS)]
    here: dict[str, Any] = {"seeds": SEEDS}
    for mode in modes:
        here[f"trainer_idle_{mode}"] = {
            "predicted": statistics.fmean(r.modes[mode].trainer_idle_ratio for r in runs),
            "measured": summary.modes[mode].trainer_idle_ratio,
        }
    if summary.comparison and all(r.comparison for r in runs):
        here["speedup"] = {"predicted": statistics.fmean(r.comparison["speedup"] for r in runs),  # type: ignore[index]
                           "measured": summary.comparison["speedup"]}  # fmt: skip
    return here


def lines(predicted: dict[str, Any]) -> list[str]:
    """The block as the console and the report print it."""
    if "error" in predicted:
        return [f"predicted: not made: {predicted['error']}"]
    t, p, here = predicted["target"], predicted["plan"], predicted["here"]
    target = Target(t["accelerators_per_node"], t["cores_per_node"], t["nodes"])
    checks = [f"{mode} idle {here[f'trainer_idle_{mode}']['predicted']:.1%} vs {here[f'trainer_idle_{mode}']['measured']:.1%}"
              for mode in ("sync", "async") if f"trainer_idle_{mode}" in here]  # fmt: skip
    if "speedup" in here:
        checks.append(f"speedup {here['speedup']['predicted']:.2f}x vs {here['speedup']['measured']:.2f}x")
    out = [f"predicted (simulated, not measured) for {target}, placement {predicted['placement']}, stages "
           f"{predicted['stages']}:"]
    if p["speedup"] is not None:
        out.append(f"  async speedup {p['speedup']:.2f}x with {p['workers_per_node']} gym workers per node (sizing rule: "
                   f"{p['sizing_rule_workers_per_node']}), max_staleness {p['max_staleness']}, batch "
                   f"{p['batch_groups']} groups; {p['idle_ratio']} async {p['idle_async']:.1%} (sync "
                   f"{p['idle_sync']:.1%}); trainer idle async {p['trainer_idle_async']:.1%} (sync "
                   f"{p['trainer_idle_sync']:.1%})")  # fmt: skip
    out.append(f"  how far to trust it: this run simulated ({here['seeds']} seeds) vs measured on this machine: "
               f"{'; '.join(checks)}")  # fmt: skip
    out += [f"  note: {w}" for w in p["warnings"]]
    return out
