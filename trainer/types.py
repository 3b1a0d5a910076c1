"""Records that flow through the pipeline: turns, trajectories and groups."""

from __future__ import annotations

from dataclasses import dataclass, field

from gyms import Outcome, Task


@dataclass(frozen=True)
class Request:
    """One generation: the task (replay policies act on it), the conversation so far, and where
    it stands in the run: the group (the task sampler's group id), the sample within the group
    and the turn, so a replay policy's answer can be a function of the request alone."""

    task: Task
    prompt: str
    turn: int  # 1-based
    group: int | None = None  # None outside a run (calibration, tests): a replay policy then
    sample: int | None = None  # uses the request's position in the generate call instead


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: list[int]
    response_tokens: list[int]
    logprobs: list[float]  # behaviour logprobs, one per response token
    version: int  # the policy version whose weights the engine generated this with (set by the policy)


@dataclass
class Turn:
    prompt: str
    generation: Generation
    observation: str = ""
    reward: float = 0.0
    outcome: Outcome = Outcome.FAIL


@dataclass
class Trajectory:
    task_id: str
    group_id: int
    version: int  # the version pinned for the episode: every turn's engine must have used it
    turns: list[Turn] = field(default_factory=list)
    sample: int = 0  # its place in the group
    gym_s: float = 0.0  # gym latency: the service times of its gym steps, summed

    @property
    def reward(self) -> float:
        return self.turns[-1].reward if self.turns else 0.0

    @property
    def outcome(self) -> Outcome:
        return self.turns[-1].outcome if self.turns else Outcome.ERROR

    def check_one_version(self) -> None:
        """Every turn was generated with the pinned version's weights, as the engine reports."""
        versions = {t.generation.version for t in self.turns}
        if versions != {self.version}:
            raise AssertionError(
                f"trajectory of {self.task_id} (group {self.group_id}) pinned version {self.version} but its "
                f"turns were generated with versions {sorted(versions)}"
            )


@dataclass
class Group:
    """G trajectories of one task, all from one policy version, with GRPO advantages."""

    id: int
    task_id: str
    version: int
    trajectories: list[Trajectory]  # the trainable ones
    advantages: list[float]
    errored: list[Trajectory] = field(default_factory=list)  # ended in an infrastructure error: never trained

    @property
    def error(self) -> str:
        """One errored trajectory's message, for reports."""
        return self.errored[0].turns[-1].observation if self.errored else ""


# A trajectory's fate, as the slow-sample bias audit counts it (trainer/bias.py).
TRAINED, DROPPED_STALE, ERRORED, IN_FLIGHT = "trained", "dropped_stale", "errored", "in_flight"
FATES = (TRAINED, DROPPED_STALE, ERRORED, IN_FLIGHT)


@dataclass(frozen=True)
class Fate:
    """What became of one trajectory: trained or dropped stale at trainer `step`, errored, or in
    flight (in rollout, or completed and not yet trained) when the run stopped."""

    group: int
    sample: int
    task_id: str
    version: int
    turns: int
    gym_s: float
    reward: float
    outcome: str
    fate: str
    step: int | None = None

    @classmethod
    def of(cls, traj: Trajectory, fate: str, step: int | None = None) -> Fate:
        return cls(traj.group_id, traj.sample, traj.task_id, traj.version, len(traj.turns), traj.gym_s, traj.reward,
                   traj.outcome.value, fate, step)  # fmt: skip


def next_prompt(prompt: str, response: str, observation: str) -> str:
    """The conversation for the next turn: what was asked, answered and observed so far."""
    return f"{prompt}{response}\n\nFeedback:\n{observation}\n\nRevised answer:\n"
