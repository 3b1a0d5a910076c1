"""OpenEnv's client, typed for a gym that `harness serve` serves.

    from gyms.openenv.client import GymClient
    from gyms.openenv.protocol import AnswerAction

    with GymClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(task_id="add-3-4")       # or seed=K, or nothing: the next task
        while not result.done:
            answer = model(result.observation.prompt)
            result = env.step(AnswerAction(answer=answer))
        result.reward, result.observation.metadata["outcome"]

Each observation also carries the conversation so far, `observation.messages` (role and content
each), and `observation.feedback_role`: a client trainer renders the newest message with its
chat template and appends it to the token ids it already has (docs/openenv.md). An observation
outside the schema raises `MalformedObservation`, one line naming the field and the fix.
"""

from __future__ import annotations

from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from gyms.openenv.protocol import (
    AnswerAction,
    ChatMessage,
    GymObservation,
    GymState,
    MalformedObservation,
    read_conversation,
    read_feedback_role,
)

# What a bad observation's error ends with: what the client expects, and where a server sends it.
_FIX = ("this client reads the observations of heavygym's `harness serve` of the same version: messages as a list "
        "of {\"role\": user|assistant|tool, \"content\": TEXT} and feedback_role user|tool (docs/openenv.md)")  # fmt: skip


class GymClient(EnvClient[AnswerAction, GymObservation, GymState]):
    """One WebSocket session with a served heavygym gym."""

    def _step_payload(self, action: AnswerAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude_defaults=True) | {"answer": action.answer}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GymObservation]:
        fields = payload.get("observation", {})
        messages, feedback_role = _conversation(fields)
        observation = GymObservation(
            prompt=fields.get("prompt", ""),
            messages=messages,
            feedback_role=feedback_role,
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata") or fields.get("metadata") or {},
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=observation.done,
                          metadata=observation.metadata)  # fmt: skip

    def _parse_state(self, payload: dict[str, Any]) -> GymState:
        return GymState(**payload)


def _conversation(fields: Any) -> tuple[list[ChatMessage], str]:
    """The observation's messages and feedback role, checked; else one line that says what is wrong."""
    try:
        if not isinstance(fields, dict):
            raise MalformedObservation(f"field observation is {type(fields).__name__}, not an object")
        for name in ("messages", "feedback_role"):
            if name not in fields:
                raise MalformedObservation(f"field {name} is missing")
        messages = [ChatMessage(**m) for m in read_conversation(fields["messages"])]
        feedback_role = read_feedback_role(fields["feedback_role"])
        if not messages:
            raise MalformedObservation("field messages is empty, without the task's prompt")
        for number, message in enumerate(messages):  # the prompt, then an answer and its feedback per turn
            expected = "user" if number == 0 else "assistant" if number % 2 else feedback_role
            if message.role != expected:
                raise MalformedObservation(f"field messages[{number}].role is {message.role!r}, not {expected!r} "
                                           f"(the prompt, then each answer and its feedback in feedback_role)")  # fmt: skip
    except MalformedObservation as error:
        raise MalformedObservation(f"malformed observation from the server: {error}; {_FIX}") from None
    return messages, feedback_role
