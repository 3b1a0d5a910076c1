"""Gym pools: N worker slots that step episodes, fed from one queue.

`submit(episode, action)` returns a future of a `StepCall`: the episode after the step, its
`StepResult`, and the call's queue wait and service time. The episode is pickled to a worker,
stepped on that worker's main thread (checkers such as math-verify rely on signals), and sent
back. A worker that dies or overruns the host timeout is killed and replaced, and its call
ends as an `error` outcome; the pool keeps serving.

Nothing a worker made outlives it: when a worker is stopped (dead, killed, timed out, or at
close) its sandboxes are killed, its docker container (if any) is removed, and the work
directories it made are removed (they are named after it, see `gyms.sandbox.remove_workdirs_of`),
its warm checkers' included. Only the work
directories of episodes the pool still holds open (between turns, queued, or running on
another worker) stay, as the gym's `Workdir` attributes of those episodes; `close()` removes
those too, since no episode can be stepped after it.

A worker masks the gym's answer keys (`Gym.answer_keys()`, given to the pool) from every
sandbox before its first step, whatever modules it imports later.

`SlotPool` holds what every executor shares: the queue, one thread per slot, the accounting,
replacement, and where each slot's worker runs. `GymPool` runs the workers as local
processes; `gyms.ray_pool.RayGymPool` runs them as Ray actors across a cluster.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
import threading
import time
import traceback
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

from gyms.base import GYM_EXCEPTION, Episode, Outcome, StepResult
from gyms.docker_sandbox import ENV_POOL, identity, pool_dir, remove_containers_of
from gyms.sandbox import ENV_BACKEND, Workdir, hide_from_sandboxes, kill_sandboxes_of, remove_workdirs_of
from gyms.steps import StepCall, WorkerNode

# The host allows a step this much beyond the gym's own timeout before it kills the worker.
_HOST_MARGIN = 1.5
_HOST_SLACK_S = 5.0
START_TIMEOUT_S = 60.0
# Workers that die at start-up this many times in a row mean a broken set-up, not bad luck.
_MAX_FAILED_STARTS = 3


class GymPoolBroken(RuntimeError):
    """Gym workers cannot start; every call would fail."""


class WorkerStartFailed(Exception):
    """One attempt to start a worker failed; the message says why."""


@dataclass
class PoolStats:
    calls: int = 0
    errors: int = 0
    gym_exceptions: int = 0  # steps whose checker raised on the answer (a fail, but a gym bug to look at)
    restarts: int = 0
    busy_s: list[float] = field(default_factory=list)  # service seconds per worker slot


@dataclass(frozen=True)
class Held:
    """Work directories that open episodes still need: their paths, and their sandbox uids."""

    paths: frozenset[str] = frozenset()
    uids: frozenset[int] = frozenset()


def held_by(episodes: list[Episode]) -> Held:
    """The work directories open `episodes` keep between turns (their `Workdir` attributes)."""
    attributes = [v for e in episodes if not e.done for v in getattr(e, "__dict__", {}).values()]
    workdirs = [v for v in attributes if isinstance(v, Workdir)]
    return Held(frozenset(str(w.path) for w in workdirs), frozenset(w.uid for w in workdirs if w.uid is not None))


_Home = tuple[str, int | None]  # the node of an episode's previous step, and its slot if it stays there


@dataclass
class Job:
    episode: Episode
    action: str | None  # None: close the episode on the worker (`SlotPool.close_episode`)
    future: Future[Any]
    submitted_at: float
    home: str | None = None  # the node of the episode's previous step, where its files are
    slot: int | None = None  # for an episode that stays on its worker: the slot of its previous step
    priority: tuple[float, ...] | None = None  # lower runs first; None (closes, fifo runs) before any

    def order(self) -> tuple[int, tuple[float, ...]]:
        return (0, ()) if self.priority is None else (1, self.priority)


def default_workers() -> int:
    return len(os.sched_getaffinity(0))


class _Jobs:
    """The queue. An episode's next step waits for a worker on its home node (its work directory
    is there) while that node has a worker; otherwise any worker takes it. An episode that
    stays on its worker (`Episode.stays_on_worker`) waits for its slot while the slot has one."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queued: deque[Job] = deque()
        self._nodes: dict[int, str] = {}  # slot -> node of its current worker
        self._taken: dict[int, Job] = {}  # slot -> the job it runs
        self._closed = False

    def put(self, job: Job, first: bool = False) -> None:
        with self._cond:
            if self._closed:
                job.future.cancel()
                return
            if first:
                self._queued.appendleft(job)
            else:
                self._queued.append(job)
            self._cond.notify_all()

    def place(self, slot: int, node: str) -> None:
        with self._cond:
            self._nodes[slot] = node
            self._cond.notify_all()  # jobs whose home node lost its last worker may run elsewhere now

    def unplace(self, slot: int) -> None:
        """The slot's worker died: it no longer keeps its node's episodes waiting for it."""
        with self._cond:
            self._nodes.pop(slot, None)
            self._cond.notify_all()

    def take(self, node: str | None, slot: int | None = None) -> Job | None:
        """The first job a worker on `node` may run (any job for None), by priority, then the
        oldest; None once closed. The slot's job counts as running until `finish(slot)`."""
        with self._cond:
            while not self._closed:
                live = set(self._nodes.values())
                runnable = (job for job in self._queued if node is None or self._may_run(job, node, slot, live))
                job = min(runnable, key=Job.order, default=None)  # min keeps the oldest of equals
                if job is not None:
                    self._queued.remove(job)
                    if slot is not None:
                        self._taken[slot] = job
                    return job
                self._cond.wait()
            return None

    def _may_run(self, job: Job, node: str, slot: int | None, live: set[str]) -> bool:
        if job.slot is not None and job.slot in self._nodes:
            return job.slot == slot
        return job.home in (None, node) or job.home not in live

    def finish(self, slot: int) -> None:
        with self._cond:
            self._taken.pop(slot, None)

    def episodes(self) -> list[Episode]:
        """The episodes of the jobs queued or running."""
        with self._cond:
            return [job.episode for job in [*self._queued, *self._taken.values()]]

    def close(self) -> list[Job]:
        """Stop handing out jobs; returns the ones still queued."""
        with self._cond:
            self._closed = True
            left = list(self._queued)
            self._queued.clear()
            self._cond.notify_all()
            return left


