"""Records that flow through the pipeline: requests, turns, trajectories and groups.

An episode is a conversation (`Message`s: the task's prompt as the first user message, each
response as an assistant message, each gym feedback in the role the gym chooses) and, beside it,
one token sequence: each turn's prompt ids are the previous turn's prompt and response ids,
exactly as sampled, followed by the template's ids for the feedback and the generation prompt
(trainer/policies/learner.py `Learner.prompt_ids`). The trainer learns from that one sequence
per trajectory (`Trajectory.sequence`), and checks that every turn extends the one before
(`Trajectory.check_token_prefix`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gyms import Outcome, Task


USER, ASSISTANT, TOOL = "user", "assistant", "tool"


@dataclass(frozen=True)
class Message:
    role: str  # user, assistant, or the role of a gym's feedback (`Gym.feedback_role`)
    content: str


@dataclass(frozen=True)
class Request:
    """One generation: the task (replay policies act on it), the conversation so far, and where
    it stands in the run: the group (the task sampler's group id), the sample within the group
    and the turn, so a replay policy's answer can be a function of the request alone. From the
    second turn on, `previous` is the episode's previous generation, whose token ids this turn's
    prompt extends, and the last message is the gym's feedback on it."""

    task: Task
    messages: tuple[Message, ...]
    turn: int  # 1-based
    group: int | None = None  # None outside a run (calibration, tests): a replay policy then
    sample: int | None = None  # uses the request's position in the generate call instead
    previous: Generation | None = None

    @classmethod
    def first(cls, task: Task, group: int | None = None, sample: int | None = None) -> Request:
        """An episode's first turn: the task's prompt as the one user message."""
        return cls(task, (Message(USER, task.prompt),), 1, group, sample)

    def then(self, generation: Generation, feedback: Message) -> Request:
        """The same episode's next turn: this request's answer, then the gym's feedback."""
        answer = Message(ASSISTANT, generation.text)
        return Request(self.task, (*self.messages, answer, feedback), self.turn + 1, self.group, self.sample,
                       generation)  # fmt: skip


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: list[int]
    response_tokens: list[int]  # exactly as sampled, the end-of-sequence token included when sampled
    logprobs: list[float]  # behaviour logprobs, one per response token
    version: int  # the policy version whose weights the engine generated this with (set by the policy)
    # The prompt and the response budget would outgrow the model's context: nothing was generated,
    # `prompt_tokens` is empty, and the episode ends here as the model's fail (docs/architecture.md).
    context_full: bool = False

    @classmethod
    def context_full_at(cls, version: int) -> Generation:
        return cls("", [], [], [], version, context_full=True)


@dataclass
class Turn:
    generation: Generation
    observation: str = ""
    reward: float = 0.0
    outcome: Outcome = Outcome.FAIL
    role: str = USER  # the observation's role, as the next turn's message


@dataclass
class Trajectory:
    task_id: str
    group_id: int
    version: int  # the version pinned for the episode: every turn's engine must have used it
    turns: list[Turn] = field(default_factory=list)
    sample: int = 0  # its place in the group
    gym_s: float = 0.0  # gym latency: the service times of its gym steps, summed
    prompt: str = ""  # the task's prompt: the conversation's first message
    # The task's predicted gym time when its group started, before any of the group ran
    # (trainer/rules/cost.py); None where nothing was known yet.
    predicted_gym_s: float | None = None

    @property
    def reward(self) -> float:
        return self.turns[-1].reward if self.turns else 0.0

    @property
    def outcome(self) -> Outcome:
        return self.turns[-1].outcome if self.turns else Outcome.ERROR

    @property
    def context_full(self) -> bool:
        """The episode ended because its next turn would not fit the model's context."""
        return bool(self.turns) and self.turns[-1].generation.context_full

    def messages(self) -> list[Message]:
        """The conversation: the prompt, then each turn's answer and the gym's feedback on it."""
        messages = [Message(USER, self.prompt)]
        for turn in self.turns:
            if not turn.generation.context_full:
                messages += [Message(ASSISTANT, turn.generation.text), Message(turn.role, turn.observation)]
        return messages

    def sequence(self) -> tuple[list[int], list[tuple[int, list[float]]]]:
        """The trajectory's one token sequence (its last generated turn's prompt and response ids),
        and the trained spans in it: each turn's response, as (where it starts, its behaviour
        logprobs). Every other token (prompt, feedback, template) is context, not trained."""
        generated = [t.generation for t in self.turns if not t.generation.context_full]
        if not generated:
            return [], []
        last = generated[-1]
        spans = [(len(g.prompt_tokens), g.logprobs) for g in generated]
        return last.prompt_tokens + last.response_tokens, spans

    def prefix_matches(self) -> list[bool]:
        """For each turn after the first, whether its prompt ids start with the whole sequence
        of the turn before (prompt and response ids, as sampled)."""
        generated = [t.generation for t in self.turns if not t.generation.context_full]
        return [
            now.prompt_tokens[: len(before.prompt_tokens) + len(before.response_tokens)]
            == before.prompt_tokens + before.response_tokens
            for before, now in zip(generated, generated[1:])
        ]

    def check_token_prefix(self) -> None:
        """Every turn's prompt ids extend the previous turn's sequence: no turn was re-tokenized."""
        if not all(self.prefix_matches()):
            turn = self.prefix_matches().index(False) + 2
            raise AssertionError(
                f"trajectory of {self.task_id} (group {self.group_id}): turn {turn}'s prompt ids do not start with "
                f"turn {turn - 1}'s prompt and response ids: the conversation was re-tokenized"
            )

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
    predicted_gym_s: float | None = None  # the trajectory's, as its group started (trainer/rules/cost.py)

    @classmethod
    def of(cls, traj: Trajectory, fate: str, step: int | None = None) -> Fate:
        return cls(traj.group_id, traj.sample, traj.task_id, traj.version, len(traj.turns), traj.gym_s, traj.reward,
                   traj.outcome.value, fate, step, traj.predicted_gym_s)  # fmt: skip
