"""What the trainer needs of a gym pool, as protocols: any executor's pool drives a run
(gyms/executors.py makes them: local worker processes or Ray actors).

A rollout thread submits an episode's answer and reads the step back; the run reports the
pool's size and where its workers ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Protocol

from gyms import Episode, StepResult


class StepCall(Protocol):
    """One finished step: the episode after it, its result, and its times on time.monotonic()."""

    @property
    def episode(self) -> Episode: ...
    @property
    def result(self) -> StepResult: ...
    @property
    def worker(self) -> int: ...  # the slot that ran it
    @property
    def submitted_at(self) -> float: ...
    @property
    def started_at(self) -> float: ...
    @property
    def finished_at(self) -> float: ...


class WorkerNode(Protocol):
    """From `since` (time.monotonic()) until the slot's next worker starts, slot `slot`'s worker ran on `node`."""

    @property
    def slot(self) -> int: ...
    @property
    def node(self) -> str: ...
    @property
    def since(self) -> float: ...


class StepPool(Protocol):
    @property
    def workers(self) -> int: ...  # gym worker processes (or actors), not rollout threads
    @property
    def worker_nodes(self) -> Sequence[WorkerNode]: ...

    def submit(self, episode: Episode, action: str) -> Future[StepCall]: ...

    def close_episode(self, episode: Episode) -> None: ...  # one left unfinished, closed where it lives
