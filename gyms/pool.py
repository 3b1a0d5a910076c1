"""GymPool: N worker processes that step episodes, fed from one queue.

`submit(episode, action)` returns a future of a `StepCall`: the episode after the step, its
`StepResult`, and the call's queue wait and service time. The episode is pickled to a worker
process, stepped on that process's main thread (checkers such as math-verify rely on signals),
and sent back. A worker that dies or overruns the host timeout is killed and replaced, and
its call ends as an `error` outcome; the pool keeps serving.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
import time
import traceback
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from gyms.base import Episode, Outcome, StepResult

# The host allows a step this much beyond the gym's own timeout before it kills the worker.
_HOST_MARGIN = 1.5
_HOST_SLACK_S = 5.0
_START_TIMEOUT_S = 60.0
# Workers that die at start-up this many times in a row mean a broken set-up, not bad luck.
_MAX_FAILED_STARTS = 3


class GymPoolBroken(RuntimeError):
    """Gym worker processes cannot start; every call would fail."""


@dataclass(frozen=True)
class StepCall:
    episode: Episode  # the episode after the step
    result: StepResult
    worker: int
    submitted_at: float  # time.monotonic() on the caller's clock
    started_at: float
    finished_at: float

    @property
    def queue_wait_s(self) -> float:
        return self.started_at - self.submitted_at

    @property
    def service_s(self) -> float:
        return self.finished_at - self.started_at


@dataclass
class PoolStats:
    calls: int = 0
    errors: int = 0
    restarts: int = 0
    busy_s: list[float] = field(default_factory=list)  # service seconds per worker slot


@dataclass
class _Job:
    episode: Episode
    action: str
    future: Future[StepCall]
    submitted_at: float


def default_workers() -> int:
    return len(os.sched_getaffinity(0))


class GymPool:
    def __init__(self, workers: int | None = None, step_timeout_s: float = 10.0) -> None:
        self.workers = workers or default_workers()
        if self.workers < 1:
            raise ValueError(f"a gym pool needs at least one worker, got {self.workers}")
        self.host_timeout_s = step_timeout_s * _HOST_MARGIN + _HOST_SLACK_S
        self.stats = PoolStats(busy_s=[0.0] * self.workers)
        self._ctx = mp.get_context("spawn")  # the parent runs threads: never fork it
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self.broken: GymPoolBroken | None = None
        self._threads = [
            threading.Thread(target=self._serve, args=(slot,), name=f"gym-worker-{slot}", daemon=True)
            for slot in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, episode: Episode, action: str) -> Future[StepCall]:
        if self._closed:
            raise RuntimeError("the gym pool is closed")
        if self.broken is not None:
            raise self.broken
        future: Future[StepCall] = Future()
        self._jobs.put(_Job(episode, action, future, time.monotonic()))
        return future

    def step(self, episode: Episode, action: str) -> StepCall:
        """Submit one step and wait for it."""
        return self.submit(episode, action).result()

    def close(self) -> None:
        """Cancel the calls still queued, let running ones finish, stop the workers."""
        if self._closed:
            return
        self._closed = True
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.future.cancel()
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> GymPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one thread per worker process ------------------------------------------------------

    def _spawn(self) -> tuple[mp.process.BaseProcess, Connection]:
        """Start a worker and wait for its hello; raise GymPoolBroken after repeated failures."""
        for _ in range(_MAX_FAILED_STARTS):
            parent_end, child_end = self._ctx.Pipe()
            proc = self._ctx.Process(target=_worker_main, args=(child_end,), daemon=True)
            proc.start()
            child_end.close()
            try:
                if parent_end.poll(_START_TIMEOUT_S) and parent_end.recv() == "ready":
                    return proc, parent_end
            except (EOFError, OSError):
                pass
            _stop(proc, parent_end)
        raise GymPoolBroken(
            f"gym worker processes exit at start-up (last exit code {proc.exitcode}); "
            "the error they printed is above"
        )

    def _serve(self, slot: int) -> None:
        try:
            proc, conn = self._spawn()
        except GymPoolBroken as exc:
            self._fail_all(exc)
            return
        try:
            while (job := self._jobs.get()) is not None:
                started = time.monotonic()
                episode, result, dead = self._call(proc, conn, job)
                finished = time.monotonic()
                with self._lock:
                    self.stats.calls += 1
                    self.stats.busy_s[slot] += finished - started
                    if result.outcome is Outcome.ERROR:
                        self.stats.errors += 1
                    if dead:
                        self.stats.restarts += 1
                job.future.set_result(StepCall(episode, result, slot, job.submitted_at, started, finished))
                if dead:
                    _stop(proc, conn)
                    try:
                        proc, conn = self._spawn()
                    except GymPoolBroken as exc:
                        self._fail_all(exc)
                        return
        finally:
            _stop(proc, conn)

    def _fail_all(self, exc: GymPoolBroken) -> None:
        """This slot cannot serve: fail its queue share, and every later call, with `exc`."""
        self.broken = exc
        while (job := self._jobs.get()) is not None:
            job.future.set_exception(exc)

    def _call(
        self, proc: mp.process.BaseProcess, conn: Connection, job: _Job
    ) -> tuple[Episode, StepResult, bool]:
        """Run one job; returns (episode, result, whether the worker must be replaced)."""
        try:
            conn.send((job.episode, job.action))
        except (BrokenPipeError, EOFError, OSError):
            return *_failed(job, f"gym worker (pid {proc.pid}) was gone"), True
        except Exception as exc:  # pickling: the gym's episode is not picklable
            return *_failed(job, f"the episode could not be sent to a worker: {exc!r}"), False
        if not conn.poll(self.host_timeout_s):
            return *_failed(job, f"host timeout: no answer from the gym worker in {self.host_timeout_s:.0f} s"), True
        try:
            reply = conn.recv()
        except (EOFError, OSError):
            proc.join(timeout=1)
            return *_failed(job, f"gym worker died during the step (exit code {proc.exitcode})"), True
        except Exception as exc:
            return *_failed(job, f"the worker's answer could not be read: {exc!r}"), False
        if reply[0] == "raised":
            last_line = reply[1].strip().splitlines()[-1]
            return *_failed(job, f"the gym raised during the step: {last_line}", detail=reply[1]), False
        return reply[1], reply[2], False


def _failed(job: _Job, why: str, detail: str = "") -> tuple[Episode, StepResult]:
    """An infrastructure error: the episode ends, and the step counts as an `error`."""
    episode = job.episode
    episode.turn += 1
    episode.done = True
    result = StepResult(
        observation=f"internal error while checking the answer: {why}",
        reward=0.0,
        done=True,
        outcome=Outcome.ERROR,
        turn=episode.turn,
        info={"error": f"{why}\n{detail}" if detail else why},
    )
    return episode, result


def _stop(proc: mp.process.BaseProcess, conn: Connection) -> None:
    try:
        conn.send(None)
    except Exception:
        pass
    proc.join(timeout=2)
    if proc.is_alive():
        proc.kill()
        proc.join()
    conn.close()


def _worker_main(conn: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn.send("ready")
    while (message := conn.recv()) is not None:
        episode, action = message
        try:
            result = episode.step(action)
        except Exception:
            conn.send(("raised", traceback.format_exc(limit=20)))
            continue
        try:
            conn.send(("ok", episode, result))
        except Exception:  # the gym's episode or result does not pickle
            conn.send(("raised", traceback.format_exc(limit=20)))
