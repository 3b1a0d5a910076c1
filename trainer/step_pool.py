"""What the trainer needs of a gym pool, as a protocol: any executor's pool drives a run
(gyms/executors.py makes them: local worker processes or Ray actors). What a pool hands back
(`StepCall`, `WorkerNode`) is one record of `gyms/steps.py` for every executor.

A rollout thread submits an episode's answer and reads the step back; the run reports the
pool's size and where its workers ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Protocol

from gyms import Episode
from gyms.steps import StepCall, WorkerNode


class StepPool(Protocol):
    @property
    def workers(self) -> int: ...  # gym worker processes (or actors), not rollout threads
    @property
    def worker_nodes(self) -> Sequence[WorkerNode]: ...

    # Queued steps run by priority (lower first; trainer/rules/schedule.py), then in order.
    def submit(self, episode: Episode, action: str, priority: tuple[float, ...] | None = None) -> Future[StepCall]: ...

    def close_episode(self, episode: Episode) -> None: ...  # one left unfinished, closed where it lives
