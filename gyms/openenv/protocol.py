"""The OpenEnv schema of a served heavygym gym: what `harness serve` accepts and answers.

An action is the model's answer as text. The observation's `prompt` is what the model reads
next: the task's prompt after `reset`, the gym's feedback after a `step`. Its `messages` are the
episode's conversation so far, with roles (the task's prompt as the first user message, each
answer as an assistant message, each feedback in the gym's `feedback_role`), so that a client
trainer can extend its own token ids one message at a time (docs/openenv.md). Reward and done
ride on the observation, as OpenEnv has them; the heavygym outcome (`pass` / `fail` / `error`)
and the turn bookkeeping ride in its metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field

from gyms.base import FEEDBACK_ROLES

# The largest answer the server reads. Answers above the gym's own cap (64 KiB by default)
# still reach the gym, which fails them as it does in process; this bound protects the server.
MAX_ANSWER_CHARS = 1024 * 1024
MAX_ID_CHARS = 255  # a task id, an episode id, a request id: OpenEnv's own bound on ids
MAX_SEED = 2**63 - 1
# An answer is cut at this many characters where it is placed into the observation's `messages`.
# The observation carries the whole conversation on every turn, so an answer of up to
# MAX_ANSWER_CHARS would come back once per later turn; and an answer this long is over the gym's
# own cap (64 KiB of UTF-8 by default), which fails it unread. The client keeps its answer's own
# token ids, never these characters (docs/openenv.md).
MAX_MESSAGE_ANSWER_CHARS = 65_536

ROLES = ("user", "assistant", "tool")  # the roles of a conversation's messages (trainer/types.py)
Role = Literal["user", "assistant", "tool"]
FeedbackRole = Literal["user", "tool"]


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


class ChatMessage(BaseModel):
    """One message of the episode's conversation."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    role: Role
    content: str


class GymObservation(Observation):
    """The prompt of the model's next turn and the conversation so far; `metadata` holds `outcome`,
    `turn`, `max_turns`, `terminated`, `truncated`, `task_id` and the gym's `info` (`docs/openenv.md`)."""

    prompt: str = Field(default="", description="The task's prompt after reset, the gym's feedback after a step")
    messages: list[ChatMessage] = Field(
        default_factory=list,
        description="The conversation so far: the task's prompt (user), each answer (assistant, cut at "
        f"{MAX_MESSAGE_ANSWER_CHARS:,} characters) and each feedback (in feedback_role)",
    )
    feedback_role: FeedbackRole = Field(default="user", description="The role of the gym's feedback messages")


class GymState(State):
    """The session's episode: its task, and how many of its turns are used."""

    gym: str = ""
    task_id: str | None = None
    turn: int = 0
    max_turns: int = 0
    done: bool = False


class MalformedObservation(ValueError):
    """An observation outside the schema above: one line naming the field and the fix."""


def read_conversation(
    raw: Any, field: str = "messages", roles: Sequence[str] = ROLES, exact: bool = True
) -> list[dict[str, str]]:
    """`raw` checked as a conversation: a list of `{"role": ROLE, "content": TEXT}` objects with a
    role of `roles` (with `exact=False`, a message may have other keys too, which are dropped).
    Else `MalformedObservation`, one line naming where it breaks, never echoing more of a value
    than a short start."""
    if not isinstance(raw, list):
        raise MalformedObservation(f"field {field} is {_kind(raw)}, not a list of {{\"role\", \"content\"}} objects")
    conversation = []
    for number, message in enumerate(raw):
        where = f"{field}[{number}]"
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise MalformedObservation(f"field {where} is {_kind(message)}, not an object with a role and a content")
        if exact and set(message) != {"role", "content"}:
            others = ", ".join(sorted(str(key)[:40] for key in message if key not in ("role", "content")))
            raise MalformedObservation(f"field {where} has keys other than role and content: {others}")
        role, content = message["role"], message["content"]
        if not isinstance(role, str) or role not in roles:
            raise MalformedObservation(f"field {where}.role is {_kind(role)}, not one of {', '.join(roles)}")
        if not isinstance(content, str):
            raise MalformedObservation(f"field {where}.content is {_kind(content)}, not a string")
        conversation.append({"role": role, "content": content})
    return conversation


def read_feedback_role(raw: Any, field: str = "feedback_role") -> str:
    """`raw` checked as a feedback role (user or tool), else `MalformedObservation`."""
    if not isinstance(raw, str) or raw not in FEEDBACK_ROLES:
        raise MalformedObservation(f"field {field} is {_kind(raw)}, not one of {', '.join(FEEDBACK_ROLES)}")
    return raw


def _kind(value: Any) -> str:
    """What a JSON value is, for an error line: a short string shows its start, anything else its type."""
    if isinstance(value, str):
        return repr(value[:40] + ("..." if len(value) > 40 else ""))
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)  # fmt: skip
