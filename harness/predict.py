"""The one prediction for a cluster: `harness plan`, `harness simulate --target`, the benchmark's
predicted block and the README's figures all ask `answer(question)` and print `lines(block)`.

A `Question` holds every input that decides the answer (the card and where it came from, the
stages, the cluster, batch, group, schedule, which idle ratio the target means, seeds); the routes
differ only in how they fill it (`from_run` for a run, the command's options for `plan`), and each
prints the inputs beside the answer. The answer:
* the planner's search (harness/plan.py) for gym workers per node and max staleness;
* at its choice, `REPLICATES` simulations of sync and async, each with its own seed and its own
  bootstrap of the card's step times: the figures are their mean, with the 2.5-97.5 % range
  (a run of a few steps is one noisy draw of a few hundred step times, and so is its card);
* a trust line. Where a measured run stands behind the card, the simulator replays that run
  (its own configuration, `REPLICATES` seeds) and the prediction is trusted only when the replay
  lands within `TRUST_IDLE_PP` points of each mode's trainer idle and `TRUST_SPEEDUP` of its
  speedup (the tolerances docs/simulate.md documents), or inside the run's own 95 % interval over
  its repeats where it has one (a miss inside the measurement's noise is no miss), and only when
  the run measured at least `MIN_MEASURED_STEPS` steps; otherwise the line says plainly "do not
  trust this prediction".
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from harness import plan as planner
from harness.costcard import CostCard, run_card
from harness.rundir import load_summary
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig
from harness.sim.queue import DISPATCH_S
from harness.sim import stages as sim_stages
from harness.sim.stages import Stages, from_profile
from harness.simulate import config_of, simulate_modes
from harness.summary import RunSummary
from harness.target import Target
from trainer.metrics import MIN_MEASURED_STEPS
from trainer.policies.profiles import HardwareProfile
from trainer.rules.placement import DEFAULT_PLACEMENT

VERSION = 2  # of the block in summary.json; blocks without one are rendered as they were recorded
REPLICATES = 20  # simulations at the recommendation, each a seed and a bootstrap of the card
TRUST_IDLE_PP = 5.0  # the replay of the run behind the card must land this close to each mode's idle
TRUST_SPEEDUP = 0.10  # and this close to its speedup (relative)
@dataclass(frozen=True)
class Question:
    card: CostCard
    card_from: str  # where the card came from, in words
    stages: Stages
    cluster: planner.Cluster
    group_size: int
    schedule: str
    batch_groups: int | None = None  # None: the planner's GROUPS_PER_ENGINE per rollout engine
    target_idle: float = 0.05
    idle: str | None = None  # which idle ratio the target means; None: default_idle(placement)
    staleness_limit: int = 4
    steps: int = 40
    seed: int = 0
    replicates: int = REPLICATES
    card_run: Path | None = None  # the measured run behind the card, which the trust line replays
    notes: tuple[str, ...] = ()  # where a route deliberately uses other inputs than the run's

    @property
    def idle_kind(self) -> str:
        return self.idle or planner.default_idle(self.cluster.placement)


def from_run(run_dir: Path, target: Target, summary: RunSummary | None = None, **options: Any) -> Question:
    """The question a run asks of a target cluster: its card, its stages (its profile where they were
    emulated, else its own spans), its group size, placement and schedule. Its batch is not kept:
    the target's engines get the planner's default batch, said so in the notes."""
    summary = summary or load_summary(run_dir)
    placement = summary.placement or DEFAULT_PLACEMENT
    cluster = planner.Cluster(target.nodes, target.accelerators, target.cores, placement,
                              gym_node_cores=target.gym_node_cores)  # fmt: skip
    notes = [f"batch: {planner.GROUPS_PER_ENGINE} groups per rollout engine, the planner's default, not the run's "
             f"{summary.spec['batch_groups']}, so that each of the target's engines has the run's load"]  # fmt: skip
    if summary.placement is None:
        notes.append(f"placement: the run recorded none; {placement}, the default")
    return Question(run_card(run_dir), f"run {summary.run_id}", _stages(run_dir, summary), cluster,
                    int(summary.spec["group_size"]), str(summary.spec["schedule"]), card_run=run_dir,
                    notes=tuple(notes), **options)  # fmt: skip


def _stages(run_dir: Path, summary: RunSummary) -> Stages:
    if summary.emulated and summary.profile:
        return from_profile(HardwareProfile(**summary.profile))
    from harness.rundir import load_run

    measured = sim_stages.from_run(load_run(run_dir))  # a real engine's own stage times
    return replace(measured, source=f"{measured.source}: this machine's stage times, not the target's accelerators'")


def bootstrap(card: CostCard, rng: np.random.Generator) -> CostCard:
    """The card with its step times resampled: as many draws, with replacement, as it was built from."""
    service = card.service_s
    if service.count < 2:
        return card
    drawn = service.sample(rng, service.count)
    return replace(card, service_s=Distribution.of(drawn.tolist()))


def _estimate(values: list[float]) -> dict[str, float]:
    low, high = np.percentile(values, [2.5, 97.5]).tolist()
    return {"mean": statistics.fmean(values), "low": low, "high": high}


@dataclass(frozen=True)
class Answer:
    block: dict[str, Any]  # what every route prints (`lines`) and a run records in summary.json
    plan: planner.Plan  # how the planner got there (`harness plan` prints its details)


def answer(q: Question, on_try: Callable[[str], None] | None = None) -> Answer:
    """The prediction (see the module's docstring)."""
    chosen = planner.plan(q.card, q.stages, q.cluster, q.batch_groups, q.group_size, q.target_idle,
                          q.staleness_limit, q.steps, q.seed, on_try, q.schedule, q.idle_kind)  # fmt: skip
    config = replace(chosen.config, record_fates=False)
    if on_try is not None:
        on_try(f"simulating {q.replicates} replicates of sync and async at the recommendation")
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(q.seed).spawn(q.replicates)]
    runs = [simulate_modes(bootstrap(q.card, rng), q.stages, replace(config, seed=q.seed + i), ("sync", "async"))
            for i, rng in enumerate(rngs)]  # fmt: skip
    figures = {"speedup": _estimate([r.comparison["speedup"] for r in runs if r.comparison])}
    for mode in ("sync", "async"):
        for idle in planner.IDLES:
            figures[f"{idle}_idle_{mode}"] = _estimate([planner.idle_of(r.modes[mode], idle, q.cluster) for r in runs])
        figures[f"step_time_{mode}"] = _estimate([r.modes[mode].step_time_mean for r in runs])
    figures["samples_per_s_async"] = _estimate([r.modes["async"].samples_per_s for r in runs])
    reached = figures[f"{q.idle_kind}_idle_async"]["mean"] <= q.target_idle
    return Answer({
        "version": VERSION,
        "inputs": _inputs(q, chosen),
        "plan": {
            "workers_per_node": chosen.workers_per_node, "gym_nodes": chosen.gym_nodes,
            "gym_workers": chosen.config.gym_workers, "remote_gym_workers": chosen.config.remote_gym_workers,
            "sizing_rule_workers": chosen.rule.workers, "max_staleness": chosen.max_staleness,
            "batch_groups": chosen.batch_groups, "recommended_schedule": chosen.recommended_schedule,
            "reached": reached, "warnings": chosen.warnings,
        },
        "figures": figures,
        "trust": _trust(q),
    }, chosen)  # fmt: skip


