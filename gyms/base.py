"""The gym interface: tasks, episodes, step results.

A `Gym` hands out `Task`s and opens an `Episode` per task. The model answers with a string
action; `Episode.step(action)` checks it (compile, simulate, verify...) and returns a
`StepResult` whose observation is the feedback for the model's next turn.

Episodes travel between processes: the gym pool pickles an episode to a worker process,
steps it there, and sends it back. Keep an episode's state small and picklable (pass paths
to artifacts, not their bytes) and do not hold the `Gym` itself in it.
"""

from __future__ import annotations

import random
import traceback
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from gyms.attacks import AttackSuite

from gyms.answer_text import MAX_ANSWER_BYTES, oversize


class Outcome(str, Enum):
    """How a step ended.

    `ERROR` is an infrastructure failure (sandbox crash, missing tool, host timeout): it is
    kept out of the loss and counted. A timeout caused by the model's answer (an infinite
    loop in a design) is a `FAIL`.
    """

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    reference: str | None = None  # a known-good action, for conformance checks and replay
    metadata: Mapping[str, Any] = field(default_factory=dict)
    split: str = "train"


@dataclass(frozen=True)
class Verdict:
    """What a gym concluded about one action; `Episode.step` turns it into a `StepResult`."""

    reward: float
    outcome: Outcome
    feedback: str
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.reward <= 1.0:
            raise ValueError(f"reward must lie in [0, 1], got {self.reward}")
        if self.outcome is Outcome.PASS and self.reward != 1.0:
            raise ValueError("a passing verdict must have reward 1.0")


@dataclass(frozen=True)
class StepResult:
    """One step's result. How the episode ended, in Gymnasium's sense, is one of:

    - `terminated`: the task reached a final state: a pass, or an `error` (the checker could
      not judge, and the episode cannot go on; its outcome keeps it out of the loss).
    - `truncated`: a fail at the last turn, cut off by `max_turns`, a limit outside the task:
      the model might still have got there.
    - neither: a fail with turns left; the observation is the feedback for the next turn.
    """

    observation: str  # feedback for the model's next turn (or the final verdict)
    reward: float
    terminated: bool
    truncated: bool
    outcome: Outcome
    turn: int  # 1-based turn number of this step
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.terminated and self.truncated:
            raise ValueError("a step ends its episode either terminated or truncated, not both")

    @property
    def done(self) -> bool:
        """The episode is over: no further step may be taken."""
        return self.terminated or self.truncated


@dataclass(frozen=True)
class Candidate:
    """A known action for a task, used by the replay policy and the conformance check.

    `expect` is what the gym promises: `pass` (outcome pass, reward 1), `fail` (anything but a
    pass), or `timeout` (the action never terminates and must end as a `fail` within the
    gym's step timeout, stopped by its time limit: the step's `info["timed_out"]` is true).

    `stage` is what the action exercises, for gyms that report where a step ended in
    `info["stage"]`: a `fail` action must end there (a syntax error at the compile stage, not
    later); a `timeout` action must be stopped there, and one that the gym refused before it
    got there (a pre-check, a screen, a build) tested nothing: its check is not applicable.
    """

    action: str
    expect: Literal["pass", "fail", "timeout"]
    label: str
    stage: str | None = None


@dataclass(frozen=True)
class ToolCheck:
    """Whether one external tool that a gym needs is usable, and how to get it if not."""

    name: str
    available: bool
    version: str = ""
    install_hint: str = ""


class EpisodeFinishedError(RuntimeError):
    pass


class InfrastructureError(Exception):
    """A fault that does not depend on the answer: a tool is missing, the sandbox cannot start,
    the task's own files fail. Raised from `Episode.evaluate`, it ends the step as an `error`
    (kept out of the loss). Any other exception there is the answer's `fail` (see `Episode.step`)."""


# `StepResult.info` key of a step whose checker raised on the answer: the exception, for the record.
GYM_EXCEPTION = "gym_exception"