W = TypeVar("W")


class SlotPool(ABC, Generic[W]):
    """`workers` slots, each owning one worker of type W that it starts, calls and replaces."""

    def __init__(self, workers: int, step_timeout_s: float) -> None:
        if workers < 1:
            raise ValueError(f"a gym pool needs at least one worker, got {workers}")
        self.workers = workers
        self.host_timeout_s = step_timeout_s * _HOST_MARGIN + _HOST_SLACK_S
        self.stats = PoolStats(busy_s=[0.0] * workers)
        self.worker_nodes: list[WorkerNode] = []
        self.broken: GymPoolBroken | None = None
        self._jobs = _Jobs()
        # Episodes between turns -> the node that holds their files (and the slot, for an episode
        # that stays on its worker). Weak: finished episodes vanish.
        self._homes: weakref.WeakKeyDictionary[Episode, _Home] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._closed = False
        self._retired: list[W] = []  # stopped workers whose work directories open episodes still hold
        self._started = threading.Condition(self._lock)  # a slot's first worker is up, or the pool broke
        self._threads = [
            threading.Thread(target=self._serve, args=(slot,), name=f"gym-worker-{slot}", daemon=True)
            for slot in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, episode: Episode, action: str, priority: tuple[float, ...] | None = None) -> Future[StepCall]:
        """Queue one step; a worker takes the queued steps by `priority` (lower first), then in
        the order they came (trainer/rules/schedule.py gives the cost-aware schedule's)."""
        if self._closed:
            raise RuntimeError("the gym pool is closed")
        if self.broken is not None:
            raise self.broken
        _keyable(episode)
        future: Future[StepCall] = Future()
        with self._lock:  # between turns to queued at once: `_retire` always sees the episode
            home, slot = self._homes.pop(episode, None) or (None, None)
            self._jobs.put(Job(episode, action, future, time.monotonic(), home, slot, priority))
        return future

    def step(self, episode: Episode, action: str) -> StepCall:
        """Submit one step and wait for it."""
        return self.submit(episode, action).result()

    def close_episode(self, episode: Episode) -> None:
        """Close an episode its caller leaves unfinished, where it lives: one between turns is
        closed on the node (and, for one that stays on its worker, the slot) that holds its files
        and state, by a job that is not a step (it is not counted); one never stepped is closed
        here. An episode that ended was closed by its last step's worker already."""
        _keyable(episode)
        with self._lock:
            home = self._homes.pop(episode, None)
            if home is not None and not self._closed:
                # first in the queue: a close only frees what the episode holds
                self._jobs.put(Job(episode, None, Future(), time.monotonic(), *home), first=True)
                return
        episode.close()

    def close(self) -> None:
        """Cancel the calls still queued, let running ones finish, stop the workers, and remove
        every work directory they made: episodes still open lose theirs."""
        if self._closed:
            return
        self._closed = True
        for job in self._jobs.close():
            job.future.cancel()
        for thread in self._threads:
            thread.join()
        for worker in self._retired:
            self._release(worker)
        self._retired.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what an executor provides -----------------------------------------------------------

    @abstractmethod
    def _start(self) -> tuple[W, str]:
        """Start one worker and wait until it is ready; returns it and the node it runs on.
        Raises `WorkerStartFailed`."""

    @abstractmethod
    def _call(self, worker: W, job: Job) -> tuple[Episode, StepResult, bool]:
        """Run one job; returns (episode, result, whether the worker must be replaced)."""

    @abstractmethod
    def _stop(self, worker: W, held: Held) -> None:
        """Stop a worker, dead or alive; kill its sandboxes and remove the work directories it
        made, except the `held` ones (and spare their uids)."""

    @abstractmethod
    def _release(self, worker: W) -> None:
        """Remove the work directories a stopped worker made that were held when it stopped."""

    def _retire(self, worker: W) -> None:
        """Stop `worker`, keeping what open episodes hold until they or the pool are done."""
        with self._lock:
            held = held_by([*list(self._homes.keys()), *self._jobs.episodes()])
        self._stop(worker, held)
        if held.paths:
            with self._lock:
                self._retired.append(worker)

    # -- one thread per slot ----------------------------------------------------------------

    def _spawn(self, slot: int) -> tuple[W, str] | None:
        """Start the slot's worker (None if the pool closed meanwhile); GymPoolBroken after
        repeated failures."""
        why = ""
        for _ in range(_MAX_FAILED_STARTS):
            if self._closed:
                return None
            try:
                worker, node = self._start()
            except WorkerStartFailed as exc:
                why = str(exc)
                continue
            with self._lock:
                self.worker_nodes.append(WorkerNode(slot, node, time.monotonic()))
                self._started.notify_all()
            self._jobs.place(slot, node)
            return worker, node
        if self._closed:
            return None
        raise GymPoolBroken(f"gym workers failed to start {_MAX_FAILED_STARTS} times in a row: {why}")

    def _serve(self, slot: int) -> None:
        try:
            spawned = self._spawn(slot)
        except GymPoolBroken as exc:
            self._fail_all(exc)
            return
        try:
            while spawned is not None and (job := self._jobs.take(spawned[1], slot)) is not None:
                worker, node = spawned
                started = time.monotonic()
                episode, result, dead = self._call(worker, job)
                finished = time.monotonic()
                with self._lock:
                    if job.action is not None:  # a close job is no step: nothing to count or remember
                        self._count(slot, node, episode, result, finished - started, dead)
                    self._jobs.finish(slot)
                if dead:  # stopped before the caller hears of it: its leftovers are gone by then
                    spawned = None
                    self._jobs.unplace(slot)
                    self._retire(worker)
                job.future.set_result(StepCall(episode, result, slot, job.submitted_at, started, finished))
                if dead:
                    spawned = self._spawn(slot)
        except GymPoolBroken as exc:
            self._fail_all(exc)
        finally:
            if spawned is not None:
                self._retire(spawned[0])

    def _count(self, slot: int, node: str, episode: Episode, result: StepResult, busy_s: float, dead: bool) -> None:
        """A step's accounting (under the lock); an episode between turns is remembered where it ran."""
        self.stats.calls += 1
        self.stats.busy_s[slot] += busy_s
        if result.outcome is Outcome.ERROR:
            self.stats.errors += 1
        if GYM_EXCEPTION in result.info:
            self.stats.gym_exceptions += 1
        if dead:
            self.stats.restarts += 1
        if not result.done:
            self._homes[episode] = (node, slot if episode.stays_on_worker else None)

    def wait_started(self, timeout_s: float) -> None:
        """Return once every slot's worker has started, so that a measurement that follows does
        not pay worker start-up (Ray actors can take seconds each); GymPoolBroken if one cannot
        start, TimeoutError after `timeout_s` (a bound for a broken machine only)."""
        with self._lock:
            started = self._started.wait_for(
                lambda: self.broken is not None or len({w.slot for w in self.worker_nodes}) == self.workers, timeout_s
            )
            if self.broken is not None:
                raise self.broken
            if not started:
                up = len({w.slot for w in self.worker_nodes})
                raise TimeoutError(f"only {up} of {self.workers} gym workers started within {timeout_s:.0f} s")

    def _fail_all(self, exc: GymPoolBroken) -> None:
        """This slot cannot serve: fail its queue share, and every later call, with `exc`."""
        with self._lock:
            self.broken = exc
            self._started.notify_all()
        while (job := self._jobs.take(None)) is not None:
            job.future.set_exception(exc)


