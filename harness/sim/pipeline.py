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
* The trainer takes groups in completion order, drops those staler than max_staleness (they
  count as wasted for admission), trains on batch_groups groups (one sequence per trajectory,
  as long as its turns made it: `Stages.train_s`), publishes the next version.
* Placement, as the replay policy's: `disaggregated` (the default) trains on accelerators of
  its own; `colocated` has one accelerator pool (one engine, one trainer) that engine calls
  and training steps take in turn, in the order they ask for it.

Events: an engine call ends, an episode's gym step ends, a training step ends. Queue waits
need no events (harness/sim/queue.py), so a simulated hour of a large cluster takes seconds.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import islice
from typing import Any

import numpy as np

from harness.costcard import CostCard
from harness.sim.engine import BatchingEngine
from harness.sim.queue import Servers
from harness.sim.stages import Stages
from trainer.rules.buffer import Books, BufferRules
from trainer.rules.placement import DEFAULT_PLACEMENT, PLACEMENTS
from trainer.pipeline import RunConfig, RunResult, StepRecord
from trainer.timeline import Timeline

CALL_ENDED, STEPPED, TRAINED = 0, 1, 2


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
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError(f"--duration-s must be positive, got {self.duration_s}")
        if self.placement == "colocated" and self.engines != self.trainers:
            raise ValueError(f"colocated placement is one pool whose accelerators each generate and train: "
                             f"--engines and --trainers must be equal (got {self.engines} and {self.trainers})")  # fmt: skip

    def run_config(self, steps: int) -> RunConfig:
        return RunConfig(self.mode, steps, self.batch_groups, self.group_size, self.max_staleness,
                         oversample=self.oversample, rollout_threads=self.rollout_threads, seed=self.seed)  # fmt: skip


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


def simulate(card: CostCard, stages: Stages, config: SimConfig) -> RunResult:
    """One simulated run; the result reads like a real one (trainer.metrics.summarize)."""
    return _Simulation(card, stages, config).run()


