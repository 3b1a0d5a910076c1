"""The OpenEnv schema of a served heavygym gym: what `harness serve` accepts and answers.

An action is the model's answer as text. The observation's `prompt` is what the model reads
next: the task's prompt after `reset`, the gym's feedback after a `step`. Reward and done ride
on the observation, as OpenEnv has them; the heavygym outcome (`pass` / `fail` / `error`) and
the turn bookkeeping ride in its metadata.
"""

from __future__ import annotations

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field

# The largest answer the server reads. Answers above the gym's own cap (64 KiB by default)
# still reach the gym, which fails them as it does in process; this bound protects the server.
MAX_ANSWER_CHARS = 1024 * 1024
MAX_ID_CHARS = 255  # a task id, an episode id, a request id: OpenEnv's own bound on ids
MAX_SEED = 2**63 - 1


class AnswerAction(Action):
    """One turn of the model: its answer, as text."""

    answer: str = Field(max_length=MAX_ANSWER_CHARS, description="The model's answer to the prompt")
    task_id: str | None = Field(
        default=None,
        max_length=MAX_ID_CHARS,
        description="Over stateless HTTP only: the task this one-turn episode answers (WebSocket sessions "
        "answer the task of their last reset)",
    )


class ResetArguments(BaseModel):
    """What `reset` takes, over WebSocket and HTTP alike. Strict, since a JSON `true` or `"5"` is
    not a seed: OpenEnv's own `ResetRequest` would read them as 1 and 5."""

    model_config = ConfigDict(extra="forbid", strict=True)

    task_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS, description="The task to open")
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED, description="The task at this position of the seeded order")
    episode_id: str | None = Field(default=None, max_length=MAX_ID_CHARS, description="The client's name for the episode")


class StepRequestBody(BaseModel):
    """The body of HTTP `/step`: OpenEnv's `StepRequest` with the action typed and nothing else."""

    model_config = ConfigDict(extra="forbid", strict=True)

    action: AnswerAction
    timeout_s: float | None = Field(default=None, gt=0, description="Read and ignored: the gym's own limits apply")
    request_id: str | None = Field(default=None, max_length=MAX_ID_CHARS)


class GymObservation(Observation):
    """The prompt of the model's next turn; `metadata` holds `outcome`, `turn`, `max_turns`,
    `terminated`, `truncated`, `task_id` and the gym's `info` (`docs/openenv.md`)."""

    prompt: str = Field(default="", description="The task's prompt after reset, the gym's feedback after a step")


class GymState(State):
    """The session's episode: its task, and how many of its turns are used."""

    gym: str = ""
    task_id: str | None = None
    turn: int = 0
    max_turns: int = 0
    done: bool = False
