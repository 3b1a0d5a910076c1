"""`harness plan`: gym workers per node, max staleness and buffer depth for a cluster.

How accelerators become pipeline parts (the mapping the simulator is given), by placement
(trainer/rules/placement.py, the same meaning as benchmark's and simulate's):
* colocated (the default): every accelerator is a rollout engine and a data-parallel trainer
  replica, and a train step holds them all; disaggregated: half the accelerators (at least one)
  are engines, the rest trainer replicas. An engine generates at the profile's rate; replicas
  share the per-token training time of a batch (perfect scaling: an optimistic assumption).
* The batch defaults to 4 groups per engine, the benchmark's 4 x 4 per engine, so each
  engine and trainer replica sees the profile's reference load.
* The gym workers of every node, CPU-only gym nodes included, serve one FIFO queue (a shared
  queue or a balancer); those off the trainer's node pay the dispatch (harness/sim/queue.py).

The search: for max_staleness 1, 2, ... the fewest gym workers per node whose simulated async
idle ratio (of the kind `idle_kind` names: `default_idle` is what gym work leaves idle) is at or
under the target, or, where every core of the accelerator nodes falls short and the cluster may
add CPU-only gym nodes, every core and the fewest gym nodes; the first staleness that reaches it
wins, since staler samples cost learning and cores cost little. Beside it, the queueing rule's answer:
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


IDLES = ("trainer", "accelerator")
IDLE_LABELS = {"trainer": "trainer idle ratio", "accelerator": "accelerator idle ratio"}


def default_idle(placement: str) -> str:
    """The idle ratio a target means unless told: what gym workers can remove. A colocated pool's
    (its trainer waits by design while its accelerators generate, which no gym worker changes),
    else the trainer's."""
    return "accelerator" if placement == "colocated" else "trainer"


def idle_of(figures: ModeSummary, idle: str, cluster: Cluster) -> float:
    """A mode's idle ratio of either kind. A colocated pool's accelerator idle is the metric's
    (neither generating nor training); with accelerators of their own it is the accelerator-weighted
    mean of the trainers' idle (their wait) and the engines' (rollout idle)."""
    if idle == "trainer":
        return figures.trainer_idle_ratio
    if cluster.placement == "colocated":
        assert figures.accelerator_idle_ratio is not None
        return figures.accelerator_idle_ratio
    engines, trainers = cluster.engines, cluster.trainers
    return (trainers * figures.trainer_idle_ratio + engines * figures.rollout_idle_ratio) / (engines + trainers)


NEAR_BEST = 0.01  # an unreachable target: busy time within 1 % of every core's is as good
HEADROOM = 1.3  # the design's rule: utilisation rho = lambda E[S] / n stays near 1 / 1.3
GROUPS_PER_ENGINE = 4
MAX_GYM_NODES = 256  # the most CPU-only gym nodes a plan considers


