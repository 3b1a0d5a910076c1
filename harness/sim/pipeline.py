"""The pipeline as a discrete-event simulation, with trainer/'s rules (trainer/rules/).

* Admission, staleness drops and the books: the real buffer's rules (trainer/rules/buffer.py),
  over-sampling included, with `rollout_threads` threads (by default batch_groups x
  (max_staleness + 1) + oversample, as RunConfig). Sync is max_staleness 0.
* A group pins the trainer's version when it starts. Each of its episodes is a state machine
  of its own, as in rollout.py: it asks its engine for a turn, the answer's gym step queues in
  the gym pool (n workers, FIFO), and when the step returns the episode asks for its next turn
  or ends; the group completes when its last episode ends. No round barrier.
* Each engine batches continuously, by the replay policy's rule (trainer/rules/batching.py;
  sim/engine.py keeps its clock). A group's requests go to engine (group number mod engines);
  the real trainer has one. A request's time is a drawn response time plus its turn's prefill
  beyond the first prompt, the prompt growing by the mean response and the card's feedback
  tokens each turn (trainer/rules/context.py, through `Stages.prefill_s`).
* The trainer drops groups staler than max_staleness (they count as wasted for admission),
  trains on batch_groups groups (one sequence per trajectory, as long as its turns made it:
  `Stages.train_s`), publishes the next version. Which groups, by the schedule
  (trainer/rules/schedule.py, `SimConfig.schedule`): fifo takes them in completion order;
  cost-aware asks `BufferRules.choose` (deadline batching) with the versions of the groups
  ready and in rollout, as the real buffer does.
* Tasks, where the card has per-task figures (`CostCard.by_task`, each task's mean step
  seconds): each group draws a task from the card's tasks in a seeded shuffled cycle, as
  trainer/rollout.py's TaskSampler does (the sampler itself; a re-simulation replays the run's
  recorded order instead, `SimConfig.task_order`), and a gym step of task t takes a service time
  drawn from the card's one distribution, scaled by by_task[t] / (the mean of by_task over the
  tasks). Its episodes take the task's own turns where the card has them (`turns_by_task`, from a
  run: a task's answers, and so its turns, are its own), else the card's. The model's
  assumption: a task scales the gym-wide distribution (its shape and the error rate are the
  card's, whatever the task), and every step of a task is that much slower, so a slow task is
  slow in every episode of its group. Tasks come equally often, so the gym-wide mean step is kept.
  This is what makes the slow-sample bias: a slow task's group completes late, and under fifo
  at bounded staleness it is the one overtaken and dropped. A simulated run then has a fate
  for each trajectory (`RunResult.fates`: task, version, turns, gym seconds, trained at a
  step, dropped stale, errored or in flight at the end), so trainer/bias.py's audit reads it as
  a real run's; the simulator has no rewards (0.0) and no outcomes. A card without per-task
  figures simulates as before: the same draws, the same results, no fates.
* Cost-aware (`schedule="cost-aware"`), beside deadline batching: slow-first starts (tasks
  drawn in blocks of batch_groups from the same seeded order, each block predicted-slowest
  first, `slow_first`) and the deadline-first gym queue (`step_priority`: the group's version,
  then its predicted cost; harness/sim/queue.py `PriorityServers`). The simulator's predictor
  is the card's figure for the task (`CostCard.task_costs`), which orders tasks exactly as
  their simulated costs do; the real run learns its predictions as it goes (trainer/rules/cost.py),
  from the card as prior where it has one.
* Placement, as the replay policy's: `disaggregated` (the default) trains on accelerators of
  its own; `colocated` has one accelerator pool (one engine, one trainer) that engine calls
  and training steps take in turn, in the order they ask for it.
* A pool that spans nodes: `remote_gym_workers` of the workers pay `dispatch_s` per step (the Ray
  round trip, harness/sim/queue.py), counted as their busy time. Fates' gym seconds are service alone.

* What a published system does, where a user states it: `pause_engines_on_update` (disaggregated
  engines hold their call in progress for the weight load and start none during it),
  `group_start_interval_s` (a rollout worker starts at most one group per interval) and
  `one_call_per_start` (the requests of the groups that start together make one engine call).

Events: an engine call ends, an episode's gym step ends, a training step ends. FIFO queue waits
need no events (harness/sim/queue.py), so a simulated hour of a large cluster takes seconds; the
cost-aware priority queue starts each waiting step when a step ends, at that step's event.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import islice
from typing import Any

import numpy as np

from harness.costcard import CostCard
from harness.sim.engine import BatchingEngine
from harness.sim.queue import DISPATCH_S, PriorityServers, servers
from harness.sim.stages import Stages
from trainer import types
from trainer.pipeline import RunConfig, RunResult, StepRecord
from trainer.rollout import TaskSampler
from trainer.rules.buffer import Books, BufferRules
from trainer.rules.placement import DEFAULT_PLACEMENT, PLACEMENTS
from trainer.rules.schedule import DEFAULT_SCHEDULE, slow_first, step_priority
from trainer.timeline import Timeline
from trainer.types import Fate

CALL_ENDED, STEPPED, TRAINED, STARTS, PAUSED, RESUMED, CALLS = 0, 1, 2, 3, 4, 5, 6


@dataclass(frozen=True)
class SimConfig:
    mode: str = "async"
    steps: int = 10  # optimizer steps, the first one warm-up (as a benchmark)
    batch_groups: int = 4
    group_size: int = 4
    max_staleness: int = 1  # async only; sync is 0
    oversample: int = 0  # groups in flight beyond what the steps need (trainer/buffer.py)
    gym_workers: int = 2
    engines: int = 1  # rollout engines, each batching continuously
    trainers: int = 1  # data-parallel trainer replicas: they share the per-turn training time
    rollout_threads: int | None = None  # one group each; default as RunConfig.threads
    duration_s: float | None = None  # else stop at the first step that ends after this time
    seed: int = 0
    # colocated: one pool of accelerators, each an engine and a trainer replica, and a train step
    # holds them all (generation and training never overlap); disaggregated: each its own
    placement: str = DEFAULT_PLACEMENT
    schedule: str = DEFAULT_SCHEDULE  # fifo or cost-aware (trainer/rules/schedule.py), checked as RunConfig's
    # The order the sampler cycles the card's tasks in, as a run recorded it (harness simulate --run):
    # a real run's order is its seed's, the same in every repeat, so its re-simulations keep it and
    # vary the other draws. Empty: the card's tasks shuffled by the seed. The card's tasks it leaves
    # out follow it, sorted.
    task_order: tuple[str, ...] = ()
    # Each trajectory's fate, where the card has tasks; off, a run costs less (harness plan's search
    # reads the idle ratio alone) and its result has no fates, so no bias audit
    record_fates: bool = True
    # A pool that spans nodes (harness/sim/queue.py): this many of gym_workers sit on nodes other than
    # the trainer's, and a step there costs dispatch_s on top of its service (None: DISPATCH_S, measured)
    remote_gym_workers: int = 0
    dispatch_s: float | None = None
    # A rollout worker that starts at most one new group per this many seconds (slime's fully async
    # worker sleeps 1 s after each start); 0: every group admission allows starts at once
    group_start_interval_s: float = 0.0
    # Disaggregated: the rollout engines pause while update_weights loads the new weights into them
    # (slime's engines do): a call in progress is held for the load, and none starts during it
    pause_engines_on_update: bool = False
    # The requests of the groups that start at one instant make one engine call, as a rollout that
    # submits a whole batch in one generate call does (verl's one-step-off: one generate_sequences
    # per step); off, each request finds the engine idle or busy as it comes (the replay policy's
    # threads): the first starts a call alone, the others join it while it is latency-bound
    one_call_per_start: bool = False

    def __post_init__(self) -> None:
        self.run_config(self.steps)  # RunConfig's checks
        if self.placement not in PLACEMENTS:
            raise ValueError(f"--placement is colocated or disaggregated, got {self.placement!r}")
        if self.steps < 2:
            raise ValueError("steps must be at least 2: the first step is warm-up")
        for name in ("gym_workers", "engines", "trainers", "rollout_threads"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
        if not 0 <= self.remote_gym_workers <= self.gym_workers:
            raise ValueError(f"--remote-gym-workers must be between 0 and --gym-workers ({self.gym_workers}), "
                             f"got {self.remote_gym_workers}")  # fmt: skip
        if self.dispatch_s is not None and not 0 <= self.dispatch_s < math.inf:
            raise ValueError(f"--dispatch-s must be a number of seconds, 0 or more, got {self.dispatch_s}")
        if not 0 <= self.group_start_interval_s < math.inf:
            raise ValueError(f"--group-start-interval-s must be a number of seconds, 0 or more, "
                             f"got {self.group_start_interval_s}")  # fmt: skip
        if self.pause_engines_on_update and self.placement != "disaggregated":
            raise ValueError("--pause-engines-on-update is for disaggregated placement: colocated engines "
                             "never run during update_weights")  # fmt: skip
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError(f"--duration-s must be positive, got {self.duration_s}")
        if self.placement == "colocated" and self.engines != self.trainers:
            raise ValueError(f"colocated placement is one pool whose accelerators each generate and train: "
                             f"--engines and --trainers must be equal (got {self.engines} and {self.trainers})")  # fmt: skip

    def run_config(self, steps: int) -> RunConfig:
        return RunConfig(self.mode, steps, self.batch_groups, self.group_size, self.max_staleness,
                         oversample=self.oversample, rollout_threads=self.rollout_threads, seed=self.seed,
                         schedule=self.schedule)  # fmt: skip


class _Group:
    __slots__ = ("version", "open", "trainable", "errored", "train_s")

    def __init__(self, version: int, open_: int, trainable: int, errored: int, train_s: float) -> None:
        self.version = version
        self.open = open_  # episodes not yet ended
        self.trainable = trainable
        self.errored = errored
        self.train_s = train_s  # training its trainable trajectories' sequences, on one trainer


class _Episode:
    __slots__ = ("group", "engine", "calls", "turn")

    def __init__(self, group: _Group, engine: BatchingEngine[_Episode], calls: int) -> None:
        self.group = group
        self.engine = engine  # its group's
        self.calls = calls  # gym calls left: drawn turns, cut short at an infrastructure error
        self.turn = 1  # the turn it asks for next


# A run with tasks or the cost-aware schedule ("tracked") keeps more of each group and episode:
# its task, its fates' figures, its gym steps' priority. A plain run (fifo, a card without tasks)
# keeps what it always kept, on an event loop of its own, so that it costs what it did.


class _TrackedGroup(_Group):
    __slots__ = ("number", "task", "predicted", "priority", "episodes")

    def track(self, number: int, task: str, predicted: float | None) -> None:
        self.number = number  # in the order groups start
        self.task = task  # "" where the card has no tasks
        self.predicted = predicted  # the task's predicted gym seconds per trajectory; None: unknown
        self.priority = step_priority(self.version, predicted)  # its gym steps' place in cost-aware's queue
        self.episodes: list[_TrackedEpisode] = []


class _TrackedEpisode(_Episode):
    __slots__ = ("scale", "step_s", "gym_s", "errored")

    def __init__(self, group: _TrackedGroup, engine: BatchingEngine[_Episode], calls: int, scale: float,
                 errored: bool) -> None:  # fmt: skip
        self.group, self.engine, self.calls, self.turn = group, engine, calls, 1  # as _Episode
        self.scale = scale  # its task's: a step's service is a draw times this
        self.step_s = 0.0  # the service of its step in the gym
        self.gym_s = 0.0  # the service of its steps that ended
        self.errored = errored  # ends in an infrastructure error

    @property
    def turns(self) -> int:
        """Turns whose gym step ended (the one in the gym, or waiting for its answer, is not yet one)."""
        return self.turn - (1 if self.calls else 0)


def simulate(card: CostCard, stages: Stages, config: SimConfig) -> RunResult:
    """One simulated run; the result reads like a real one (trainer.metrics.summarize)."""
    return _Simulation(card, stages, config).run()


class _Simulation:
    def __init__(self, card: CostCard, stages: Stages, config: SimConfig) -> None:
        self.card, self.stages, self.config = card, stages, config
        run_config = config.run_config(config.steps)
        self.rules = BufferRules(config.batch_groups, config.group_size, run_config.staleness, config.oversample,
                                 config.schedule)  # fmt: skip
        rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(config.seed).spawn(6)]
        self.service = card.service_s.stream(rngs[0])
        self.response = stages.response_s.stream(rngs[1])
        self.train_fixed = stages.train_fixed_s.stream(rngs[2])
        self.update = stages.update_weights_s.stream(rngs[3])
        self.turns = _choices(card.turns, rngs[4])
        # where the card has a task's own turns, its groups draw from these (as many streams, one generator)
        self.task_turns = {t: _choices(pmf, rngs[4]) for t, pmf in card.turns_by_task.items()}
        # By turn (index turn - 1): a request's prefill, and training a trajectory of that many turns
        turns = range(1, max(map(len, [card.turns, *card.turns_by_task.values()])) + 1)
        self.prefill_s = [stages.prefill_s(t, card.feedback_tokens) for t in turns]
        self.trajectory_train_s = [stages.train_s(t, card.feedback_tokens) for t in turns]
        self.chance = _uniforms(rngs[5])
        dispatch_s = DISPATCH_S if config.dispatch_s is None else config.dispatch_s
        pool = (config.gym_workers, config.remote_gym_workers, dispatch_s)
        self.gym = servers(*pool)
        # cost-aware: the deadline-first gym queue, in place of the FIFO one
        self.queue = PriorityServers[_Episode](*pool) if config.schedule == "cost-aware" else None
        self.predicted: dict[str, float] = {}  # by task: predicted gym seconds per trajectory
        self.scale: dict[str, float] = {}  # by task: its steps' service over a draw's
        self.tasks: TaskSampler | None = None  # the card's tasks, where it has per-task figures
        self.fates: list[Fate] | None = None  # recorded where the card has tasks
        self.open_groups: set[_Group] = set()  # in rollout, for their fates at the end (where recorded)
        if card.by_task:
            mean = statistics.fmean(card.by_task.values())
            # a step of task t: a draw x by_task[t] / mean (every figure 0: the draw as it is)
            self.scale = {t: (s / mean if mean > 0 else 1.0) for t, s in card.by_task.items()}
            self.predicted = card.task_costs()  # the predictor: the card's figure, exact per task
            reorder = None
            if config.schedule == "cost-aware":  # slow-first starts, by the card's figures
                reorder = lambda block: slow_first(block, self.predicted.get)  # noqa: E731
            order = [t for t in config.task_order if t in card.by_task]
            order += sorted(set(card.by_task) - set(order))
            seed = None if config.task_order else config.seed
            self.tasks = TaskSampler(order, seed, config.batch_groups, reorder)
            self.fates = [] if config.record_fates else None
        self.tracked = self.tasks is not None or self.queue is not None
        self.engines = [BatchingEngine[_Episode](stages.generate_call_s) for _ in range(config.engines)]
        self.accelerator_free = 0.0  # colocated: when training lets go of the accelerator
        self.paused_until = 0.0  # pause_engines_on_update: the engines load weights until then
        self.next_start = 0.0  # group_start_interval_s: the earliest the next group may start
        self.starts_due = False  # a STARTS event is in the heap
        self.deferring = False  # one_call_per_start: requests wait for a CALLS event, due at this instant
        self.events: list[tuple[float, int, int, Any]] = []  # (time, tie-break, kind, payload)
        self.seq = itertools.count()
        self.free_threads = run_config.threads
        self.version = self.step = 0
        self.books = Books()
        self.ready: deque[_Group] = deque()
        self.rollout: Counter[int] = Counter()  # tracked: groups in rollout by version (as the real buffer's)
        self.training = False
        self.wait_start = self.previous_end = 0.0
        self.records: list[StepRecord] = []
        self.depth_series: list[tuple[float, int]] = []  # (time, ready groups) when a batch is taken
        self.window: tuple[float, float, float] | None = None  # start, gym and engine busy before it

    def run(self) -> RunResult:
        """The event loop. A tracked run (tasks, or cost-aware) also scales each step's service by
        its task, adds it to its episode's gym seconds, and under cost-aware queues it by priority
        (a waiting step starts when one ends); a plain run skips all of that."""
        self._start_groups(0.0)
        events, seq, serve, service, ask = self.events, self.seq, self.gym.serve, self.service, self._ask
        tracked, queue = self.tracked, self.queue
        while events:
            now, _, kind, payload = heappop(events)
            if kind == STEPPED:
                episode = payload
                if tracked:
                    episode.gym_s += episode.step_s
                    if queue is not None and (started := queue.finish(now)) is not None:
                        heappush(events, (started[0], next(seq), STEPPED, started[1]))
                episode.calls -= 1
                if episode.calls:
                    episode.turn += 1
                    ask(now, episode)
                else:
                    group = episode.group
                    group.open -= 1
                    if not group.open:
                        self._complete(now, group)
            elif kind == CALL_ENDED:
                engine = payload
                if engine.end > now:  # requests joined the call and moved its end: wait for it
                    heappush(events, (engine.end, next(seq), CALL_ENDED, engine))
                    continue
                for answered in engine.finish():  # each answer's gym step queues now
                    if not tracked:
                        heappush(events, (serve(now, next(service)), next(seq), STEPPED, answered))
                        continue
                    step_s = answered.step_s = next(service) * answered.scale
                    if queue is None:
                        heappush(events, (serve(now, step_s), next(seq), STEPPED, answered))
                    elif (end := queue.arrive(now, answered.group.priority, step_s, answered)) is not None:
                        heappush(events, (end, next(seq), STEPPED, answered))
                if engine.waiting and now >= self.accelerator_free and now >= self.paused_until:
                    heappush(events, (engine.start(now), next(seq), CALL_ENDED, engine))
            elif kind == STARTS:
                self.starts_due = False
                self._start_groups(now)
            elif kind == PAUSED:
                self._pause(now, payload)
            elif kind == RESUMED:
                self._resume(now)
            elif kind == CALLS:  # the requests of every group started at this instant: one call an idle engine
                self.deferring = False
                if now >= self.accelerator_free and now >= self.paused_until:
                    self._resume(now)
            elif self._trained(now, payload):
                return self._result(now)
        raise ValueError("the simulated pipeline is stuck: fewer rollout threads than batch_groups never fill a batch")

    # -- rollout -----------------------------------------------------------------------------

    def _ask(self, now: float, episode: _Episode) -> None:
        """An episode asks for its next turn; an idle engine starts a call for it at once."""
        engine = episode.engine
        response = next(self.response)
        # colocated: no joining once training has claimed the accelerator for after this call
        joined = engine.ask(episode, response + self.prefill_s[episode.turn - 1], response * self.stages.decode_factor,
                            now, may_join=now >= self.accelerator_free and now >= self.paused_until)  # fmt: skip
        if (not joined and engine.batch is None and not self.deferring and now >= self.accelerator_free
                and now >= self.paused_until):  # fmt: skip
            heappush(self.events, (engine.start(now), next(self.seq), CALL_ENDED, engine))

    def _start_groups(self, now: float) -> None:
        config = self.config
        starting = min(self.free_threads, self.rules.room(self.books, self.version))
        if starting <= 0:
            return
        interval = config.group_start_interval_s
        if interval:  # one group now, if its turn has come; the next at the worker's next start
            if now < self.next_start:
                if not self.starts_due:
                    self.starts_due = True
                    heappush(self.events, (self.next_start, next(self.seq), STARTS, None))
                return
            self.next_start = now + interval
            if starting > 1:
                self.starts_due = True
                heappush(self.events, (self.next_start, next(self.seq), STARTS, None))
            starting = 1
        first = self.books.started
        self.books = self.books.admitted(starting, config.group_size)
        self.free_threads -= starting
        if config.one_call_per_start and not self.deferring:  # after every event of this instant
            self.deferring = True
            heappush(self.events, (now, next(self.seq), CALLS, None))
        for number in range(first, first + starting):
            engine = self.engines[number % config.engines]
            if not self.tracked:
                group, calls, _ = self._new_group(self.turns)
                for c in calls:
                    self._ask(now, _Episode(group, engine, c))
                continue
            task, scale = "", 1.0
            if self.tasks is not None:
                _, task = self.tasks.next()
                scale = self.scale[task]
            group, calls, faults = self._new_group(self.task_turns.get(task, self.turns))
            assert isinstance(group, _TrackedGroup)
            self.rollout[group.version] += 1
            if self.fates is not None:
                self.open_groups.add(group)
            group.track(number, task, self.predicted.get(task))
            for i, c in enumerate(calls):
                episode = _TrackedEpisode(group, engine, c, scale, faults is not None and faults[i])
                group.episodes.append(episode)
                self._ask(now, episode)

    def _new_group(self, turns: Iterator[int]) -> tuple[_Group, list[int], list[bool] | None]:
        """A group at the trainer's version, the gym calls each of its episodes makes (turns drawn
        from `turns`), and whether each ends in an infrastructure error (None: none does)."""
        size = self.config.group_size
        calls = list(islice(turns, size))
        trained = list(calls)  # the turns of each trainable trajectory
        faults = None
        if self.card.error_rate:
            for i, turns in enumerate(calls):
                if (fault := self._fault(turns)) is not None:
                    calls[i] = fault  # an infrastructure error ends the episode there
                    faults = faults or [False] * size
                    faults[i] = True
                    trained.remove(turns)
        train_s = sum(self.trajectory_train_s[turns - 1] for turns in trained)
        errored = size - len(trained)
        kind = _TrackedGroup if self.tracked else _Group
        return kind(self.version, size, size - errored, errored, train_s), calls, faults

    def _fault(self, turns: int) -> int | None:
        """The call (1-based) at which an episode of `turns` turns ends in an error, if any."""
        for call in range(1, turns + 1):
            if next(self.chance) < self.card.error_rate:
                return call
        return None

    def _complete(self, now: float, group: _Group) -> None:
        self.free_threads += 1
        self.books = self.books.completed(group.trainable, group.errored)
        if self.tracked:
            self.rollout[group.version] -= 1
            if not self.rollout[group.version]:  # only the versions in rollout: a take adds them up
                del self.rollout[group.version]
            if self.fates is not None:
                self.open_groups.discard(group)
                if group.errored:
                    self._fates(group, types.ERRORED, errored=True)
        if group.trainable:
            self.ready.append(group)
        elif self.rules.gym_is_broken(self.books):
            raise ValueError(
                f"every group ends in infrastructure errors (the card's error rate is "
                f"{self.card.error_rate:.0%} per call); a real run would stop with PipelineFailure"
            )
        if not self.training:
            self._take(now)
        self._start_groups(now)

    # -- trainer -----------------------------------------------------------------------------

    def _take(self, now: float) -> None:
        """As the real buffer's take_batch: drop the stale ready groups, then train the batch
        `BufferRules.choose` picks from the ready ones (cost-aware: by version, and the versions of
        the groups still in rollout), if it picks one."""
        fresh, stale = self.rules.split_stale(self.ready, self.version)
        for group in stale:
            self._drop(group)
        untrained = Counter(g.version for g in fresh) + self.rollout if self.queue is not None else {}
        chosen = self.rules.choose([g.version for g in fresh], untrained, self.version)
        if chosen is None:
            self.ready = fresh
            return
        taken = set(chosen)
        self.ready = deque(g for i, g in enumerate(fresh) if i not in taken)
        self._train(now, [fresh[i] for i in chosen])

    def _drop(self, group: _Group) -> None:
        self.books = self.books.dropped_stale(group.trainable)
        if self.fates is not None:
            self._fates(group, types.DROPPED_STALE, self.version)

    def _train(self, now: float, batch: list[_Group]) -> None:
        """A training step on `batch` starts at `now` (colocated: once the engine calls in progress end)."""
        config = self.config
        self.depth_series.append((now, len(self.ready)))
        trajectories = sum(g.trainable for g in batch)
        self.books = self.books.trained((self.version - g.version, g.trainable) for g in batch)
        if self.fates is not None:
            for g in batch:
                self._fates(g, types.TRAINED, self.version)
        actor_train = next(self.train_fixed) + sum(g.train_s for g in batch) / config.trainers
        update = next(self.update)
        start = now
        if config.placement == "colocated":  # after the engine calls that hold accelerators, if any do
            start = max([now, *(e.end for e in self.engines if e.batch is not None)])
        end = start + actor_train + update
        if config.placement == "colocated":
            self.accelerator_free = end  # engine calls asked for after this wait until then
        elif config.pause_engines_on_update and update > 0:
            heappush(self.events, (end - update, next(self.seq), PAUSED, end))
        record = StepRecord(
            step=self.step, end=end, step_time=end - self.previous_end, train_wait=now - self.wait_start,
            actor_train=actor_train, update_weights=update, reward_mean=0.0, pass_rate=0.0,
            trajectories=trajectories, buffer_depth=0,
            staleness_mean=sum((self.version - g.version) * g.trainable for g in batch) / max(trajectories, 1),
        )  # fmt: skip
        self.training = True
        heappush(self.events, (end, next(self.seq), TRAINED, record))

    def _trained(self, now: float, record: StepRecord) -> bool:
        """The trainer published the next version; True when the run is over."""
        self.version += 1
        self.training = False
        record.buffer_depth = len(self.ready)
        self.records.append(record)
        if self.window is None:  # the first step is warm-up: metrics start at its end
            self.window = (now, self._gym_busy(now), self._engine_busy(now))
        self.previous_end = self.wait_start = now
        self.step += 1
        duration = self.config.duration_s
        if self.step >= self.config.steps or (duration is not None and now >= duration):
            return True
        if self.config.placement == "colocated":  # the engine calls that waited for training go first
            for engine in self.engines:
                if engine.waiting and engine.batch is None:
                    heappush(self.events, (engine.start(now), next(self.seq), CALL_ENDED, engine))
        self._take(now)
        self._start_groups(now)
        return False

    def _pause(self, now: float, end: float) -> None:
        """update_weights loads into the engines until `end`: a call in progress is held that long
        (its decode resumes after), and none starts or is joined meanwhile."""
        for engine in self.engines:
            if engine.batch is not None and engine.end > now:
                engine.hold(end - now)
        self.paused_until = end
        heappush(self.events, (end, next(self.seq), RESUMED, None))

    def _resume(self, now: float) -> None:
        """The weights are loaded: the engines with requests waiting start their calls."""
        for engine in self.engines:
            if engine.waiting and engine.batch is None:
                heappush(self.events, (engine.start(now), next(self.seq), CALL_ENDED, engine))

    def _fates(self, group: _TrackedGroup, fate: str, step: int | None = None, errored: bool | None = False) -> None:
        """Record the fate of the group's trainable trajectories (errored=False), of its errored ones
        (True), or of all of them (None). No rewards or outcomes are simulated: 0.0 and "" (or error)."""
        self.fates.extend(  # type: ignore[union-attr]
            Fate(group.number, i, group.task, group.version, e.turns, e.gym_s, 0.0, "error" if e.errored else "",
                 fate, step, group.predicted)
            for i, e in enumerate(group.episodes) if errored is None or e.errored == errored
        )  # fmt: skip

    def _engine_busy(self, t: float) -> float:
        """Engine seconds up to `t`, summed over the engines."""
        return sum(e.busy - e.busy_after(t) for e in self.engines)

    def _gym_busy(self, t: float) -> float:
        """Gym service seconds up to `t`."""
        gym = self.gym if self.queue is None else self.queue
        return gym.busy - gym.busy_after(t)

    def _result(self, end: float) -> RunResult:
        """The run as trainer.metrics reads it. Per-call spans would be millions at cluster scale,
        so the timeline holds their busy time inside the measured window in a few spans:
        `busy_in` sums the same seconds. Generation is the mean engine's, so with several
        engines 'rollout idle' is the mean engine's idle ratio."""
        assert self.window is not None
        start, gym_before, engines_before = self.window
        length = end - start
        gym_busy = self._gym_busy(end) - gym_before
        engine_busy = (self._engine_busy(end) - engines_before) / self.config.engines
        timeline = Timeline()
        if engine_busy > 0:
            timeline.add("rollout", "generate", start, start + engine_busy, 0)
        trained = sum(r.actor_train + r.update_weights for r in self.records[1:])  # all after the warm-up step
        if trained > 0:  # the colocated pool's other busy time (trainer.metrics.accelerator_idle)
            timeline.add("trainer", "actor_train", start, start + trained, 0)
        pieces = math.ceil(gym_busy / length - 1e-9) if gym_busy > 0 and length > 0 else 0
        for i in range(pieces):
            timeline.add(f"gym-{i}", "gym_step", start, start + gym_busy / pieces, 0)
        run_config = self.config.run_config(len(self.records))
        books = self.books.stopped_with(abandoned=(run_config.threads - self.free_threads) * self.config.group_size,
                                        buffered=sum(g.trainable for g in self.ready))  # fmt: skip
        fates = []
        if self.fates is not None:  # and the run stopped with these in flight: ready, or in rollout
            for group in self.ready:
                self._fates(group, types.IN_FLIGHT)
            for group in sorted(self.open_groups, key=lambda g: g.number):
                self._fates(group, types.IN_FLIGHT, errored=None)
            fates = self.fates
        return RunResult(run_config, self.records, timeline, books.accounting, books.staleness_histogram(),
                         self.depth_series, self.config.gym_workers, end, placement=self.config.placement,
                         fates=fates)  # fmt: skip


def _choices(pmf: tuple[float, ...], rng: np.random.Generator) -> Iterator[int]:
    """Endless draws of 1..len(pmf) with these probabilities."""
    while True:
        yield from (rng.choice(len(pmf), size=1 << 14, p=pmf) + 1).tolist()


def _uniforms(rng: np.random.Generator) -> Iterator[float]:
    while True:
        yield from rng.random(1 << 14).tolist()
