"""One GRPO run, synchronous or asynchronous, over the same components.

    tasks -> rollout threads -> gym pool -> ready buffer -> trainer -> update_weights -> ...

Both modes run the same code. Sync is max_staleness 0: admission control then lets no group
of step s+1 start before the weights of step s are published, which is the barrier of
synchronous GRPO. Async allows groups up to `max_staleness` versions behind the trainer, so
generation and gym work overlap training.

Where the policy's emulated stages share one accelerator (placement `colocated`), the
policy's engine holds it around each engine call and the trainer around actor_train with
update_weights, so the two never overlap; the trainer's wait for it is an `accelerator_wait`
span. The policy reports each engine call, which the run records as a `generate` span on
resource "rollout": the engine's busy time, whichever requests a call served.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gyms import Gym
from gyms.steps import WorkerNode
from trainer.buffer import Accounting, ReadyBuffer
from trainer.policies.base import Policy
from trainer.rollout import CostPredictor, Rollout, TaskSampler, slow_first_sampler
from trainer.rules.schedule import DEFAULT_SCHEDULE, check_schedule
from trainer.step_pool import StepPool
from trainer.timeline import Timeline
from trainer.types import Fate, Trajectory


@dataclass(frozen=True)
class RunConfig:
    mode: str = "async"  # "sync" or "async"
    steps: int = 8
    batch_groups: int = 4  # prompts per optimizer step
    group_size: int = 4  # samples per prompt (G)
    max_staleness: int = 1  # async only; sync is 0 by definition
    oversample: int = 0  # groups in flight beyond what the steps need; a step trains on the first to complete
    rollout_threads: int | None = None  # one group each; default: enough for every admitted group
    seed: int = 0
    split: str = "train"
    schedule: str = DEFAULT_SCHEDULE  # fifo or cost-aware (trainer/rules/schedule.py)

    def __post_init__(self) -> None:
        if self.mode not in ("sync", "async"):
            raise ValueError(f"mode is 'sync' or 'async', got {self.mode!r}")
        for name in ("steps", "batch_groups", "group_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("max_staleness", "oversample"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        check_schedule(self.schedule)

    @property
    def staleness(self) -> int:
        return 0 if self.mode == "sync" else self.max_staleness

    @property
    def threads(self) -> int:
        """Rollout threads, one group each (gym workers are the pool's processes)."""
        return self.rollout_threads or self.batch_groups * (self.staleness + 1) + self.oversample


@dataclass
class StepRecord:
    step: int
    end: float  # on the run's timeline
    step_time: float
    train_wait: float
    actor_train: float
    update_weights: float
    reward_mean: float
    pass_rate: float
    trajectories: int
    staleness_mean: float
    buffer_depth: int
    stats: dict[str, float] = field(default_factory=dict)


@dataclass
class RunResult:
    config: RunConfig
    steps: list[StepRecord]
    timeline: Timeline
    accounting: Accounting
    staleness: dict[int, int]
    depth_series: list[tuple[float, int]]
    pool_workers: int
    wall: float
    worker_nodes: list[WorkerNode] = field(default_factory=list)  # where each gym worker ran, over time
    placement: str | None = None  # the policy's: colocated, disaggregated, or None (real hardware)
    fates: list[Fate] = field(default_factory=list)  # one per generated trajectory (empty: not recorded)


def run(
    gym: Gym,
    policy: Policy,
    pool: StepPool,
    config: RunConfig,
    on_step: Callable[[StepRecord], None] | None = None,
    task_costs: Mapping[str, float] | None = None,
) -> RunResult:
    """One run of `config`. `task_costs`: a cost card's predicted gym seconds per trajectory, by
    task (the prior of trainer/rules/cost.py); without it, each task's cost is learned from the run."""
    costs = CostPredictor(task_costs)
    tasks = (slow_first_sampler(gym.tasks(config.split), config.seed, config.batch_groups, costs)
             if config.schedule == "cost-aware" else TaskSampler(gym.tasks(config.split), config.seed))  # fmt: skip
    # So is the policy's per-task set-up, for every task admission lets the run start (a group
    # that errored or was dropped frees a place: its later task is set up when drawn).
    policy.prepare(tasks.first((config.steps + config.staleness + 1) * config.batch_groups + config.oversample))
    timeline = Timeline()
    buffer = ReadyBuffer(config.batch_groups, config.group_size, config.staleness, config.oversample, config.schedule)
    depth_series: list[tuple[float, int]] = []
    rollout = Rollout(gym, pool, policy, buffer, timeline, tasks, config.group_size, depth_series, costs,
                      config.schedule)  # fmt: skip
    # Rollout threads run beside the trainer under every executor: they only coordinate
    # (generation runs on the engine, gym steps in the pool, which is what scales out).
    threads = [
        threading.Thread(target=rollout.thread, name=f"rollout-{i}", daemon=True) for i in range(config.threads)
    ]
    records: list[StepRecord] = []
    previous_end = 0.0
    with policy.reporting_to(_TimelineEvents(timeline)):
        for t in threads:
            t.start()
        try:
            for step in range(config.steps):
                with timeline.span("trainer", "train_wait", step):
                    groups = buffer.take_batch(step)
                depth_series.append((timeline.now(), buffer.depth()))
                for group in groups:
                    for traj in group.trajectories:
                        traj.check_one_version()
                        traj.check_token_prefix()
                asked = timeline.now()
                with policy.accelerator():  # colocated: after the generate call that holds it
                    if policy.placement == "colocated":
                        timeline.add("trainer", "accelerator_wait", asked, timeline.now(), step)
                    with timeline.span("trainer", "actor_train", step):
                        stats = policy.train_step(groups)
                    with timeline.span("trainer", "update_weights", step):
                        version = policy.update_weights()
                buffer.advance(version)
                end = timeline.now()
                records.append(_record(step, end, end - previous_end, timeline, groups, buffer.depth(), stats))
                previous_end = end
                if on_step is not None:
                    on_step(records[-1])
        finally:
            buffer.stop()
            for t in threads:
                t.join()
    return RunResult(
        config, records, timeline, buffer.close_books(), dict(buffer.staleness), depth_series, pool.workers,
        previous_end, list(pool.worker_nodes), policy.placement, list(buffer.fates),
    )  # fmt: skip


def _record(step, end, step_time, timeline, groups, depth, stats) -> StepRecord:
    def last(kind: str) -> float:
        return timeline.select("trainer", kind)[-1].duration

    trajs = [(t, step - g.version) for g in groups for t in g.trajectories]
    n = max(len(trajs), 1)
    return StepRecord(
        step=step,
        end=end,
        step_time=step_time,
        train_wait=last("train_wait"),
        actor_train=last("actor_train"),
        update_weights=last("update_weights"),
        reward_mean=sum(t.reward for t, _ in trajs) / n,
        pass_rate=sum(t.outcome.value == "pass" for t, _ in trajs) / n,
        trajectories=len(trajs),
        staleness_mean=sum(s for _, s in trajs) / n,
        buffer_depth=depth,
        stats={**stats, **multi_turn_counts([t for t, _ in trajs])},
    )


def multi_turn_counts(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """A step's statistics beside the learner's, of its trained trajectories: how many span several turns, how many turns' prompts were checked
    against the sequence before them and matched it, and how many ended at the context's limit."""
    matches = [ok for t in trajectories for ok in t.prefix_matches()]
    return {
        "multi_turn_trajectories": float(sum(len(t.turns) > 1 for t in trajectories)),
        "prefix_checks": float(len(matches)),
        "prefix_matches": float(sum(matches)),
        "truncated_by_context": float(sum(t.context_full for t in trajectories)),
    }


class _TimelineEvents:
    """The policy's engine calls and weight swaps, as spans of the run's timeline."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline

    def engine_call(self, start: float, end: float, version: int) -> None:
        self.timeline.add("rollout", "generate", self.timeline.at(start), self.timeline.at(end), version)

    def weight_sync(self, kind: str, start: float, end: float, version: int) -> None:
        self.timeline.add("engine-weights", kind, self.timeline.at(start), self.timeline.at(end), version)
