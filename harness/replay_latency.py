"""The `replay-latency` gym: a cost card's step times, waited out asleep, at any pool size.

`harness benchmark` ends with what the planner predicts for a target node (harness/predict.py):
64 to 160 gym workers, which a small machine has not the cores to run real checkers on. This
gym keeps every part of a run real but the checking: the replay policy's answers, the rollout
threads, the gym pool's worker processes and their round trips, the buffer and the trainer. It
answers each step with the outcome its candidate is labelled with, after a delay drawn from a
cost card (harness/costcard.py) and spent in `time.sleep`: a worker that waits uses no CPU, so
a 2-core machine holds as many gym workers as the target node. Its figures are the pipeline at
the target's scale with **emulated gym latency** (docs/benchmarks.md): nothing is checked, so it
is no environment to train on, and its `describe()` says what it emulates.

Options: `card` (required: a card.json, from a run's directory or `harness gyms profile NAME --out
PATH`), `tasks` (how many synthetic tasks; default 64, the card does not record its gym's), `seed`
(of the delay draws; default 0).

* Candidates: each task has CHOICES known-good (`pass`) and CHOICES known-bad (`fail`) answers,
  and CHOICES non-terminating ones (`timeout`) where the card measured their time apart
  (`by_expect`, `harness gyms profile`); a card from a run did not, and has its hangs inside its one
  distribution. The replay policy picks among them in its mix (trainer/rules/answers.py). There
  are several of each kind so that the episodes of a group, which share a task, mostly pick
  different answers and so wait independent delays, as the simulator draws them.
* Delays: one of the card's equally likely values (harness/sim/distribution.py), chosen by a
  SHA-256 of (seed, task, answer, turn), as the replay policy draws its actions, so sync and async
  runs wait the same delays. From the answer's kind's distribution where the card has one (a pass
  takes a pass's time), else from `service_s`, the card's distribution of every step.
* Turns: at most as many as the card's turn distribution has (`max_turns`). An episode ends at
  its first pass, and the replay policy chooses when that is: each turn passes with its skill
  (0.5), so the turns are that mix's, (0.5, 0.25, 0.25) for three. A card measured by `harness
  gyms profile` on a gym whose every task has a reference has exactly these; a card from a run has
  a shape fitted to its measured mean, which can differ (`describe()` gives both means), and a
  prediction to compare with such a run should use these turns.
* Feedback: a fail's (or a hang's) message is padded with spaces to the card's `feedback_tokens`
  by trainer/rules/context.py's estimate, so the replay policy's prompts grow each turn as on the
  gym the card measured, and its engine charges their prefill at the profile's rate.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gyms.base import Candidate, Episode, Gym, Outcome, Task, Verdict
from gyms.options import Options
from trainer.rules.answers import AnswerMix
from trainer.rules.context import feedback_of

if TYPE_CHECKING:
    from harness.costcard import CostCard

NAME = "replay-latency"
CHOICES = 16  # answers of each kind per task: two of a group's four episodes share one 1 time in 16
SLACK_S = 1.0  # the step timeout is the card's longest delay and this: a late wake-up is no hang
_OPTIONS = Options(NAME)
_Answers = Mapping[str, tuple[str, tuple[float, ...]]]  # action -> (its kind, its delay at each turn)


class ReplayLatencyEpisode(Episode):
    def __init__(self, task: Task, max_turns: int, answers: _Answers, feedback_tokens: float = 0.0) -> None:
        super().__init__(task, max_turns)
        self.answers = answers  # its task's, a few KB: the worker needs no card
        self.feedback_tokens = feedback_tokens  # the card's: what a fail's message is padded to

    def evaluate(self, action: str) -> Verdict:
        known = self.answers.get(action)
        if known is None:
            return Verdict(0.0, Outcome.FAIL, "Not one of this emulated gym's answers: a fail, at once.")
        kind, delays = known
        delay = delays[self.turn - 1]
        time.sleep(delay)  # asleep: a waiting worker leaves the cores to the pipeline
        info = {"emulated_delay_s": delay}
        if kind == "pass":
            return Verdict(1.0, Outcome.PASS, f"pass (emulated: {delay:.3f} s, a pass's time on the card)", info)
        if kind == "timeout":
            message = f"stopped at the time limit (emulated: {delay:.3f} s, a hang's time on the card)"
            return Verdict(0.0, Outcome.FAIL, feedback_of(message, self.feedback_tokens), {**info, "timed_out": True})
        message = f"fail (emulated: {delay:.3f} s, a step's time on the card)"
        return Verdict(0.0, Outcome.FAIL, feedback_of(message, self.feedback_tokens), info)


class ReplayLatencyGym(Gym):
    name = NAME
    version = "0.1.0"
    required_options = ("card",)

    def __init__(self, card: str = "", tasks: int | str = 64, seed: int | str = 0) -> None:
        # Imported here, not at the top: the pool's workers import this module to unpickle episodes,
        # and the card's module brings numpy (about 10 MB a worker, 1.6 GB over 160 of them).
        from harness import costcard

        self.card = _load(str(card).strip(), costcard.load)
        self.size = _OPTIONS.whole("tasks", tasks, 1)
        self.seed = _OPTIONS.whole_number("seed", seed)
        self.max_turns = len(self.card.turns)
        self.kinds = ("pass", "fail", "timeout") if "timeout" in self.card.by_expect else ("pass", "fail")
        # The turns the replay policy gives: each turn ends the episode with its chance of a pass.
        self.turns = costcard.turn_pmf(AnswerMix().shares(self.kinds)["pass"], self.max_turns)
        self._values = {"step": self.card.service_s.values,
                        **{kind: d.values for kind, d in self.card.by_expect.items()}}  # fmt: skip
        self.step_timeout_s = max(max(values) for values in self._values.values()) + SLACK_S
        self._tasks = [Task(f"{NAME}/{i}", f"Emulated task {i} of the {self.card.gym} gym's cost card.",
                            reference=_action("pass", 0)) for i in range(self.size)]  # fmt: skip
        self._answers: dict[str, _Answers] = {}

    def tasks(self, split: str = "train") -> Sequence[Task]:
        if split != "train":
            raise ValueError(f"unknown split {split!r}; the {NAME} gym has 'train'")
        return self._tasks

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        labels = {"pass": "pass", "fail": "fail", "timeout": "hang"}
        return [Candidate(_action(kind, k), kind, "reference" if (kind, k) == ("pass", 0) else f"{labels[kind]}-{k}")
                for kind in self.kinds for k in range(CHOICES)]  # type: ignore[arg-type]  # fmt: skip

    def open(self, task: Task) -> ReplayLatencyEpisode:
        # Drawn once per task, here: the workers draw nothing. Two rollout threads that open one task
        # at once both draw the same table, so the race needs no lock.
        if task.id not in self._answers:
            self._answers[task.id] = {
                c.action: (c.expect, tuple(self._delay(task, c, turn) for turn in range(1, self.max_turns + 1)))
                for c in self.candidates(task, random.Random(task.id))
            }  # fmt: skip
        return ReplayLatencyEpisode(task, self.max_turns, self._answers[task.id], self.card.feedback_tokens)

    def _delay(self, task: Task, candidate: Candidate, turn: int) -> float:
        """One of the card's equally likely values for this answer at this turn, by a hash of
        (seed, task, answer, turn) alone: whatever order the episodes ask in."""
        values = self._values.get(candidate.expect, self._values["step"])
        key = json.dumps([self.seed, task.id, candidate.action, turn])
        return values[int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % len(values)]

    def describe(self) -> dict[str, str]:
        return {
            "gym": NAME, "version": self.version, "latency": "emulated (slept, not checked)",
            "emulates": self.card.gym, "card": self.card.source,
            "delays": "per kind (by_expect)" if self.card.by_expect else "one distribution (service_s)",
            "card_mean_step_s": f"{self.card.service_s.mean:.4f}", "card_mean_turns": f"{self.card.mean_turns:.3f}",
            "replay_mean_turns": f"{sum((t + 1) * p for t, p in enumerate(self.turns)):.3f}",
            "feedback_tokens": f"{self.card.feedback_tokens:.0f}",
        }  # fmt: skip


def _action(kind: str, k: int) -> str:
    return f"emulated {kind} answer {k}"


def _load(text: str, load: Callable[[Path], CostCard]) -> CostCard:
    """The card at `text`, or one error line that names the option and the fix."""
    fix = "pass a run's card.json (results/runs/RUN/card.json) or one `harness gyms profile GYM --out PATH` wrote"
    if not text:
        raise ValueError(f"the {NAME} gym replays a cost card: give one with -o card=PATH; {fix}")
    where, path = f"{NAME} gym option card={text!r}", Path(text)
    if not path.is_file():
        raise ValueError(f"{where}: no such file; {fix}")
    try:
        return load(path)
    except ValueError as exc:  # unreadable, not JSON, or not a card's fields
        raise ValueError(f"{where}: {exc}; {fix}") from None
