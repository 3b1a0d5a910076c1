"""Streaming rollout and real overlap: episodes of a group run on their own (no barrier between
rounds), and async runs overlap generation and gym work with training, which sync never does.

Every ordering asserted here is forced by an event, not hoped for from the clock: a gym step
that waits at a gate only a later request opens, and training steps held open until the work
that must overlap them has been seen inside them.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import pytest
from toy_gyms import GATE_S, GateGym, ToyGym

from gyms import Candidate, Episode, Task
from gyms.pool import GymPool
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import ZERO, HardwareProfile
from trainer.policies.replay import ReplayPolicy
from gyms.steps import StepCall
from trainer.timeline import Span



@pytest.fixture(scope="module")
def pool():
    with GymPool(workers=2, step_timeout_s=GATE_S) as p:
        yield p


class Scripted(ReplayPolicy):
    """Sample 0's first answer waits at the gate; sample 1's is wrong at once, and its second
    request opens the gate. Every other answer passes."""

    def __init__(self, gym: GateGym) -> None:
        super().__init__(gym, ZERO)
        self.gate = Path(gym.gate)  # the file that opens it

    def generate(self, requests, version):
        scripted = []
        for r, g in zip(requests, super().generate(requests, version)):
            if (r.sample, r.turn) == (1, 2):
                self.gate.touch()
            text = {(0, 1): "gate", (1, 1): "wrong"}.get((r.sample, r.turn), "pass")
            scripted.append(replace(g, text=text))
        return scripted


def of(spans: list[Span], kind: str, sample: int, turn: int) -> Span:
    [span] = [s for s in spans if s.kind == kind and s.group == 0 and (s.sample, s.turn) == (sample, turn)]
    return span


def test_an_episode_asks_for_its_next_turn_while_another_of_its_group_is_still_in_the_gym(pool, tmp_path):
    gym = GateGym(tmp_path / "open")
    result = run(gym, Scripted(gym), pool, RunConfig(mode="sync", steps=1, batch_groups=1, group_size=2))
    spans = result.timeline.spans
    held = of(spans, "gym_step", sample=0, turn=1)
    asked = of(spans, "generate_request", sample=1, turn=2)
    # With a barrier between rounds sample 1's second turn would wait for sample 0's first step,
    # which waits for that very request: the gate would only open at its time limit.
    assert asked.start < held.end, (asked, held)
    [group] = [s for s in spans if s.kind == "group" and s.group == 0]
    last = max(s.end for s in spans if s.kind == "gym_step" and s.group == 0)
    assert of(spans, "gym_step", sample=0, turn=2).end == last <= group.end  # the group ended with its last episode


# Generous stage times next to scheduling noise; the gates below make the overlaps certain.
SLOW = HardwareProfile("test-slow", "test", 2e-4, 1e-4, 0.05, response_tokens=100, prompt_tokens=10)


class Watched:
    """The real pool, counting the steps in flight and reporting each finished one to
    `on_step` (a StepPool itself)."""

    def __init__(self, pool: GymPool) -> None:
        self.pool = pool
        self.in_flight = 0
        self.changed = threading.Condition()
        self.on_step: Callable[[StepCall], None] = lambda call: None

    @property
    def workers(self) -> int:
        return self.pool.workers

    @property
    def worker_nodes(self):
        return self.pool.worker_nodes

    def submit(self, episode: Episode, action: str, priority: tuple[float, ...] | None = None) -> Future[StepCall]:
        with self.changed:
            self.in_flight += 1
        future = self.pool.submit(episode, action, priority)
        future.add_done_callback(self._finished)
        return future

    def close_episode(self, episode: Episode) -> None:
        self.pool.close_episode(episode)

    def _finished(self, future: Future[StepCall]) -> None:
        if future.exception() is None:
            self.on_step(future.result())
        with self.changed:
            self.in_flight -= 1
            self.changed.notify_all()


class HeldTraining(ReplayPolicy):
    """Holds each training step open while work that could overlap it is in flight, until it
    has: a gym step that finished during the step, and (disaggregated) an engine call wholly
    inside it. So an overlap the run could have is never missed, and no step waits for nothing."""

    def __init__(self, *args, pool: Watched, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pool = pool
        self._training_since: float | None = None
        self.gym_inside = self.engine_inside = False
        pool.on_step = self._stepped

    def _stepped(self, call: StepCall) -> None:
        since = self._training_since
        if since is not None and call.finished_at > since:  # and training holds on: they overlap
            self.gym_inside = True  # the pool notifies when it has counted the step

    def _run_engine_call(self, response_tokens, version):
        since = self._training_since
        super()._run_engine_call(response_tokens, version)
        if since is not None and since == self._training_since:
            with self.pool.changed:
                self.engine_inside = True
                self.pool.changed.notify_all()

    def release(self, version):
        super().release(version)
        with self.pool.changed:
            self.pool.changed.notify_all()

    def _seen(self) -> bool:
        gym = self.gym_inside or self.pool.in_flight == 0
        engine = self.engine_inside or self.placement == "colocated" or not self.pinned()
        return gym and engine

    def train_step(self, groups):
        self._training_since = time.monotonic()
        try:
            with self.pool.changed:
                self.pool.changed.wait_for(self._seen, GATE_S)
            return super().train_step(groups)
        finally:
            self._training_since = None


def overlapping(spans: list[Span], kind: str) -> list[tuple[Span, Span]]:
    training = [s for s in spans if s.resource == "trainer" and s.kind in ("actor_train", "update_weights")]
    return [(w, t) for w in spans if w.kind == kind for t in training if w.start < t.end and t.start < w.end]


class SlowGym(ToyGym):
    """Every wrong answer takes the gym 0.2 s, long next to the trainer's bookkeeping: gym work in
    flight when a training step starts is still in flight when it has started."""

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [Candidate("pass", "pass", "reference"), Candidate("sleep:0.2", "fail", "slow-wrong")]


def timeline(real: GymPool, mode: str, placement: str) -> list[Span]:
    gym = SlowGym(max_turns=3, tasks=4)  # skill 0: every answer wrong, every episode three turns
    config = RunConfig(mode=mode, steps=3, batch_groups=2, group_size=2, max_staleness=1)
    pool = Watched(real)
    policy = HeldTraining(gym, SLOW, skill=0.0, placement=placement, pool=pool)
    return run(gym, policy, pool, config).timeline.spans


@pytest.mark.parametrize("placement", ["colocated", "disaggregated"])
def test_async_overlaps_gym_work_with_training_in_both_placements(pool, placement):
    spans = timeline(pool, "async", placement)
    assert overlapping(spans, "gym_step")
    generation = overlapping(spans, "generate")
    if placement == "disaggregated":
        assert generation, "generation has accelerators of its own: it overlaps training"
    else:
        assert not generation, generation[:3]  # one accelerator pool: they take turns


@pytest.mark.parametrize("placement", ["colocated", "disaggregated"])
def test_sync_never_overlaps_generation_or_gym_work_with_training(pool, placement):
    spans = timeline(pool, "sync", placement)  # held training would catch any overlap there is
    assert [s for s in spans if s.kind == "gym_step"] and [s for s in spans if s.kind == "generate"]
    assert not overlapping(spans, "gym_step")
    assert not overlapping(spans, "generate")
    assert not overlapping(spans, "generate_request")



def test_a_failed_engine_call_fails_every_request_it_took() -> None:
    import contextlib
    import itertools

    from trainer.policies.batching import BatchingEngine

    holding, go = threading.Event(), threading.Event()
    calls: list[int] = []

    @contextlib.contextmanager
    def hold():  # the accelerator: the runner holds it while the follower queues for the batch
        holding.set()
        go.wait()
        yield

    def record(start: float, end: float, version: int) -> None:
        calls.append(version)
        if len(calls) == 1:
            raise RuntimeError("the engine broke")

    ticks = itertools.count(0, 100)  # each reading of the clock is 100 s later: no call waits
    engine = BatchingEngine(hold, record, clock=lambda: float(next(ticks)))
    outcomes: dict[str, str] = {}

    def ask(name: str) -> None:
        try:
            engine.serve(5, 0)
            outcomes[name] = "served"
        except RuntimeError as exc:
            outcomes[name] = str(exc)

    runner = threading.Thread(target=ask, args=("runner",))
    runner.start()
    holding.wait()
    follower = threading.Thread(target=ask, args=("follower",))
    follower.start()
    deadline = time.monotonic() + 30
    while len(engine._waiting) < 2 and time.monotonic() < deadline:  # the follower has joined the queue
        time.sleep(0.001)
    go.set()
    runner.join()
    follower.join()
    assert calls == [0]  # one call took both requests
    assert outcomes == {"runner": "the engine broke", "follower": "the engine broke"}


class ManualClock:
    """Time moves only when the test moves it; the engine's runner is told (`wake`)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.engine = None

    def __call__(self) -> float:
        return self.now

    def to(self, t: float) -> None:
        self.now = t
        self.engine.wake()


