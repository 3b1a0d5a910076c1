"""`harness plan`: gym workers per node, max staleness and buffer depth for a cluster.

How accelerators become pipeline parts (the mapping the simulator is given), by placement
(trainer/rules/placement.py, the same meaning as benchmark's and simulate's):
* colocated (the default): every accelerator is a rollout engine and a data-parallel trainer
  replica, and a train step holds them all; disaggregated: half the accelerators (at least one)
  are engines, the rest trainer replicas. An engine generates at the profile's rate; replicas
  share the per-token training time of a batch (perfect scaling: an optimistic assumption).
* The batch defaults to 4 groups per engine, the benchmark's 4 x 4 per engine, so each
  engine and trainer replica sees the profile's reference load.
* The gym workers of every node serve one FIFO queue (a shared queue or a balancer).

The search: for max_staleness 1, 2, ... the fewest gym workers per node whose simulated async
idle ratio (`idle_ratio`: what gym work leaves idle) is at or under the target; the first
staleness that reaches it wins, since staler samples cost learning and cores cost little. Beside it, the queueing rule's answer:
n >= 1.3 x lambda x E[S], with lambda the gym calls per second when the accelerators set the pace
(a step's generation and training in turn when colocated, the slower of the two when not).

The schedule (trainer/rules/schedule.py): the search runs under `--schedule`; at the point it
recommends, the other schedule is simulated too, and cost-aware is recommended when it holds the
idle target as well or better (its idle at or under the larger of the target and fifo's) and
drops less: less gym time dropped stale where the card has per-task figures (the bias audit's
share), else fewer trajectories dropped stale.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from harness.costcard import CostCard
from harness.sim.pipeline import SimConfig
from harness.sim.stages import Stages
from harness.simulate import Simulated, simulate_modes
from trainer.metrics import ModeSummary
from trainer.rules.placement import DEFAULT_PLACEMENT, engines_and_trainers
from trainer.rules.schedule import DEFAULT_SCHEDULE, SCHEDULES


def idle_ratio(figures: ModeSummary, placement: str) -> float:
    """The idle that gym workers can remove: the trainer's where it has accelerators of its own;
    a colocated pool's (neither generating nor training), since there the trainer waits by design
    while its accelerators generate, which no gym worker changes."""
    if placement == "colocated" and figures.accelerator_idle_ratio is not None:
        return figures.accelerator_idle_ratio
    return figures.trainer_idle_ratio


IDLE_NAMES = {"colocated": "accelerator idle ratio (the pool neither generating nor training)",
              "disaggregated": "trainer idle ratio"}  # fmt: skip
NEAR_BEST = 0.01  # an unreachable target: busy time within 1 % of every core's is as good
HEADROOM = 1.3  # the design's rule: utilisation rho = lambda E[S] / n stays near 1 / 1.3
GROUPS_PER_ENGINE = 4


@dataclass(frozen=True)
class Cluster:
    nodes: int
    accelerators_per_node: int
    cores_per_node: int
    placement: str = DEFAULT_PLACEMENT

    def __post_init__(self) -> None:
        for flag, value in (("--nodes", self.nodes), ("--accelerators", self.accelerators_per_node),
                            ("--cores-per-node", self.cores_per_node)):  # fmt: skip
            if value < 1:
                raise ValueError(f"{flag} must be at least 1, got {value}")
        engines_and_trainers(self.placement, self.accelerators)  # the placement's checks

    @property
    def accelerators(self) -> int:
        return self.nodes * self.accelerators_per_node

    @property
    def engines(self) -> int:
        return engines_and_trainers(self.placement, self.accelerators)[0]

    @property
    def trainers(self) -> int:
        return engines_and_trainers(self.placement, self.accelerators)[1]


@dataclass(frozen=True)
class SizingRule:
    gym_calls_per_step: float
    step_time_s: float  # when the accelerators set the pace: generation then training per step if
    # they share the accelerators (colocated), else the slower of the two
    arrival_per_s: float  # lambda
    service_mean_s: float  # E[S]
    workers: int  # ceil(1.3 x lambda x E[S]), over the whole cluster
    per_node: int


def sizing_rule(card: CostCard, stages: Stages, cluster: Cluster, batch: int, group: int) -> SizingRule:
    turns = batch * group * card.mean_turns
    # Per episode, over the card's turns: the prefill of its growing prompt, and its one sequence's training
    by_turns = list(enumerate(card.turns, 1))
    feedback = card.feedback_tokens
    prefill = sum(p * sum(stages.prefill_s(k, feedback) for k in range(1, n + 1)) for n, p in by_turns)
    sequence = sum(p * stages.train_s(n, feedback) for n, p in by_turns)
    generate = (turns * stages.response_s.mean + batch * group * prefill
                + batch * card.mean_turns * stages.generate_call_s) / cluster.engines  # fmt: skip
    train = (stages.train_fixed_s.mean + stages.update_weights_s.mean
             + batch * group * sequence * (1 - card.error_rate) / cluster.trainers)  # fmt: skip
    step = generate + train if cluster.placement == "colocated" else max(generate, train)
    arrival = turns / step
    workers = max(1, math.ceil(HEADROOM * arrival * card.service_s.mean))
    return SizingRule(turns, step, arrival, card.service_s.mean, workers, math.ceil(workers / cluster.nodes))


@dataclass(frozen=True)
class Plan:
    cluster: Cluster
    batch_groups: int
    group_size: int
    target_idle: float
    rule: SizingRule
    workers_per_node: int
    max_staleness: int
    reached: bool  # the simulated idle_ratio is at or under the target
    summary: Simulated  # simulate_modes at the recommendation, sync and async
    tried: list[tuple[int, int, float]]  # (max_staleness, workers per node, async idle_ratio)
    warnings: list[str]
    schedule: str = DEFAULT_SCHEDULE  # the search's
    # Each schedule at the recommendation, async: {"idle": idle_ratio, "dropped": its share, "dropped_of": of what}
    schedules: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def recommended_schedule(self) -> str:
        """cost-aware where it holds the idle target as well as fifo or better and drops less; else fifo."""
        fifo, aware = self.schedules["fifo"], self.schedules["cost-aware"]
        holds = aware["idle"] <= max(self.target_idle, fifo["idle"])
        return "cost-aware" if holds and aware["dropped"] < fifo["dropped"] else "fifo"

    @property
    def buffer_groups(self) -> int:
        """Groups in flight or ready at most: what admission lets start, (max_staleness + 1) x batch."""
        return (self.max_staleness + 1) * self.batch_groups


def plan(
    card: CostCard,
    stages: Stages,
    cluster: Cluster,
    batch_groups: int | None = None,
    group_size: int = 4,
    target_idle: float = 0.05,
    staleness_limit: int = 4,
    steps: int = 40,
    seed: int = 0,
    on_try: Callable[[str], None] | None = None,
    schedule: str = DEFAULT_SCHEDULE,
) -> Plan:
    """`on_try` hears one line per simulation as it finishes (a large cluster takes minutes)."""
    if not 0 < target_idle < 1:
        raise ValueError(f"--target-idle is a ratio in (0, 1), got {target_idle}")
    if staleness_limit < 1:
        raise ValueError(f"--max-staleness-limit must be at least 1, got {staleness_limit}")
    batch = GROUPS_PER_ENGINE * cluster.engines if batch_groups is None else batch_groups
    base = SimConfig(mode="async", steps=steps, batch_groups=batch, group_size=group_size, engines=cluster.engines,
                     trainers=cluster.trainers, seed=seed, placement=cluster.placement, schedule=schedule)  # fmt: skip
    tried: dict[tuple[int, int], float] = {}

    def idle(staleness: int, per_node: int) -> float:
        key = staleness, per_node
        if key not in tried:
            started = time.monotonic()
            config = replace(base, max_staleness=staleness, gym_workers=per_node * cluster.nodes, record_fates=False)
            tried[key] = idle_ratio(simulate_modes(card, stages, config, ("async",)).modes["async"], cluster.placement)
            if on_try is not None:
                on_try(f"simulated max_staleness {staleness}, {per_node} gym workers per node: async idle "
                       f"{tried[key]:.1%} ({time.monotonic() - started:.2f} s)")  # fmt: skip
        return tried[key]

    rule = sizing_rule(card, stages, cluster, batch, group_size)
    choice = None
    for staleness in range(1, staleness_limit + 1):
        if idle(staleness, cluster.cores_per_node) <= target_idle:
            fewest = _fewest(lambda n, s=staleness: idle(s, n) <= target_idle, cluster.cores_per_node, rule.per_node)
            choice = staleness, fewest
            break
    reached = choice is not None
    if choice is None:  # the target is out of reach: the best staleness, with the fewest workers that keep
        # the accelerators busy within NEAR_BEST of every core's (past it, more cores buy almost nothing)
        best = min(range(1, staleness_limit + 1), key=lambda s: (idle(s, cluster.cores_per_node), s))
        busiest = 1 - idle(best, cluster.cores_per_node)
        choice = best, _fewest(lambda n: 1 - idle(best, n) >= busiest * (1 - NEAR_BEST), cluster.cores_per_node,
                               rule.per_node)  # fmt: skip
    staleness, per_node = choice
    config = replace(base, max_staleness=staleness, gym_workers=per_node * cluster.nodes)
    if on_try is not None:
        on_try(f"chosen: max_staleness {staleness}, {per_node} gym workers per node; simulating sync and async")
    summary = simulate_modes(card, stages, config, ("sync", "async"))
    (other,) = (s for s in SCHEDULES if s != schedule)
    if on_try is not None:
        on_try(f"simulating async under the {other} schedule at the same point")
    alternative = simulate_modes(card, stages, replace(config, schedule=other), ("async",))
    schedules = {schedule: _schedule_figures(summary.modes["async"], cluster.placement),
                 other: _schedule_figures(alternative.modes["async"], cluster.placement)}  # fmt: skip
    result = Plan(cluster, batch, group_size, target_idle, rule, per_node, staleness, reached, summary,
                  sorted((s, n, i) for (s, n), i in tried.items()), [], schedule, schedules)  # fmt: skip
    result.warnings.extend(_warnings(result))
    return result


def _schedule_figures(figures: ModeSummary, placement: str) -> dict[str, Any]:
    """A schedule's idle and what it dropped stale: the share of gym time where the simulation had
    tasks (its bias audit), else the share of trajectories generated."""
    if figures.bias is not None:
        return {"idle": idle_ratio(figures, placement), "dropped": figures.bias["gym_s_dropped_share"],
                "dropped_of": "gym time"}  # fmt: skip
    books = figures.accounting
    return {"idle": idle_ratio(figures, placement), "dropped": books["dropped_stale"] / max(books["generated"], 1),
            "dropped_of": "trajectories"}  # fmt: skip


def _fewest(good: Callable[[int], bool], most: int, guess: int) -> int:
    """The smallest n in [1, most] with good(n), given good(most) (more workers help).

    Each good(n) is a simulation, minutes long for a large cluster, so the search starts at
    `guess` (the sizing rule's answer, usually close), gallops away from it in doubling steps
    until the answer is bracketed, then bisects the bracket.
    """
    guess = min(max(guess, 1), most)
    step = 1
    if good(guess):  # the answer is guess or below
        high = guess
        while high - step >= 1 and good(high - step):
            high, step = high - step, step * 2
        low = max(high - step, 0)  # not good, or 0: below the range
    else:  # the answer is above guess
        low = guess
        while low + step < most and not good(low + step):
            low, step = low + step, step * 2
        high = min(low + step, most)
    while high - low > 1:  # good(high); low is not good (or 0)
        mid = (low + high) // 2
        if good(mid):
            high = mid
        else:
            low = mid
    return high


def _warnings(p: Plan) -> list[str]:
    found = []
    figures = p.summary.modes["async"]
    stage = figures.stage_per_step
    if p.cluster.placement == "disaggregated" and stage["generate"] > stage["train"]:
        found.append(
            f"rollout is slower than training (generation {stage['generate']:.2f} s vs training "
            f"{stage['train']:.2f} s per step): the trainer waits every step and step times can alternate "
            f"long/short (the depth-1 pipeline bubble; simulated: {figures.oscillation}). Give generation "
            "more accelerators or a faster profile, or generate less per step (--group, --batch); a larger "
            "max_staleness hides it only at the cost of staler samples."
        )
    if p.rule.per_node > p.cluster.cores_per_node:
        found.append(
            f"the sizing rule asks for {p.rule.per_node} gym workers per node but a node has "
            f"{p.cluster.cores_per_node} cores: add nodes or CPU-only gym nodes, or make the gym cheaper."
        )
    if not p.reached:
        found.append(
            f"no max_staleness up to {max(s for s, _, _ in p.tried)} brings the simulated idle ratio under "
            f"{p.target_idle:.0%}, even with every core a gym worker; the plan is the best found (the fewest "
            f"workers that keep the accelerators within {NEAR_BEST:.0%} of as busy as every core does)."
        )
    return found


def render(p: Plan, card_from: str, stages_from: str) -> list[str]:
    """The plan in lines of text, for the terminal."""
    c, r, sync, async_ = p.cluster, p.rule, p.summary.modes["sync"], p.summary.modes["async"]
    depth = p.summary.ready_depth["async"]
    rho = r.arrival_per_s * r.service_mean_s / (p.workers_per_node * c.nodes)
    lines = [
        f"card: {card_from}",
        f"stages: {stages_from}",
        f"cluster: {c.nodes} node(s) x {c.accelerators_per_node} accelerators x {c.cores_per_node} cores -> "
        f"{c.engines} rollout engine(s), {c.trainers} trainer replica(s) (placement {c.placement}); batch "
        f"{p.batch_groups} groups x {p.group_size}",
        f"sizing rule: lambda = {r.arrival_per_s:.1f} gym calls/s (step {r.step_time_s:.2f} s set by the "
        f"accelerators), E[S] = {r.service_mean_s:.3f} s -> n >= {HEADROOM} x lambda x E[S] = "
        f"{HEADROOM * r.arrival_per_s * r.service_mean_s:.1f}: {r.workers} gym workers in all, {r.per_node} per node",
        f"simulated: {p.workers_per_node} gym workers per node, max_staleness {p.max_staleness} "
        f"(rho = {rho:.2f}); target {IDLE_NAMES[c.placement]} {p.target_idle:.0%} "
        f"{'reached' if p.reached else 'NOT reached'}",
        f"buffer depth: {p.buffer_groups} groups ((max_staleness + 1) x batch may be in flight or ready); "
        f"ready queue at a take: mean {depth['mean']:.1f}, max {depth['max']}",
        *([f"predicted accelerator idle ratio: async {idle_ratio(async_, c.placement):.1%}, sync "
           f"{idle_ratio(sync, c.placement):.1%}"] if c.placement == "colocated" else []),
        f"predicted trainer idle ratio: async {async_.trainer_idle_ratio:.1%}, sync "
        f"{sync.trainer_idle_ratio:.1%}; step time async {async_.step_time_mean:.2f} s, sync "
        f"{sync.step_time_mean:.2f} s; speedup {(p.summary.comparison or {})['speedup']:.2f}x; "
        f"{async_.samples_per_s:.1f} samples/s",
    ]
    lines.append(_schedule_line(p))
    for staleness, per_node, idle in p.tried:
        if staleness < p.max_staleness and per_node == c.cores_per_node:
            lines.append(f"rejected: max_staleness {staleness} leaves it idle {idle:.1%} even with "
                         f"{per_node} gym workers per node")  # fmt: skip
    return lines + [f"warning: {w}" for w in p.warnings]


def _schedule_line(p: Plan) -> str:
    fifo, aware = p.schedules["fifo"], p.schedules["cost-aware"]
    name = IDLE_NAMES[p.cluster.placement].split(" (")[0]
    figures = (f"simulated async {name} {aware['idle']:.1%} under cost-aware vs {fifo['idle']:.1%} under fifo, "
               f"{aware['dropped_of']} dropped stale {aware['dropped']:.1%} vs {fifo['dropped']:.1%}")  # fmt: skip
    if p.recommended_schedule == "cost-aware":
        return f"schedule: cost-aware recommended ({figures}): `harness benchmark --schedule cost-aware`"
    return f"schedule: fifo ({figures}; cost-aware is recommended where it holds the target as well and drops less)"


def to_json(p: Plan, card_from: str, stages_from: str) -> dict[str, Any]:
    return {
        "card": card_from, "stages": stages_from, "cluster": {
            "nodes": p.cluster.nodes, "accelerators_per_node": p.cluster.accelerators_per_node,
            "cores_per_node": p.cluster.cores_per_node, "engines": p.cluster.engines, "trainers": p.cluster.trainers,
            "placement": p.cluster.placement},
        "batch_groups": p.batch_groups, "group_size": p.group_size, "target_idle": p.target_idle,
        "sizing_rule": vars(p.rule), "workers_per_node": p.workers_per_node, "max_staleness": p.max_staleness,
        "buffer_groups": p.buffer_groups, "reached": p.reached, "simulated": p.summary.to_json(),
        "idle_ratio": IDLE_NAMES[p.cluster.placement],
        "tried": [{"max_staleness": s, "workers_per_node": n, "idle_ratio": i} for s, n, i in p.tried],
        "warnings": p.warnings, "schedule": p.schedule, "schedules": p.schedules,
        "recommended_schedule": p.recommended_schedule,
    }  # fmt: skip
