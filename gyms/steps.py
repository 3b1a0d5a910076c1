"""What a gym pool hands back, under every executor: a finished step (`StepCall`) and where each
worker slot ran (`WorkerNode`). The pools (`gyms/pool.py`, `gyms/ray_pool.py`) make them and the
trainer reads them (`trainer/step_pool.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from gyms.base import Episode, StepResult


@dataclass(frozen=True)
class StepCall:
    """One step through the pool. Its times are recorded once, on the caller's clock; the
    waits are derived from them, so a timeline span from `submitted_at` to `started_at` (the
    trainer's `gym_queue`) lasts `queue_wait_s`."""

    episode: Episode  # the episode after the step
    result: StepResult
    worker: int
    submitted_at: float  # time.monotonic() when `submit` queued the step
    started_at: float  # when a worker slot took it
    finished_at: float  # when its result came back from the worker

    @property
    def queue_wait_s(self) -> float:
        """Waiting in the queue for a free worker."""
        return self.started_at - self.submitted_at

    @property
    def service_s(self) -> float:
        """Sending the episode to the worker, the step there, and the way back."""
        return self.finished_at - self.started_at


@dataclass(frozen=True)
class WorkerNode:
    """From `since` (time.monotonic()) until the slot's next worker starts, slot `slot`'s worker runs on `node`."""

    slot: int
    node: str
    since: float