def _keyable(episode: Episode) -> None:
    """The pool remembers an episode between turns by the object itself (weakly), to send its
    next turn where its files, or its connection, are: it must hash by identity."""
    if type(episode).__hash__ is None:
        raise TypeError(f"{type(episode).__name__} cannot be stepped by a gym pool: it is unhashable (a dataclass "
                        "with eq=True is); declare it with @dataclass(eq=False), or define no __eq__")  # fmt: skip


# -- both sides of a step, shared by the executors -----------------------------------------------


def step_here(episode: Episode, action: str | None) -> tuple[Any, ...]:
    """Worker side: ("ok", episode, result), or ("raised", traceback) when the gym raised. An
    episode that the step finished is closed here, where its files are, under every executor; a
    None action closes an unfinished one here (result None)."""
    try:
        if action is None:
            episode.close()
            return "ok", episode, None
        result = episode.step(action)
        if result.done:
            episode.close()
        return "ok", episode, result
    except Exception:
        return "raised", traceback.format_exc(limit=20)


def answer(job: Job, reply: tuple[Any, ...]) -> tuple[Episode, StepResult]:
    """Caller side: a worker's reply as (episode, result)."""
    if reply[0] == "raised":
        last_line = reply[1].strip().splitlines()[-1]
        return failed(job, f"the gym raised during the step: {last_line}", detail=reply[1])
    return reply[1], reply[2]


