"""A gym whose check costs nothing: the reward is whether the action says "pass"."""

from __future__ import annotations

import random

from gyms import Candidate, Episode, Gym, Outcome, Task, Verdict


class NullEpisode(Episode):
    def evaluate(self, action: str) -> Verdict:
        if action == "pass":
            return Verdict(1.0, Outcome.PASS, "ok")
        return Verdict(0.0, Outcome.FAIL, "not ok")


class NullGym(Gym):
    name = "null"
    version = "1"
    step_timeout_s = 1.0

    def tasks(self, split: str = "train") -> list[Task]:
        return [Task(f"null/{i}", "say pass", reference="pass") for i in range(16)]

    def open(self, task: Task) -> Episode:
        return NullEpisode(task)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [Candidate("pass", "pass", "reference"), Candidate("no", "fail", "wrong")]
