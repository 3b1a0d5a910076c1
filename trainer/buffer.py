"""The ready buffer: completed groups wait here for the trainer, under admission control.

Admission keeps the pipeline from running ahead: a new group may start only while
`started - wasted < (trainer_version + max_staleness + 1) * batch_groups + oversample`, where
`wasted` counts groups that will never be trained (fully errored or dropped as stale). Groups
are then never staler than `max_staleness` when the trainer takes them in order; any that are
(multi-turn episodes finish out of order) are dropped and counted. With max_staleness 0 and no
over-sampling this rule *is* the synchronous barrier: no group of step s+1 starts before the
weights of step s are published.

Over-sampling (`oversample` = k) keeps k more groups in flight than the steps need, and the
trainer takes groups in completion order, so a step trains on the first `batch_groups` to
complete and one slow group no longer holds it up. The k left over train at a later step if
they are still fresh enough, and are otherwise dropped as stale and counted: under sync
(max_staleness 0) that is every one of them, k groups of gym work wasted per step.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from trainer.types import DROPPED_STALE, ERRORED, IN_FLIGHT, TRAINED, Fate, Group, Trajectory


@dataclass
class Accounting:
    """Trajectory counts. At stop: generated = trained + dropped_stale + errored + in_flight."""

    generated: int = 0
    trained: int = 0
    dropped_stale: int = 0
    errored: int = 0
    abandoned: int = 0  # in rollout when the run stopped
    buffered: int = 0  # completed but not trained when the run stopped

    @property
    def in_flight(self) -> int:
        return self.abandoned + self.buffered

    def balanced(self) -> bool:
        return self.generated == self.trained + self.dropped_stale + self.errored + self.in_flight


class Stopped(Exception):
    """The run is stopping; rollout work in progress is abandoned."""


class PipelineFailure(RuntimeError):
    """The run cannot go on: a rollout thread crashed, or every episode ends in an error."""


# This many fully errored groups in a row, and no trained group between them, stop the run:
# the gym is broken, and waiting for a batch would wait forever.
ERRORED_STREAK_LIMIT = 8


def admits(
    started: int, wasted: int, trainer_version: int, max_staleness: int, batch_groups: int, oversample: int = 0
) -> bool:
    """The admission rule: may one more group start? The real buffer and the simulator
    (harness/sim/) both ask this one function, so the rule lives in one place."""
    return started - wasted < (trainer_version + max_staleness + 1) * batch_groups + oversample


class ReadyBuffer:
    def __init__(self, batch_groups: int, group_size: int, max_staleness: int, oversample: int = 0) -> None:
        if max_staleness < 0 or oversample < 0:
            raise ValueError("max_staleness and oversample must be >= 0")
        self.batch_groups = batch_groups
        self.oversample = oversample
        self.group_size = group_size
        self.max_staleness = max_staleness
        self.accounting = Accounting()
        self.fates: list[Fate] = []  # one per trajectory that has one, as the accounting counts them
        self.staleness: dict[int, int] = {}  # staleness -> trained trajectories
        self._ready: deque[Group] = deque()
        self._started = 0
        self._wasted = 0
        self._trainer_version = 0
        self._stopping = False
        self._failure: PipelineFailure | None = None
        self._errored_streak = 0
        self._cond = threading.Condition()

    # -- rollout side ----------------------------------------------------------------------

    def admit(self) -> None:
        """Block until a new group may start; raises `Stopped` when the run ends."""
        with self._cond:
            while not self._stopping and not admits(
                self._started, self._wasted, self._trainer_version, self.max_staleness, self.batch_groups,
                self.oversample,
            ):
                self._cond.wait()
            if self._stopping or self._failure:
                raise Stopped
            self._started += 1
            self.accounting.generated += self.group_size

    def put(self, group: Group) -> None:
        with self._cond:
            self.accounting.errored += len(group.errored)
            self.fates += [Fate.of(t, ERRORED) for t in group.errored]
            if group.trajectories:
                self._ready.append(group)
                self._errored_streak = 0
            else:
                self._wasted += 1
                self._errored_streak += 1
                if self._errored_streak >= max(ERRORED_STREAK_LIMIT, self.batch_groups):
                    self._failure = PipelineFailure(
                        f"the last {self._errored_streak} groups ended in infrastructure errors; "
                        f"the gym is not working. Last error: {group.error}"
                    )
            self._cond.notify_all()

    def fail(self, why: BaseException) -> None:
        """A rollout thread crashed: stop the run with its error instead of waiting forever."""
        with self._cond:
            if self._failure is None:
                self._failure = PipelineFailure(f"a rollout thread failed: {type(why).__name__}: {why}")
                self._failure.__cause__ = why
            self._cond.notify_all()

    def abandon(self, trajectories: list[Trajectory]) -> None:
        """A group the run stopped in rollout: its trajectories, each as far as it got."""
        with self._cond:
            self.accounting.abandoned += len(trajectories)
            self.fates += [Fate.of(t, IN_FLIGHT) for t in trajectories]

    @property
    def stopping(self) -> bool:
        return self._stopping or self._failure is not None

    def depth(self) -> int:
        with self._cond:
            return len(self._ready)

    # -- trainer side ----------------------------------------------------------------------

    def take_batch(self, version: int) -> list[Group]:
        """Wait for `batch_groups` groups fresh enough for a trainer at `version`."""
        batch: list[Group] = []
        with self._cond:
            while len(batch) < self.batch_groups:
                while not self._ready and not self._stopping and self._failure is None:
                    self._cond.wait()
                if self._failure is not None:
                    raise self._failure
                if self._stopping:
                    self._ready.extendleft(reversed(batch))
                    raise Stopped
                group = self._ready.popleft()
                staleness = version - group.version
                if staleness > self.max_staleness:
                    self.accounting.dropped_stale += len(group.trajectories)
                    self.fates += [Fate.of(t, DROPPED_STALE, version) for t in group.trajectories]
                    self._wasted += 1
                    self._cond.notify_all()
                    continue
                batch.append(group)
            for group in batch:
                n = len(group.trajectories)
                self.accounting.trained += n
                self.fates += [Fate.of(t, TRAINED, version) for t in group.trajectories]
                self.staleness[version - group.version] = self.staleness.get(version - group.version, 0) + n
        return batch

    def advance(self, version: int) -> None:
        """The trainer published `version`: more groups may start."""
        with self._cond:
            self._trainer_version = version
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def close_books(self) -> Accounting:
        """After every rollout thread has stopped: count what is left in the buffer."""
        with self._cond:
            self.accounting.buffered = sum(len(g.trajectories) for g in self._ready)
            self.fates += [Fate.of(t, IN_FLIGHT) for g in self._ready for t in g.trajectories]
            return self.accounting