@dataclass(frozen=True)
class Cluster:
    nodes: int  # accelerator nodes; the trainer runs on the first
    accelerators_per_node: int
    cores_per_node: int
    placement: str = DEFAULT_PLACEMENT
    gym_node_cores: int = 0  # cores of a CPU-only gym node the plan may add; 0: none may be added
    max_gym_nodes: int = MAX_GYM_NODES

    def __post_init__(self) -> None:
        for flag, value in (("--nodes", self.nodes), ("--accelerators", self.accelerators_per_node),
                            ("--cores-per-node", self.cores_per_node), ("--max-gym-nodes", self.max_gym_nodes)):  # fmt: skip
            if value < 1:
                raise ValueError(f"{flag} must be at least 1, got {value}")
        if self.gym_node_cores < 0:
            raise ValueError(f"--gym-node-cores must be at least 0, got {self.gym_node_cores}")
        engines_and_trainers(self.placement, self.accelerators)  # the placement's checks

    def gym_pool(self, per_node: int, gym_nodes: int) -> tuple[int, int]:
        """Gym workers in all, and how many of them are off the trainer's node (they pay the dispatch)."""
        extra = gym_nodes * self.gym_node_cores
        return self.nodes * per_node + extra, (self.nodes - 1) * per_node + extra

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
    reached: bool  # the simulated idle is at or under the target
    summary: Simulated  # simulate_modes at the recommendation, sync and async
    tried: list[tuple[int, int, int, float]]  # (max_staleness, workers per node, gym nodes, async idle)
    warnings: list[str]
    schedule: str = DEFAULT_SCHEDULE  # the search's
    idle: str = "accelerator"  # which idle ratio the target means (IDLES)
    gym_nodes: int = 0  # CPU-only gym nodes added
    config: SimConfig = field(default_factory=SimConfig)  # the simulation at the recommendation
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
    idle_kind: str | None = None,
) -> Plan:
    """`on_try` hears one line per simulation as it finishes (a large cluster takes minutes).
    `idle_kind`: which idle ratio `target_idle` bounds (IDLES; None: `default_idle`)."""
    if not 0 < target_idle < 1:
        raise ValueError(f"--target-idle is a ratio in (0, 1), got {target_idle}")
    if staleness_limit < 1:
        raise ValueError(f"--max-staleness-limit must be at least 1, got {staleness_limit}")
    kind = idle_kind or default_idle(cluster.placement)
    if kind not in IDLES:
        raise ValueError(f"--idle is {' or '.join(IDLES)}, got {kind!r}")
    batch = GROUPS_PER_ENGINE * cluster.engines if batch_groups is None else batch_groups
    base = SimConfig(mode="async", steps=steps, batch_groups=batch, group_size=group_size, engines=cluster.engines,
                     trainers=cluster.trainers, seed=seed, placement=cluster.placement, schedule=schedule)  # fmt: skip
    tried: dict[tuple[int, int, int], float] = {}

    def config_at(staleness: int, per_node: int, gym_nodes: int) -> SimConfig:
        workers, remote = cluster.gym_pool(per_node, gym_nodes)
        return replace(base, max_staleness=staleness, gym_workers=workers, remote_gym_workers=remote)

    def idle(staleness: int, per_node: int, gym_nodes: int = 0) -> float:
        key = staleness, per_node, gym_nodes
        if key not in tried:
            started = time.monotonic()
            config = replace(config_at(*key), record_fates=False)
            tried[key] = idle_of(simulate_modes(card, stages, config, ("async",)).modes["async"], kind, cluster)
            if on_try is not None:
                nodes = f", {gym_nodes} gym nodes" if cluster.gym_node_cores else ""
                on_try(f"simulated max_staleness {staleness}, {per_node} gym workers per node{nodes}: async "
                       f"{IDLE_LABELS[kind]} {tried[key]:.1%} ({time.monotonic() - started:.2f} s)")  # fmt: skip
        return tried[key]

    rule = sizing_rule(card, stages, cluster, batch, group_size)
    cores, most = cluster.cores_per_node, cluster.max_gym_nodes if cluster.gym_node_cores else 0
    guess = max(0, math.ceil((rule.workers - cluster.nodes * cores) / max(cluster.gym_node_cores, 1)))
    choice = None
    for staleness in range(1, staleness_limit + 1):
        if idle(staleness, cores) <= target_idle:  # the accelerator nodes' cores suffice: the fewest of them
            choice = staleness, _fewest(lambda n, s=staleness: idle(s, n) <= target_idle, cores, rule.per_node), 0
        elif most and idle(staleness, cores, most) <= target_idle:  # every core of those, and the fewest gym nodes
            choice = staleness, cores, _fewest(lambda g, s=staleness: idle(s, cores, g) <= target_idle, most, guess)
        if choice is not None:
            break
    reached = choice is not None
    if choice is None:  # the target is out of reach: the best staleness, with the fewest workers that keep
        # the accelerators busy within NEAR_BEST of every core's (past it, more cores buy almost nothing)
        best = min(range(1, staleness_limit + 1), key=lambda s: (idle(s, cores, most), s))
        busiest = 1 - idle(best, cores, most)
        if most:
            choice = best, cores, _fewest(lambda g: 1 - idle(best, cores, g) >= busiest * (1 - NEAR_BEST), most, guess)
            if choice[2] == 1 and 1 - idle(best, cores, 0) >= busiest * (1 - NEAR_BEST):
                choice = best, cores, 0
        else:
            choice = best, _fewest(lambda n: 1 - idle(best, n) >= busiest * (1 - NEAR_BEST), cores, rule.per_node), 0
    staleness, per_node, gym_nodes = choice
    config = config_at(staleness, per_node, gym_nodes)
    if on_try is not None:
        on_try(f"chosen: max_staleness {staleness}, {per_node} gym workers per node, {gym_nodes} gym nodes; "
               "simulating sync and async")  # fmt: skip
    summary = simulate_modes(card, stages, config, ("sync", "async"))
    (other,) = (s for s in SCHEDULES if s != schedule)
    if on_try is not None:
        on_try(f"simulating async under the {other} schedule at the same point")
    alternative = simulate_modes(card, stages, replace(config, schedule=other), ("async",))
    schedules = {schedule: _schedule_figures(summary.modes["async"], kind, cluster),
                 other: _schedule_figures(alternative.modes["async"], kind, cluster)}  # fmt: skip
    result = Plan(cluster, batch, group_size, target_idle, rule, per_node, staleness, reached, summary,
                  sorted((s, n, g, i) for (s, n, g), i in tried.items()), [], schedule, idle=kind,
                  gym_nodes=gym_nodes, config=config, schedules=schedules)  # fmt: skip
    result.warnings.extend(_warnings(result))
    return result


