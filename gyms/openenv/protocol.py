"""The OpenEnv schema of a served heavygym gym: what `harness serve` accepts and answers.

An action is the model's answer as text. The observation's `prompt` is what the model reads
next: the task's prompt after `reset`, the gym's feedback after a `step`. Reward and done ride
on the observation, as OpenEnv has them; the heavygym outcome (`pass` / `fail` / `error`) and
the turn bookkeeping ride in its metadata.
"""

from __future__ import annotations

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

# The largest answer the server reads. Answers above the gym's own cap (64 KiB by default)
# still reach the gym, which fails them as it does in process; this bound protects the server.
MAX_ANSWER_CHARS = 1024 * 1024


class AnswerAction(Action):
    """One turn of the model: its answer, as text."""

    answer: str = Field(max_length=MAX_ANSWER_CHARS, description="The model's answer to the prompt")
    task_id: str | None = Field(
        default=None,
        max_length=255,
        description="Over stateless HTTP only: the task this one-turn episode answers (WebSocket sessions "
        "answer the task of their last reset)",
    )


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