def _engine(clock: ManualClock, closed: Callable[[], bool] = lambda: False):
    import contextlib

    from trainer.policies.batching import BatchingEngine

    records: list[tuple[float, float, int]] = []
    engine = BatchingEngine(contextlib.nullcontext, lambda s, e, v: records.append((s, e, v)), 0.0, closed=closed,
                            clock=clock)  # fmt: skip
    clock.engine = engine
    return engine, records


def _asking(engine, seconds: float, version: int, decode_s: float) -> threading.Thread:
    thread = threading.Thread(target=engine.serve, args=(seconds, version, decode_s))
    thread.start()
    return thread


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():  # a state the engine reaches, not a time
        assert time.monotonic() < deadline, "the engine never got there"
        time.sleep(0.001)


def test_a_request_joins_a_latency_bound_call_and_pushes_its_end_out() -> None:
    clock = ManualClock()
    engine, records = _engine(clock)
    first = _asking(engine, 1.0, 0, 10.0)  # latency-bound: 10 s alone against 1 s of a full batch
    _until(lambda: engine._batch is not None)
    clock.to(4.0)
    second = _asking(engine, 1.0, 1, 10.0)
    _until(lambda: len(engine._batch or []) == 2)  # joined the call in progress
    clock.to(10.0)  # the first request's decode is done, the second's is not: the call goes on
    assert first.is_alive() and not records
    clock.to(14.0)
    first.join()
    second.join()
    assert records == [(0.0, 14.0, 1)]  # one call, one span, to the last joined decode's end


