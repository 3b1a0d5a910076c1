"""The ready buffer: completed groups wait here for the trainer, under admission control.

Its rules (admission, staleness drops, the books) are trainer/rules/buffer.py's, which the
simulator follows too; this module keeps the lock around them, and what only a real run has:
the groups themselves, blocking until a rule allows, stopping, and each trajectory's fate.
"""

from __future__ import annotations

import threading
from collections import Counter, deque

from trainer.rules.buffer import Accounting, Books, BufferRules
from trainer.rules.schedule import DEFAULT_SCHEDULE
from trainer.types import DROPPED_STALE, ERRORED, IN_FLIGHT, TRAINED, Fate, Group, Trajectory


class Stopped(Exception):
    """The run is stopping; rollout work in progress is abandoned."""


class PipelineFailure(RuntimeError):
    """The run cannot go on: a rollout thread crashed, or every episode ends in an error."""


class ReadyBuffer:
    def __init__(
        self, batch_groups: int, group_size: int, max_staleness: int, oversample: int = 0,
        schedule: str = DEFAULT_SCHEDULE,
    ) -> None:  # fmt: skip
        self.rules = BufferRules(batch_groups, group_size, max_staleness, oversample, schedule)
        self.fates: list[Fate] = []  # one per trajectory that has one, as the accounting counts them
        self._books = Books()
        self._ready: deque[Group] = deque()
        # Groups in rollout by version: pinned, or the trainer's at admission until pinned (never
        # older than that), for the cost-aware trainer's deadlines.
        self._rollout: Counter[int] = Counter()
        self._trainer_version = 0
        self._stopping = False
        self._failure: PipelineFailure | None = None
        self._cond = threading.Condition()

    @property
    def accounting(self) -> Accounting:
        return self._books.accounting

    @property
    def staleness(self) -> dict[int, int]:
        """Trained trajectories by staleness."""
        return self._books.staleness_histogram()

    # -- rollout side ----------------------------------------------------------------------

    def admit(self) -> int:
        """Block until a new group may start, and return the trainer's version then (the group
        pins it or a newer one: `pinned`); raises `Stopped` when the run ends."""
        with self._cond:
            while not self._stopping and not self.rules.admits(self._books, self._trainer_version):
                self._cond.wait()
            if self._stopping or self._failure:
                raise Stopped
            self._books = self._books.admitted(1, self.rules.group_size)
            self._rollout[self._trainer_version] += 1
            return self._trainer_version

    def pinned(self, admitted: int, version: int) -> None:
        """A group admitted at trainer version `admitted` pinned policy `version`."""
        with self._cond:
            self._rollout[admitted] -= 1
            self._rollout[version] += 1
            if version != admitted:
                self._cond.notify_all()  # a newer group is due later: a waiting batch may do without it

    def put(self, group: Group) -> None:
        with self._cond:
            self._rollout[group.version] -= 1
            self._books = self._books.completed(len(group.trajectories), len(group.errored))
            self.fates += [Fate.of(t, ERRORED) for t in group.errored]
            if group.trajectories:
                self._ready.append(group)
            elif self.rules.gym_is_broken(self._books):
                self._failure = PipelineFailure(
                    f"the last {self._books.errored_streak} groups ended in infrastructure errors; "
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
            self._books = self._books.stopped_with(abandoned=len(trajectories))
            self.fates += [Fate.of(t, IN_FLIGHT) for t in trajectories]

    @property
    def stopping(self) -> bool:
        return self._stopping or self._failure is not None

    def depth(self) -> int:
        with self._cond:
            return len(self._ready)

    # -- trainer side ----------------------------------------------------------------------

    def take_batch(self, version: int) -> list[Group]:
        """Wait for the batch the schedule trains at `version` (trainer/rules/schedule.py),
        dropping the groups too stale to train as they complete."""
        with self._cond:
            while True:
                if self._failure is not None:
                    raise self._failure
                if self._stopping:
                    raise Stopped
                self._drop_stale(version)
                untrained = Counter(g.version for g in self._ready) + self._rollout
                chosen = self.rules.choose([g.version for g in self._ready], untrained, version)
                if chosen is not None:
                    break
                self._cond.wait()
            batch = [self._ready[i] for i in chosen]
            taken = set(chosen)
            self._ready = deque(g for i, g in enumerate(self._ready) if i not in taken)
            self._books = self._books.trained((version - g.version, len(g.trajectories)) for g in batch)
            self.fates += [Fate.of(t, TRAINED, version) for g in batch for t in g.trajectories]
        return batch

    def _drop_stale(self, version: int) -> None:
        fresh, stale = self.rules.split_stale(self._ready, version)
        if not stale:
            return
        for group in stale:
            self._books = self._books.dropped_stale(len(group.trajectories))
            self.fates += [Fate.of(t, DROPPED_STALE, version) for t in group.trajectories]
        self._ready = fresh
        self._cond.notify_all()  # a dropped group frees a place for admission

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
            self._books = self._books.stopped_with(buffered=sum(len(g.trajectories) for g in self._ready))
            self.fates += [Fate.of(t, IN_FLIGHT) for g in self._ready for t in g.trajectories]
            return self._books.accounting
