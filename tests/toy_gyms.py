"""Small gyms written for the tests: each action names a behaviour of the episode."""

from __future__ import annotations

import os
import random
import time

from gyms import Candidate, Episode, Gym, Outcome, Task, Verdict
from gyms.sandbox import Sandbox

_kept: list = []  # sandboxed processes this worker started and keeps running


class ToyEpisode(Episode):
    """`pass`, `fail`, `sleep:SECONDS`, `crash` (the process dies), `raise` (a gym bug),
    `orphan:SECONDS` (starts a sandboxed `sleep SECONDS`, then the process dies)."""

    def evaluate(self, action: str) -> Verdict:
        if action == "pass":
            return Verdict(1.0, Outcome.PASS, "well done", {"pid": os.getpid()})
        if action.startswith("sleep:"):
            time.sleep(float(action.split(":")[1]))
            return Verdict(0.0, Outcome.FAIL, "slept", {"pid": os.getpid()})
        if action == "crash":
            os._exit(7)
        if action == "raise":
            raise RuntimeError("a bug in the gym")
        if action.startswith("orphan:"):  # start a sandboxed process, then die without cleaning up
            _kept.append(Sandbox().popen(["sleep", action.split(":")[1]], Sandbox().workdir()))
            os._exit(7)
        return Verdict(0.0, Outcome.FAIL, f"{action!r} is wrong", {"pid": os.getpid()})


class ToyGym(Gym):
    name = "toy"
    version = "1"
    step_timeout_s = 1.0

    def __init__(self, max_turns: int | str = 3, tasks: int | str = 3) -> None:
        self.max_turns = int(max_turns)
        self.n_tasks = int(tasks)

    def tasks(self, split: str = "train") -> list[Task]:
        return [Task(f"toy/{i}", "say pass", reference="pass") for i in range(self.n_tasks)]

    def open(self, task: Task) -> Episode:
        return ToyEpisode(task, self.max_turns)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [*super().candidates(task, rng), Candidate("nope", "fail", "wrong")]


class LyingGym(ToyGym):
    """Breaks every promise the conformance check tests."""

    name = "lying"

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [
            Candidate("nope", "pass", "reference"),  # the "reference" fails
            Candidate("pass", "fail", "bad-but-passes"),
            Candidate("sleep:60", "timeout", "hang"),  # beyond the host timeout: an error
            Candidate("raise", "fail", "gym-bug"),
        ]
