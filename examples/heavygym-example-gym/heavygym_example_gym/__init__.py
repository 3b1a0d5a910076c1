"""A minimal third-party gym: the model must reverse a word.

It shows the whole plugin contract: a `Gym` subclass with tasks, an `Episode` whose
`evaluate` returns a `Verdict`, known candidates for the conformance check, and one entry
point in pyproject.toml. Its checker is pure Python on a string, so it needs no sandbox.
"""

from __future__ import annotations

import random

from gyms import Candidate, Episode, Gym, Outcome, Task, Verdict

WORDS = ["sandbox", "verilog", "gradient", "rollout", "lean", "modelica", "buffer", "policy"]


class ReverseEpisode(Episode):
    def evaluate(self, action: str) -> Verdict:
        lines = action.strip().splitlines()
        answer = lines[-1].strip() if lines else ""
        target = self.task.metadata["word"][::-1]
        if not answer:
            return Verdict(0.0, Outcome.FAIL, "Empty answer: write the reversed word on the last line.")
        if answer == target:
            return Verdict(1.0, Outcome.PASS, "Correct.")
        return Verdict(0.0, Outcome.FAIL, f"{answer!r} is not the reversed word; try again.")


class ReverseGym(Gym):
    name = "reverse"
    version = "0.1.0"
    step_timeout_s = 1.0

    def __init__(self, max_turns: int | str = 2) -> None:
        self.max_turns = int(max_turns)

    def tasks(self, split: str = "train") -> list[Task]:
        if split not in ("train", "test"):
            raise ValueError(f"unknown split {split!r}; the reverse gym has 'train' and 'test'")
        words = WORDS[:6] if split == "train" else WORDS[6:]
        return [
            Task(f"reverse/{w}", f"Reverse the word {w!r}. Answer with the reversed word alone.",
                 reference=w[::-1], metadata={"word": w}, split=split)
            for w in words
        ]  # fmt: skip

    def open(self, task: Task) -> Episode:
        return ReverseEpisode(task, self.max_turns)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        word = task.metadata["word"]
        return [
            *super().candidates(task, rng),
            Candidate(word, "fail", "not-reversed"),
            Candidate(word[::-1].upper(), "fail", "wrong-case"),
        ]