def _inputs(q: Question, chosen: planner.Plan) -> dict[str, Any]:
    card, c = q.card, q.cluster
    return {
        "card": {"from": q.card_from, "gym": card.gym, "options": card.gym_options, "source": card.source,
                 "step_times": card.service_s.count, "mean_step_s": card.service_s.mean},
        "stages": q.stages.source,
        "cluster": {"nodes": c.nodes, "accelerators_per_node": c.accelerators_per_node,
                    "cores_per_node": c.cores_per_node, "gym_node_cores": c.gym_node_cores,
                    "placement": c.placement, "engines": c.engines, "trainers": c.trainers},
        "batch_groups": chosen.batch_groups, "group_size": q.group_size, "schedule": q.schedule,
        "staleness_limit": q.staleness_limit, "target_idle": q.target_idle, "idle": q.idle_kind,
        "steps": q.steps, "seeds": [q.seed, q.seed + q.replicates - 1], "replicates": q.replicates,
        "dispatch_s": dispatch_of(chosen.config), "notes": list(q.notes),
    }  # fmt: skip


def dispatch_of(config: SimConfig) -> float:
    return DISPATCH_S if config.dispatch_s is None else config.dispatch_s


def _trust(q: Question) -> dict[str, Any]:
    """Whether the simulator reproduces the run behind the card (see the module's docstring)."""
    if q.card_run is None:
        return {"verdict": "unchecked", "why": f"no measured run stands behind the card ({q.card_from}) for the "
                "simulator to replay; run `harness benchmark` on this gym and plan from its run to check it"}
    summary = load_summary(q.card_run)
    measured_steps = min(m.measured_steps for m in summary.modes.values())
    config, modes = config_of(summary), tuple(summary.modes)
    stages = _stages(q.card_run, summary)
    runs = [simulate_modes(q.card, stages, replace(config, seed=seed), modes) for seed in range(q.replicates)]
    replay: dict[str, Any] = {"run": summary.run_id, "measured_steps": measured_steps, "seeds": q.replicates}
    misses = []

    def within(predicted: float, measured: float, key: str, close: bool) -> bool:
        """Close enough, or inside the run's own 95 % interval over its repeats (its noise)."""
        interval = summary.intervals.get(key) or {}
        low, high = interval.get("low"), interval.get("high")  # None: one repeat, no interval
        return close or (low is not None and high is not None and low <= predicted <= high)

    for mode in modes:
        predicted = statistics.fmean(r.modes[mode].trainer_idle_ratio for r in runs)
        measured = summary.modes[mode].trainer_idle_ratio
        replay[f"trainer_idle_{mode}"] = {"predicted": predicted, "measured": measured}
        if not within(predicted, measured, f"trainer_idle_ratio_{mode}", abs(predicted - measured) * 100 <= TRUST_IDLE_PP):
            misses.append(f"{mode} trainer idle ratio {predicted:.1%} vs {measured:.1%} measured")
    if summary.comparison and all(r.comparison for r in runs):
        predicted = statistics.fmean(r.comparison["speedup"] for r in runs)  # type: ignore[index]
        measured = summary.comparison["speedup"]
        replay["speedup"] = {"predicted": predicted, "measured": measured}
        if measured_steps >= MIN_MEASURED_STEPS and not within(predicted, measured, "speedup",
                                                                abs(predicted / measured - 1) <= TRUST_SPEEDUP):
            misses.append(f"speedup {predicted:.2f}x vs {measured:.2f}x measured")
    if measured_steps < MIN_MEASURED_STEPS:
        misses.append(f"the run measured {measured_steps} step(s), fewer than {MIN_MEASURED_STEPS}")
    return {"verdict": "do not trust" if misses else "trusted", "misses": misses, "replay": replay}