class Episode(ABC):
    """One attempt at one task, over at most `max_turns` steps.

    Subclasses implement `evaluate`; `step` keeps the turn bookkeeping in one place: the
    episode terminates on a pass or an infrastructure error, and is truncated when a fail
    uses its last turn (see `StepResult`).
    """

    # Answers are capped before any parsing: model output is untrusted and may be degenerate.
    max_answer_bytes: ClassVar[int] = MAX_ANSWER_BYTES
    # True for an episode that keeps state in its worker's process between turns (a connection):
    # the pool runs its next turn on the same worker slot; if that worker was replaced meanwhile,
    # the episode finds its state gone and must end as an `error`.
    stays_on_worker: ClassVar[bool] = False

    def __init__(self, task: Task, max_turns: int = 1) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.task = task
        self.max_turns = max_turns
        self.turn = 0
        self.done = False

    @abstractmethod
    def evaluate(self, action: str) -> Verdict:
        """Check one action of the model: return a FAIL for a bad one, raise `InfrastructureError`
        for a fault that is not the answer's."""

    def step(self, action: str) -> StepResult:
        if self.done:
            raise EpisodeFinishedError(
                f"episode of task {self.task.id!r} is finished after {self.turn} turn(s); "
                "open a new one with gym.open(task)"
            )
        if not isinstance(action, str):
            raise TypeError(f"an action is a str (the model's answer), got {type(action).__name__}")
        self.turn += 1
        size = oversize(action, self.max_answer_bytes)
        if size is not None:
            feedback = f"The answer is {size:,} bytes; the limit is {self.max_answer_bytes:,}. Answer again, shorter."
            verdict = Verdict(0.0, Outcome.FAIL, feedback, {"answer_bytes": size})
        else:
            verdict = self._judge(action)
        terminated = verdict.outcome is not Outcome.FAIL
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        return StepResult(
            observation=verdict.feedback,
            reward=verdict.reward,
            terminated=terminated,
            truncated=truncated,
            outcome=verdict.outcome,
            turn=self.turn,
            info=dict(verdict.info),
        )

    def fault(self, why: str, detail: str = "") -> StepResult:
        """End the episode on a fault outside `evaluate` (its worker died, the host timed it out,
        it could not travel): the turn is used and the step is an infrastructure `error`."""
        self.turn += 1
        self.done = True
        return StepResult(
            observation=f"internal error while checking the answer: {why}",
            reward=0.0,
            terminated=True,
            truncated=False,
            outcome=Outcome.ERROR,
            turn=self.turn,
            info={"error": f"{why}\n{detail}" if detail else why},
        )

    def _judge(self, action: str) -> Verdict:
        """`evaluate`, where only the infrastructure makes an `error`. An answer that makes the
        checker raise would otherwise leave the loss (a policy could learn to hide its failures
        that way), so it fails; the exception is kept in `info`, and the pool counts it, so the
        gym's bug is still seen."""
        try:
            return self.evaluate(action)
        except InfrastructureError as exc:
            return Verdict(0.0, Outcome.ERROR, f"internal error: {exc}", {"error": str(exc)})
        except Exception as exc:
            place = traceback.extract_tb(exc.__traceback__)[-1]
            raised = f"{type(exc).__name__}: {str(exc)[:500]} (at {place.filename}:{place.lineno})"
            feedback = (f"Your answer could not be checked: the checker failed on it ({type(exc).__name__}). "
                        "Answer again in the form the task asks for.")  # fmt: skip
            return Verdict(0.0, Outcome.FAIL, feedback, {GYM_EXCEPTION: raised})

    def close(self) -> None:
        """Release the episode's artifacts (work directories). Safe to call twice."""

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The roles a gym's feedback message may take (`Gym.feedback_role`): a user's words, or a tool's output.
FEEDBACK_ROLES = ("user", "tool")


class Gym(ABC):
    """A family of tasks and the checker that scores answers to them.

    Register a gym under the `heavygym.gyms` entry-point group; the registry instantiates it
    with keyword options (`harness ... --gym-option key=value`).
    """

    name: ClassVar[str]
    version: ClassVar[str] = "0"
    max_turns: int = 1
    # The role of the feedback message in the model's conversation: "user", or "tool" where the
    # gym's feedback is a tool's output (a policy whose chat template has no tool role renders it
    # as "user"; trainer/policies/chat.py). A class attribute for most gyms; a gym that learns its
    # role when it starts (the `openenv` gym, from its server) sets it on the instance, as `max_turns`.
    feedback_role: str = "user"  # one of FEEDBACK_ROLES
    step_timeout_s: float = 10.0  # the longest one step may take; the host allows a margin on top
    # Options without a default, for `harness gyms list` ("url|app": either one of the two).
    required_options: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def tasks(self, split: str = "train") -> Sequence[Task]:
        """The tasks of a split; raise `ValueError` naming the known splits for an unknown one."""

    @abstractmethod
    def open(self, task: Task) -> Episode:
        """Start an episode of `task`."""

    def excluded_tasks(self) -> Mapping[str, str]:
        """Tasks the gym left out of `tasks()` because their own files are unusable here (a
        dataset's reference that fails its own checker, a problem it could not read), each task
        id with the reason; `harness gyms list` and `harness gyms check` show them."""
        return {}

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        """Known-good and known-bad actions for `task`. Gyms should add realistic wrong ones."""
        if task.reference is None:
            return []
        return [Candidate(task.reference, "pass", "reference")]

    def format_examples(self, rng: random.Random, per_task: int) -> list[tuple[str, str]]:
        """(prompt, response) pairs that show the answer format and nothing of which answer is
        right: the supervised format warm-up of a learning policy (`harness benchmark --warmup`),
        which RL starts from. Empty: the gym knows no such format."""
        return []

    def with_short_time_limits(self) -> Gym:
        """This gym with time limits just long enough to see a hang stopped, for the conformance
        check's `timeout` candidates (waiting out the full limit once per task is most of a
        check's time). The default is the gym itself."""
        return self

    def answer_keys(self) -> Sequence[Path]:
        """Host paths that no sandbox may read: the answer keys (reference solutions, expected
        outputs, recorded traces) of this gym's tasks. A gym pool masks them in each of its
        workers before the worker's first step (`gyms.sandbox.hide_from_sandboxes`), so every
        sandbox a step starts shows them empty, whatever that process imported."""
        return ()

    def tools(self) -> list[ToolCheck]:
        """The external tools this gym runs, with their availability."""
        return []

    def attack_suites(self) -> Sequence[AttackSuite]:
        """Reward hacks this gym must fail (`gyms.attacks`): `harness gyms attack NAME` runs them and
        reports the escapes. Empty: the gym declares none (docs/writing-a-gym.md says how to)."""
        return ()

    def describe(self) -> dict[str, str]:
        """Versions of the gym and its tools, for run records."""
        described = {"gym": self.name, "version": self.version}
        described.update({t.name: t.version or "missing" for t in self.tools()})
        return described