def failed(job: Job, why: str, detail: str = "") -> tuple[Episode, StepResult]:
    """An infrastructure error: the episode ends, and the step counts as an `error`."""
    return job.episode, job.episode.fault(why, detail)


# -- the local executor: worker processes on this machine ----------------------------------------

_Process = tuple[mp.process.BaseProcess, Connection]


class GymPool(SlotPool[_Process]):
    def __init__(
        self, workers: int | None = None, step_timeout_s: float = 10.0, answer_keys: Sequence[str | Path] = ()
    ) -> None:
        """`answer_keys`: the gym's (`Gym.answer_keys()`), masked in every worker before its first step."""
        self._ctx = mp.get_context("spawn")  # the parent runs threads: never fork it
        self._node = socket.gethostname()
        self._answer_keys = tuple(str(key) for key in answer_keys)
        # A spawned worker starts an interpreter and imports its modules: CPU-bound, about half a
        # second of a core. Started all at once, N workers share the cores for N of those, and on a
        # machine with fewer cores than workers (160 emulated workers on 2 cores: docs/benchmarks.md)
        # the last ones would pass START_TIMEOUT_S still importing and be killed as failed starts.
        # So at most one start per core runs at a time, and each start's timeout counts its own work.
        self._starting = threading.BoundedSemaphore(default_workers())
        if os.environ.get(ENV_BACKEND) == "docker":
            pool_dir()  # the workers' containers share it; made here, it goes when this process exits
        super().__init__(workers or default_workers(), step_timeout_s)

    def _start(self) -> tuple[_Process, str]:
        with self._starting:
            return self._start_one()

    def _start_one(self) -> tuple[_Process, str]:
        parent_end, child_end = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, args=(child_end, self._answer_keys), daemon=True)
        proc.start()
        child_end.close()
        try:
            if parent_end.poll(START_TIMEOUT_S) and parent_end.recv() == "ready":
                return (proc, parent_end), self._node
        except (EOFError, OSError):
            pass
        self._stop((proc, parent_end), Held())
        raise WorkerStartFailed(
            f"the worker process exited at start-up (exit code {proc.exitcode}); the error it printed is above"
        )

    def _call(self, worker: _Process, job: Job) -> tuple[Episode, StepResult, bool]:
        proc, conn = worker
        try:
            conn.send((job.episode, job.action))
        except (BrokenPipeError, EOFError, OSError):
            return *failed(job, f"gym worker (pid {proc.pid}) was gone"), True
        except Exception as exc:  # pickling: the gym's episode is not picklable
            return *failed(job, f"the episode could not be sent to a worker: {exc!r}"), False
        if not conn.poll(self.host_timeout_s):
            return *failed(job, f"host timeout: no answer from the gym worker in {self.host_timeout_s:.0f} s"), True
        try:
            reply = conn.recv()
        except (EOFError, OSError):
            proc.join(timeout=1)
            return *failed(job, f"gym worker died during the step (exit code {proc.exitcode})"), True
        except Exception as exc:
            return *failed(job, f"the worker's answer could not be read: {exc!r}"), False
        return *answer(job, reply), False

    def _stop(self, worker: _Process, held: Held) -> None:
        proc, conn = worker
        try:
            conn.send(None)
        except Exception:
            pass
        proc.join(timeout=2)
        if proc.is_alive():
            proc.kill()
            proc.join()
        conn.close()
        # A worker that died or was killed leaves its checkers and work directories behind.
        kill_sandboxes_of(proc.pid, spare=held.uids)
        remove_containers_of(proc.pid)  # the docker backend's warm container (gyms/docker_sandbox.py)
        remove_workdirs_of(proc.pid, keep=held.paths)

    def _release(self, worker: _Process) -> None:
        remove_workdirs_of(worker[0].pid)


def _worker_main(conn: Connection, answer_keys: tuple[str, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    os.environ.setdefault(ENV_POOL, identity(os.getppid()))  # labels a docker worker's container
    hide_from_sandboxes(*answer_keys)
    conn.send("ready")
    while (message := conn.recv()) is not None:
        reply = step_here(*message)
        try:
            conn.send(reply)
        except Exception:  # the gym's episode or result does not pickle
            conn.send(("raised", traceback.format_exc(limit=20)))
