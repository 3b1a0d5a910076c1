"""The scheduler: which groups a step trains, which task starts next, whose gym step runs next.

Two schedules (`RunConfig.schedule`, `--schedule` on benchmark, simulate and plan):

fifo
    Tasks start in the sampler's seeded order, the gym pool serves steps in the order they were
    submitted, and the trainer takes groups in completion order, dropping any staler than
    max_staleness. At bounded staleness the groups that drop are the slowest ones: on heavy
    environments, the hardest tasks (the bias audit's slow/fast acceptance, trainer/bias.py).

cost-aware
    The same admission rule and the same staleness bound, three changes:

    1. Deadline batching. A group pinned at version v can be trained by steps v .. v + S
       (S = max_staleness) and expires after. The trainer takes ready groups oldest version first,
       and trains a batch only once the groups it leaves behind can all still be trained in time:
       for each k = 0..S, the untrained groups (ready or still in rollout) of version <= V - S + k
       number at most k * batch_groups after this batch (`keeps_deadlines`). Otherwise it waits
       for the next group to complete. So a slow group is waited for at the last step that can
       train it, instead of being overtaken by fast groups and dropped. Admission bounds the
       groups of each version (trainer/rules/buffer.py), which makes the rule feasible with no
       over-sampling; with over-sampling the surplus is dropped stale, as under fifo. Sync
       (S = 0) is unchanged: a batch is any batch_groups groups of the trainer's version.
    2. Deadline-first gym queue. A gym step of an older group runs before one of a newer group
       (`step_priority`), so the groups the trainer will wait for get the gym first; between
       groups of one version, the one predicted slower goes first (longest first shortens the
       version's last finish).
    3. Slow-first starts. Tasks are drawn in blocks of batch_groups from the same seeded order,
       each block predicted-slowest first (`slow_first`): the same tasks as fifo, block by block,
       with the slow ones given the most time before their deadline.

    Predictions come from trainer/rules/cost.py (a cost card's figures, or learned in the run).

The trainer never trains a group staler than max_staleness under either schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

SCHEDULES = ("fifo", "cost-aware")
# fifo stays the default while what cost-aware's staler samples cost a learning policy is unmeasured;
# on the heavy suite cost-aware met every target (docs/architecture.md, "The scheduler").
DEFAULT_SCHEDULE = "fifo"

T = TypeVar("T")


def check_schedule(name: str) -> str:
    if name not in SCHEDULES:
        raise ValueError(f"--schedule is {' or '.join(SCHEDULES)}, got {name!r}")
    return name


def keeps_deadlines(
    batch: Sequence[int], untrained: Mapping[int, int], trainer_version: int, max_staleness: int, batch_groups: int
) -> bool:
    """Whether training the groups of versions `batch` at `trainer_version` leaves every other
    untrained group (`untrained`: version -> groups, ready or in rollout, the batch's included)
    trainable before it expires. A batch made only of due groups is the best there is: with more
    due than the steps can train (over-sampling), the rest expire whatever the trainer waits for."""
    for k in range(max_staleness + 1):
        due_by = trainer_version - max_staleness + k  # versions that expire after step trainer_version + k
        due = sum(n for version, n in untrained.items() if version <= due_by)
        taken = sum(version <= due_by for version in batch)
        if due - taken > k * batch_groups and taken < len(batch):
            return False
    return True


def choose_batch(
    ready: Sequence[int], untrained: Mapping[int, int], trainer_version: int, max_staleness: int, batch_groups: int
) -> list[int] | None:
    """Deadline batching: the indices in `ready` (the ready groups' versions, in completion order)
    of the batch to train now, oldest version first; None to wait for another group."""
    order = sorted(range(len(ready)), key=ready.__getitem__)[:batch_groups]  # stable: completion order within a version
    if len(order) < batch_groups:
        return None
    versions = [ready[i] for i in order]
    return order if keeps_deadlines(versions, untrained, trainer_version, max_staleness, batch_groups) else None


def step_priority(version: int, predicted_s: float | None) -> tuple[int, float]:
    """A gym step's place in the cost-aware queue (lower first): its group's version, then the
    group's predicted cost, slower first; equals in the order they came. Not by group: serving
    one group's steps before the next one's completes the first group sooner, but starts the
    later groups' turn chains late, which lengthens a step that needs them all."""
    return version, -(predicted_s or 0.0)


def slow_first(block: Sequence[T], predict: Callable[[T], float | None]) -> list[T]:
    """A block of draws, predicted-slowest first; tasks with no prediction keep their place after
    those with one (stable)."""
    predicted = [(t, predict(t)) for t in block]
    known = sorted(((t, p) for t, p in predicted if p is not None), key=lambda tp: -tp[1])
    return [t for t, _ in known] + [t for t, p in predicted if p is None]
