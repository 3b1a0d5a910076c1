"""The ready buffer's rules: admission, staleness drops, and the books they keep.

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

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from trainer.rules.schedule import DEFAULT_SCHEDULE, check_schedule, choose_batch

# This many fully errored groups in a row, and no trained group between them, stop the run:
# the gym is broken, and waiting for a batch would wait forever.
ERRORED_STREAK_LIMIT = 8


class _Versioned(Protocol):
    version: int  # the policy version the group pinned


G = TypeVar("G", bound=_Versioned)


def room(
    started: int, wasted: int, trainer_version: int, max_staleness: int, batch_groups: int, oversample: int = 0
) -> int:
    """How many more groups may start now: the limit less the groups that count against it."""
    return (trainer_version + max_staleness + 1) * batch_groups + oversample - (started - wasted)


def admits(
    started: int, wasted: int, trainer_version: int, max_staleness: int, batch_groups: int, oversample: int = 0
) -> bool:
    """The admission rule: may one more group start?"""
    return room(started, wasted, trainer_version, max_staleness, batch_groups, oversample) > 0


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Books:
    """What the buffer has counted; each transition returns the next books."""

    started: int = 0  # groups admitted
    wasted: int = 0  # groups that will never be trained: fully errored, or dropped stale
    errored_streak: int = 0  # fully errored groups since the last one with a trajectory to train
    accounting: Accounting = Accounting()
    trained_by_staleness: tuple[int, ...] = ()  # trained trajectories at staleness 0, 1, ...

    def admitted(self, groups: int, group_size: int) -> Books:
        generated = self.accounting.generated + groups * group_size
        return replace(self, started=self.started + groups, accounting=replace(self.accounting, generated=generated))

    def completed(self, trainable: int, errored: int) -> Books:
        """A group's last episode ended: `trainable` trajectories wait for the trainer, `errored`
        never will. A group with none to train is wasted, and lengthens the errored streak."""
        if trainable and not errored and not self.errored_streak:
            return self  # the common case, nothing to count (kept free: a simulation completes millions)
        accounting = replace(self.accounting, errored=self.accounting.errored + errored)
        if trainable:
            return replace(self, errored_streak=0, accounting=accounting)
        return replace(self, wasted=self.wasted + 1, errored_streak=self.errored_streak + 1, accounting=accounting)

    def dropped_stale(self, trajectories: int) -> Books:
        dropped = self.accounting.dropped_stale + trajectories
        return replace(self, wasted=self.wasted + 1, accounting=replace(self.accounting, dropped_stale=dropped))

    def trained(self, batch: Iterable[tuple[int, int]]) -> Books:
        """A batch went to the trainer: (staleness, trajectories) of each of its groups."""
        counts, trained = list(self.trained_by_staleness), self.accounting.trained
        for staleness, trajectories in batch:
            counts += [0] * (staleness + 1 - len(counts))
            counts[staleness] += trajectories
            trained += trajectories
        return replace(self, accounting=replace(self.accounting, trained=trained), trained_by_staleness=tuple(counts))

    def stopped_with(self, abandoned: int = 0, buffered: int = 0) -> Books:
        """Trajectories the run stopped with: `abandoned` in rollout, `buffered` ready but not trained."""
        a = self.accounting
        return replace(self, accounting=replace(a, abandoned=a.abandoned + abandoned, buffered=a.buffered + buffered))

    def staleness_histogram(self) -> dict[int, int]:
        """Trained trajectories by staleness, as a run's result reports them."""
        return {staleness: n for staleness, n in enumerate(self.trained_by_staleness) if n}


@dataclass(frozen=True)
class BufferRules:
    """One run's buffer, and the questions the buffer and the simulator ask of it."""

    batch_groups: int
    group_size: int
    max_staleness: int
    oversample: int = 0
    schedule: str = DEFAULT_SCHEDULE  # trainer/rules/schedule.py

    def __post_init__(self) -> None:
        if self.max_staleness < 0 or self.oversample < 0:
            raise ValueError("max_staleness and oversample must be >= 0")
        check_schedule(self.schedule)

    def room(self, books: Books, trainer_version: int) -> int:
        return room(books.started, books.wasted, trainer_version, self.max_staleness, self.batch_groups,
                    self.oversample)  # fmt: skip

    def admits(self, books: Books, trainer_version: int) -> bool:
        return self.room(books, trainer_version) > 0

    def is_stale(self, group_version: int, trainer_version: int) -> bool:
        """The trainer takes groups in completion order; one too stale to train on is dropped."""
        return trainer_version - group_version > self.max_staleness

    def split_stale(self, groups: Iterable[G], trainer_version: int) -> tuple[deque[G], list[G]]:
        """The groups (anything with a `version`, in order) the trainer at `trainer_version` can still
        train, and those it drops as stale, each in their order."""
        fresh: deque[G] = deque()
        stale: list[G] = []
        for group in groups:
            (stale if self.is_stale(group.version, trainer_version) else fresh).append(group)
        return fresh, stale

    def choose(self, ready: Sequence[int], untrained: Mapping[int, int], trainer_version: int) -> list[int] | None:
        """The batch to train now, as indices into `ready` (the ready groups' versions in completion
        order, none of them stale); None to wait for another group. `untrained`: version -> groups
        ready or in rollout. fifo takes the first batch_groups to complete; cost-aware, by deadline."""
        if self.schedule == "fifo":
            return list(range(self.batch_groups)) if len(ready) >= self.batch_groups else None
        return choose_batch(ready, untrained, trainer_version, self.max_staleness, self.batch_groups)

    def gym_is_broken(self, books: Books) -> bool:
        """Enough fully errored groups in a row to stop the run (a batch's worth at least)."""
        return books.errored_streak >= max(ERRORED_STREAK_LIMIT, self.batch_groups)