def test_a_request_waits_for_the_next_call_when_the_call_is_throughput_bound() -> None:
    clock = ManualClock()
    engine, records = _engine(clock)
    first = _asking(engine, 10.0, 0, 1.0)  # a full engine: 10 s of batch, 1 s alone
    _until(lambda: engine._batch is not None)
    clock.to(4.0)
    second = _asking(engine, 2.0, 1, 8.0)
    _until(lambda: len(engine._waiting) == 1)
    clock.to(10.0)
    first.join()
    _until(lambda: engine._batch is not None and engine._start == 10.0)  # the second runs the next call
    clock.to(18.0)
    second.join()
    assert records == [(0.0, 10.0, 0), (10.0, 18.0, 1)]


def test_no_request_joins_once_training_has_claimed_the_accelerator() -> None:
    clock = ManualClock()
    claimed = threading.Event()
    engine, records = _engine(clock, closed=claimed.is_set)
    first = _asking(engine, 1.0, 0, 10.0)
    _until(lambda: engine._batch is not None)
    claimed.set()  # colocated: training asked for the accelerator during the call
    clock.to(4.0)
    second = _asking(engine, 1.0, 1, 10.0)
    _until(lambda: len(engine._waiting) == 1)
    clock.to(10.0)
    first.join()
    _until(lambda: engine._batch is not None and engine._start == 10.0)
    clock.to(20.0)
    second.join()
    assert records == [(0.0, 10.0, 0), (10.0, 20.0, 1)]


def test_the_accelerator_says_when_a_stage_waits_behind_its_holder() -> None:
    from trainer.policies.base import Accelerator

    accelerator = Accelerator()

    def trainer() -> None:
        with accelerator:
            pass

    with accelerator:
        assert not accelerator.claimed()
        waiting = threading.Thread(target=trainer)
        waiting.start()
        _until(accelerator.claimed)
    waiting.join()
    assert not accelerator.claimed()