def _schedule_figures(figures: ModeSummary, kind: str, cluster: Cluster) -> dict[str, Any]:
    """A schedule's idle and what it dropped stale: the share of gym time where the simulation had
    tasks (its bias audit), else the share of trajectories generated."""
    if figures.bias is not None:
        return {"idle": idle_of(figures, kind, cluster), "dropped": figures.bias["gym_s_dropped_share"],
                "dropped_of": "gym time"}  # fmt: skip
    books = figures.accounting
    return {"idle": idle_of(figures, kind, cluster), "dropped": books["dropped_stale"] / max(books["generated"], 1),
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
    gym_nodes = p.cluster.gym_node_cores > 0
    if p.rule.per_node > p.cluster.cores_per_node and not gym_nodes:
        found.append(
            f"the sizing rule asks for {p.rule.per_node} gym workers per node but a node has "
            f"{p.cluster.cores_per_node} cores: add CPU-only gym nodes (--gym-node-cores C lets the plan size them), "
            "or make the gym cheaper."
        )
    if not p.reached:
        room = (f"every core a gym worker and up to {p.cluster.max_gym_nodes} gym nodes" if gym_nodes
                else "every core a gym worker")  # fmt: skip
        found.append(
            f"no max_staleness up to {max(s for s, *_ in p.tried)} brings the simulated async {IDLE_LABELS[p.idle]} "
            f"under {p.target_idle:.0%}, even with {room}; the plan is the best found (the fewest workers that keep "
            f"the accelerators within {NEAR_BEST:.0%} of as busy as all of them do)."
        )
    return found


def details(p: Plan) -> list[str]:
    """How the planner got to its recommendation, for the terminal: the sizing rule, the buffer, the
    schedule and the staleness it rejected. The prediction itself is harness/predict.py's block."""
    r, depth = p.rule, p.summary.ready_depth["async"]
    rho = r.arrival_per_s * r.service_mean_s / p.config.gym_workers
    lines = [
        f"sizing rule: lambda = {r.arrival_per_s:.1f} gym calls/s (step {r.step_time_s:.2f} s set by the "
        f"accelerators), E[S] = {r.service_mean_s:.3f} s -> n >= {HEADROOM} x lambda x E[S] = "
        f"{HEADROOM * r.arrival_per_s * r.service_mean_s:.1f}: {r.workers} gym workers in all, {r.per_node} per node; "
        f"at the recommendation {p.config.gym_workers} (rho = {rho:.2f})",
        f"buffer depth: {p.buffer_groups} groups ((max_staleness + 1) x batch may be in flight or ready); "
        f"ready queue at a take: mean {depth['mean']:.1f}, max {depth['max']}",
        _schedule_line(p),
    ]
    cores = p.cluster.cores_per_node
    top = p.cluster.max_gym_nodes if p.cluster.gym_node_cores else 0
    for staleness, per_node, gym_nodes, idle in p.tried:
        if staleness < p.max_staleness and per_node == cores and gym_nodes == top:
            room = f" and {gym_nodes} gym nodes" if top else ""
            lines.append(f"rejected: max_staleness {staleness} leaves the {IDLE_LABELS[p.idle]} at {idle:.1%} even "
                         f"with {per_node} gym workers per node{room}")  # fmt: skip
    return lines


def _schedule_line(p: Plan) -> str:
    fifo, aware = p.schedules["fifo"], p.schedules["cost-aware"]
    figures = (f"simulated async {IDLE_LABELS[p.idle]} {aware['idle']:.1%} under cost-aware vs {fifo['idle']:.1%} under fifo, "
               f"{aware['dropped_of']} dropped stale {aware['dropped']:.1%} vs {fifo['dropped']:.1%}")  # fmt: skip
    if p.recommended_schedule == "cost-aware":
        return f"schedule: cost-aware recommended ({figures}): `harness benchmark --schedule cost-aware`"
    return f"schedule: fifo ({figures}; cost-aware is recommended where it holds the target as well and drops less)"


def to_json(p: Plan) -> dict[str, Any]:
    """How the planner got there (`details`), for `harness plan --json` beside the prediction."""
    return {
        "sizing_rule": vars(p.rule), "buffer_groups": p.buffer_groups, "simulated": p.summary.to_json(),
        "tried": [{"max_staleness": s, "workers_per_node": n, "gym_nodes": g, "idle": i} for s, n, g, i in p.tried],
        "schedules": p.schedules, "recommended_schedule": p.recommended_schedule,
    }  # fmt: skip


# -- the cheapest mix --------------------------------------------------------------------------


@dataclass(frozen=True)
class Prices:
    accelerator_node: float  # per node-hour, any currency
    gym_node: float

    @classmethod
    def parse(cls, text: str) -> Prices:
        """accel=PRICE,cpu=PRICE: what an accelerator node and a CPU-only gym node cost an hour."""
        form = "give --price accel=PRICE,cpu=PRICE (per node-hour), e.g. accel=98.3,cpu=4.1"
        pairs = dict(part.partition("=")[::2] for part in text.split(","))
        try:
            prices = {k.strip(): float(v) for k, v in pairs.items()}
        except ValueError:
            raise ValueError(f"{text!r}: {form}") from None
        if set(prices) != {"accel", "cpu"} or min(prices.values()) < 0:
            raise ValueError(f"{text!r}: {form}")
        return cls(prices["accel"], prices["cpu"])


@dataclass(frozen=True)
class Mix:
    nodes: int  # accelerator nodes
    gym_nodes: int
    reached: bool
    samples_per_s: float  # async, simulated
    per_hour: float
    per_1k_samples: float


def mixes(card: CostCard, stages: Stages, cluster: Cluster, prices: Prices, batch_groups: int | None, **search: Any,
          ) -> list[Mix]:  # fmt: skip
    """Each mix of 1 to `cluster.nodes` accelerator nodes, with the fewest gym nodes the search adds, at
    one batch (`batch_groups`, else the default of `cluster.nodes`' engines: the same training run on
    fewer or more accelerators), priced; cheapest per trained sample first among those that reach
    the target, then the rest."""
    batch = batch_groups or GROUPS_PER_ENGINE * cluster.engines
    found = []
    for nodes in range(1, cluster.nodes + 1):
        p = plan(card, stages, replace(cluster, nodes=nodes), batch, **search)
        rate = p.summary.modes["async"].samples_per_s
        hour = nodes * prices.accelerator_node + p.gym_nodes * prices.gym_node
        found.append(Mix(nodes, p.gym_nodes, p.reached, rate, hour, hour / (rate * 3.6) if rate > 0 else math.inf))
    return sorted(found, key=lambda m: (not m.reached, m.per_1k_samples, m.nodes))


def mix_lines(found: list[Mix]) -> list[str]:
    lines = ["mixes (cheapest per trained sample first among those that reach the target):"]
    for m in found:
        lines.append(f"  {m.nodes} accelerator node(s) + {m.gym_nodes} gym node(s): {m.per_hour:.2f}/h, "
                     f"{m.samples_per_s:.1f} samples/s async, {m.per_1k_samples:.3f} per 1k samples"
                     f"{'' if m.reached else ' (target NOT reached)'}")  # fmt: skip
    return lines