# -- the block in words -------------------------------------------------------------------------


def _pct(e: dict[str, float]) -> str:
    return f"{e['mean']:.1%} [{e['low']:.1%}, {e['high']:.1%}]"


def _times(e: dict[str, float]) -> str:
    return f"{e['mean']:.2f}x [{e['low']:.2f}x, {e['high']:.2f}x]"


def lines(block: dict[str, Any]) -> list[str]:
    """The block as every route prints it (the console, the report, plan, simulate --target)."""
    if "error" in block:
        return [f"predicted: not made: {block['error']}"]
    if block.get("version") != VERSION:
        return _recorded_lines(block)
    i, p, f, trust = block["inputs"], block["plan"], block["figures"], block["trust"]
    c, card = i["cluster"], i["card"]
    options = ", ".join(f"{k}={v}" for k, v in sorted((card["options"] or {}).items())) or "no options"
    if card["options"] is None:
        options = "options not recorded"
    gym_nodes = (f" + {p['gym_nodes']} CPU-only gym node(s) of {c['gym_node_cores']} cores"
                 if c["gym_node_cores"] else "")  # fmt: skip
    out = [
        f"predicted (simulated, not measured) for {c['nodes']} node(s) x {c['accelerators_per_node']} accelerators x "
        f"{c['cores_per_node']} cores{gym_nodes}, placement {c['placement']}:",
        f"  card: {card['gym']} ({options}), {card['from']}, {card['step_times']} step times, mean "
        f"{card['mean_step_s']:.3f} s; stages: {i['stages']}",
        f"  configuration: {c['engines']} rollout engine(s), {c['trainers']} trainer replica(s); batch "
        f"{i['batch_groups']} groups x {i['group_size']}; schedule {i['schedule']}; max_staleness searched 1-"
        f"{i['staleness_limit']}; {i['steps']} simulated steps; seeds {i['seeds'][0]}-{i['seeds'][1]} "
        f"({i['replicates']} replicates, each with a bootstrap of the card's step times)",
    ]
    if p["remote_gym_workers"]:
        out.append(f"  gym dispatch: {p['remote_gym_workers']} of {p['gym_workers']} gym workers are off the "
                   f"trainer's node and pay {i['dispatch_s'] * 1000:.1f} ms per step")  # fmt: skip
    target = planner.IDLE_LABELS[i["idle"]]
    out += [
        f"  answer: async speedup {_times(f['speedup'])} with {p['workers_per_node']} gym workers per node"
        + (f" and {p['gym_nodes']} gym node(s)" if c["gym_node_cores"] else "")
        + f", max_staleness {p['max_staleness']} (sizing rule: {p['sizing_rule_workers']} gym workers in all)",
        f"  trainer idle ratio: sync {_pct(f['trainer_idle_sync'])} -> async {_pct(f['trainer_idle_async'])}",
        f"  accelerator idle ratio: sync {_pct(f['accelerator_idle_sync'])} -> async "
        f"{_pct(f['accelerator_idle_async'])}",
        f"  target: {target} at most {i['target_idle']:.0%} in async: {'reached' if p['reached'] else 'NOT reached'}",
    ]
    if trust["verdict"] == "unchecked":
        out.append(f"  trust: unchecked: {trust['why']}")
    else:
        replay = trust["replay"]
        figures = [f"{m} trainer idle {replay[k]['predicted']:.1%} vs {replay[k]['measured']:.1%}"
                   for m in ("sync", "async") if (k := f"trainer_idle_{m}") in replay]  # fmt: skip
        if "speedup" in replay:
            measured = (f"{replay['speedup']['measured']:.2f}x" if replay["measured_steps"] >= MIN_MEASURED_STEPS
                        else f"not measured: {replay['measured_steps']} step(s)")  # fmt: skip
            figures.append(f"speedup {replay['speedup']['predicted']:.2f}x vs {measured}")
        head = ("do not trust this prediction: " + "; ".join(trust["misses"]) if trust["misses"]
                else f"trusted: within {TRUST_IDLE_PP:.0f} points of idle and {TRUST_SPEEDUP:.0%} of speedup, or "
                "inside the run's own 95% intervals")  # fmt: skip
        out.append(f"  trust: {head} (the simulator's replay of run {replay['run']}, {replay['seeds']} seeds, vs "
                   f"measured: {'; '.join(figures)})")  # fmt: skip
    out += [f"  input: {note}" for note in i["notes"]]
    out += [f"  note: {w}" for w in p["warnings"]]
    return out


def _recorded_lines(predicted: dict[str, Any]) -> list[str]:
    """A block recorded before VERSION 2, in the words it was recorded with (its run's report
    regenerates unchanged)."""
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
