"""A task's predicted cost: the gym time one of its trajectories will take.

A trajectory's gym time is the sum of its gym steps' service seconds (`Trajectory.gym_s`). The
prediction for task t, from what the run has observed so far and an optional cost card:

    predicted_t = (S_t + K * prior_t) / (n_t + K)

S_t and n_t are the gym seconds summed and the count of t's finished trajectories, and prior_t is
the card's figure for t where the card has one, else the gym-wide mean of every trajectory
observed (S / n over all tasks). This is the mean shrunk towards the prior: with no observation
of t it is the prior, and t's own mean takes over as its trajectories come in, half-way at K.
K = 4 (`PRIOR_WEIGHT`) makes the prior worth one group at the default group size: one group of
t already moves the prediction half-way to what t measured. Before anything is observed the
prediction is the card's figure for t, or None (nothing is known).

A card's figure for t is its per-task mean service seconds per step times its mean turns per
episode (harness/costcard.py `CostCard.task_costs`, passed in as a plain mapping: trainer/ does
not depend on harness/); a task the card lacks is predicted from the run alone.

Only trajectories that ended without an infrastructure error are observed: an errored one's gym
time (a dead worker, a host timeout, a missing tool) says how the infrastructure failed, not
what the task costs. A trajectory the run stopped mid-way is not observed either (it has no end).

Pure: `CostBook` is frozen, `observed` returns a new book; the rollout keeps the current book
under a lock (trainer/rollout.py `CostPredictor`), and a simulator can keep one on its clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# The prior's weight in trajectories (K above): one group at the default group size.
PRIOR_WEIGHT = 4.0


@dataclass(frozen=True)
class CostBook:
    card: Mapping[str, float] = field(default_factory=dict)  # a card's predicted gym seconds per trajectory, by task
    sums: Mapping[str, tuple[float, int]] = field(default_factory=dict)  # by task: (gym seconds summed, trajectories)
    total_s: float = 0.0  # every task's observed gym seconds
    total_n: int = 0  # and trajectories
    k: float = PRIOR_WEIGHT

    def __post_init__(self) -> None:
        if self.k <= 0:
            raise ValueError(f"the prior's weight must be positive, got {self.k}")
        object.__setattr__(self, "card", MappingProxyType(dict(self.card)))
        object.__setattr__(self, "sums", MappingProxyType(dict(self.sums)))

    def prior(self, task_id: str) -> float | None:
        """The card's figure for the task, else the gym-wide mean observed, else None."""
        if task_id in self.card:
            return self.card[task_id]
        return self.total_s / self.total_n if self.total_n else None

    def predict(self, task_id: str) -> float | None:
        """The predicted gym seconds of one trajectory of `task_id`; None before anything is known."""
        prior = self.prior(task_id)
        if prior is None:
            return None
        s, n = self.sums.get(task_id, (0.0, 0))
        return (s + self.k * prior) / (n + self.k)

    def observed(self, task_id: str, gym_s: Iterable[float]) -> CostBook:
        """The book after the finished trajectories of `task_id` (their gym seconds, each one;
        errored ones left out by the caller) were observed."""
        times = list(gym_s)
        if not times:
            return self
        if min(times) < 0:
            raise ValueError(f"gym time cannot be negative, got {min(times)}")
        s, n = self.sums.get(task_id, (0.0, 0))
        sums = {**self.sums, task_id: (s + sum(times), n + len(times))}
        return CostBook(self.card, sums, self.total_s + sum(times), self.total_n + len(times), self.k)
