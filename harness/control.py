"""The control of `harness benchmark --control`: the same workload with a gym that answers at once.

`InstantGym` wraps a gym: the same tasks and candidates, so the replay policy draws exactly
the same answers, but an episode's step returns the verdict the candidate is labelled with
(`pass` passes; `fail` and `timeout` fail, as does any other answer) without running anything. Only the emulated
accelerator stages and the pipeline's own overhead are left, so a control run shows how much
of the idle and of the speedup the gym's work accounts for: in colocated placement there is
no gym work left to hide, and the control's speedup should be about 1.

It is loaded by path (`harness.control:InstantGym`), never registered as a gym: it checks
nothing and must not be mistaken for a real environment.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from gyms import Candidate, Episode, Gym, Outcome, Task, Verdict, make

PATH = "harness.control:InstantGym"


def options_for(gym: str, options: dict[str, str]) -> dict[str, str]:
    """The InstantGym options that wrap `gym` with its `options`."""
    return {"of": gym, **options}


def _digest(action: str) -> bytes:
    return hashlib.sha256(action.encode("utf-8", "surrogatepass")).digest()


class InstantEpisode(Episode):
    def __init__(self, task: Task, max_turns: int, passing: frozenset[bytes]) -> None:
        super().__init__(task, max_turns)
        self._passing = passing  # digests of the candidates labelled `pass` (small to pickle)

    def evaluate(self, action: str) -> Verdict:
        if _digest(action) in self._passing:
            return Verdict(1.0, Outcome.PASS, "pass (control: the candidate's label, nothing was run)")
        return Verdict(0.0, Outcome.FAIL, "fail (control: the candidate's label, nothing was run)")


class InstantGym(Gym):
    name = "instant"
    version = "0.1.0"

    def __init__(self, of: str, **options: Any) -> None:
        self.inner = make(of, **options)
        self.max_turns = self.inner.max_turns
        self.feedback_role = self.inner.feedback_role  # the control's conversations as the gym's
        self.step_timeout_s = self.inner.step_timeout_s
        self._passing: dict[str, frozenset[bytes]] = {}

    @cached_property
    def _described(self) -> dict[str, str]:
        return {"gym": f"instant control of {self.inner.name}", "version": self.version}

    def tasks(self, split: str = "train") -> Sequence[Task]:
        return self.inner.tasks(split)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return self.inner.candidates(task, rng)

    def open(self, task: Task) -> InstantEpisode:
        if task.id not in self._passing:  # the replay policy's candidate draw (trainer/policies/replay.py)
            candidates = self.inner.candidates(task, random.Random(task.id))
            self._passing[task.id] = frozenset(_digest(c.action) for c in candidates if c.expect == "pass")
        return InstantEpisode(task, self.max_turns, self._passing[task.id])

    def describe(self) -> dict[str, str]:
        return dict(self._described)