class _Simulation:
    def __init__(self, card: CostCard, stages: Stages, config: SimConfig) -> None:
        self.card, self.stages, self.config = card, stages, config
        run_config = config.run_config(config.steps)
        self.rules = BufferRules(config.batch_groups, config.group_size, run_config.staleness, config.oversample)
        rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(config.seed).spawn(6)]
        self.service = card.service_s.stream(rngs[0])
        self.response = stages.response_s.stream(rngs[1])
        self.train_fixed = stages.train_fixed_s.stream(rngs[2])
        self.update = stages.update_weights_s.stream(rngs[3])
        self.turns = _choices(card.turns, rngs[4])
        # By turn (index turn - 1): a request's prefill, and training a trajectory of that many turns
        turns = range(1, len(card.turns) + 1)
        self.prefill_s = [stages.prefill_s(t, card.feedback_tokens) for t in turns]
        self.trajectory_train_s = [stages.train_s(t, card.feedback_tokens) for t in turns]
        self.chance = _uniforms(rngs[5])
        self.gym = Servers(config.gym_workers)
        self.engines = [BatchingEngine[_Episode](stages.generate_call_s) for _ in range(config.engines)]
        self.accelerator_free = 0.0  # colocated: when training lets go of the accelerator
        self.events: list[tuple[float, int, int, Any]] = []  # (time, tie-break, kind, payload)
        self.seq = itertools.count()
        self.free_threads = run_config.threads
        self.version = self.step = 0
        self.books = Books()
        self.ready: deque[_Group] = deque()
        self.batch: list[_Group] = []
        self.training = False
        self.wait_start = self.previous_end = 0.0
        self.records: list[StepRecord] = []
        self.depth_series: list[tuple[float, int]] = []  # (time, ready groups) when a batch is taken
        self.window: tuple[float, float, float] | None = None  # start, gym and engine busy before it

    def run(self) -> RunResult:
        events, seq, serve, service, ask = self.events, self.seq, self.gym.serve, self.service, self._ask
        self._start_groups(0.0)
        while events:
            now, _, kind, payload = heappop(events)
            if kind == STEPPED:
                episode = payload
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
                for answered in engine.finish():  # each answer's gym step queues now
                    heappush(events, (serve(now, next(service)), next(seq), STEPPED, answered))
                if engine.waiting and now >= self.accelerator_free:
                    heappush(events, (engine.start(now), next(seq), CALL_ENDED, engine))
            elif self._trained(now, payload):
                return self._result(now)
        raise ValueError("the simulated pipeline is stuck: fewer rollout threads than batch_groups never fill a batch")

    # -- rollout -----------------------------------------------------------------------------

    def _ask(self, now: float, episode: _Episode) -> None:
        """An episode asks for its next turn; an idle engine starts a call for it at once."""
        engine = episode.engine
        engine.ask(episode, next(self.response) + self.prefill_s[episode.turn - 1])
        if engine.batch is None and now >= self.accelerator_free:
            heappush(self.events, (engine.start(now), next(self.seq), CALL_ENDED, engine))

    def _start_groups(self, now: float) -> None:
        config = self.config
        starting = min(self.free_threads, self.rules.room(self.books, self.version))
        if starting <= 0:
            return
        first = self.books.started
        self.books = self.books.admitted(starting, config.group_size)
        self.free_threads -= starting
        for number in range(first, first + starting):
            engine = self.engines[number % config.engines]
            group, calls = self._new_group()
            for c in calls:
                self._ask(now, _Episode(group, engine, c))

    def _new_group(self) -> tuple[_Group, list[int]]:
        """A group at the trainer's version, and the gym calls each of its episodes makes."""
        size = self.config.group_size
        calls = list(islice(self.turns, size))
        trained = list(calls)  # the turns of each trainable trajectory
        if self.card.error_rate:
            for i, turns in enumerate(calls):
                if (fault := self._fault(turns)) is not None:
                    calls[i] = fault  # an infrastructure error ends the episode there
                    trained.remove(turns)
        train_s = sum(self.trajectory_train_s[turns - 1] for turns in trained)
        errored = size - len(trained)
        return _Group(self.version, size, size - errored, errored, train_s), calls

    def _fault(self, turns: int) -> int | None:
        """The call (1-based) at which an episode of `turns` turns ends in an error, if any."""
        for call in range(1, turns + 1):
            if next(self.chance) < self.card.error_rate:
                return call
        return None

    def _complete(self, now: float, group: _Group) -> None:
        self.free_threads += 1
        self.books = self.books.completed(group.trainable, group.errored)
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
        """The trainer takes ready groups in order, drops stale ones, and trains on a full batch."""
        config = self.config
        while len(self.batch) < config.batch_groups and self.ready:
            group = self.ready.popleft()
            if self.rules.is_stale(group.version, self.version):
                self.books = self.books.dropped_stale(group.trainable)
            else:
                self.batch.append(group)
        if len(self.batch) < config.batch_groups:
            return
        batch, self.batch = self.batch, []
        self.depth_series.append((now, len(self.ready)))
        trajectories = sum(g.trainable for g in batch)
        self.books = self.books.trained((self.version - g.version, g.trainable) for g in batch)
        actor_train = next(self.train_fixed) + sum(g.train_s for g in batch) / config.trainers
        update = next(self.update)
        start = now
        if config.placement == "colocated":  # after the engine calls that hold accelerators, if any do
            start = max([now, *(e.end for e in self.engines if e.batch is not None)])
        end = start + actor_train + update
        if config.placement == "colocated":
            self.accelerator_free = end  # engine calls asked for after this wait until then
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
            self.window = (now, self.gym.busy - self.gym.busy_after(now), self._engine_busy(now))
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

    def _engine_busy(self, t: float) -> float:
        """Engine seconds up to `t`, summed over the engines."""
        return sum(e.busy - e.busy_after(t) for e in self.engines)

    def _result(self, end: float) -> RunResult:
        """The run as trainer.metrics reads it. Per-call spans would be millions at cluster scale,
        so the timeline holds their busy time inside the measured window in a few spans:
        `busy_in` sums the same seconds. Generation is the mean engine's, so with several
        engines 'rollout idle' is the mean engine's idle ratio."""
        assert self.window is not None
        start, gym_before, engines_before = self.window
        length = end - start
        gym_busy = self.gym.busy - self.gym.busy_after(end) - gym_before
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
        return RunResult(run_config, self.records, timeline, books.accounting, books.staleness_histogram(),
                         self.depth_series, self.config.gym_workers, end, placement=self.config.placement)  # fmt: skip


def _choices(pmf: tuple[float, ...], rng: np.random.Generator) -> Iterator[int]:
    """Endless draws of 1..len(pmf) with these probabilities."""
    while True:
        yield from (rng.choice(len(pmf), size=1 << 14, p=pmf) + 1).tolist()


def _uniforms(rng: np.random.Generator) -> Iterator[float]:
    while True:
        yield from rng.random(1 << 14).tolist()
