"""OpenEnv's client, typed for a gym that `harness serve` serves.

    from gyms.openenv.client import GymClient
    from gyms.openenv.protocol import AnswerAction

    with GymClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(task_id="add-3-4")       # or seed=K, or nothing: the next task
        while not result.done:
            answer = model(result.observation.prompt)
            result = env.step(AnswerAction(answer=answer))
        result.reward, result.observation.metadata["outcome"]
"""

from __future__ import annotations

from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from gyms.openenv.protocol import AnswerAction, GymObservation, GymState


class GymClient(EnvClient[AnswerAction, GymObservation, GymState]):
    """One WebSocket session with a served heavygym gym."""

    def _step_payload(self, action: AnswerAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude_defaults=True) | {"answer": action.answer}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GymObservation]:
        fields = payload.get("observation", {})
        observation = GymObservation(
            prompt=fields.get("prompt", ""),
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata") or fields.get("metadata") or {},
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=observation.done,
                          metadata=observation.metadata)  # fmt: skip

    def _parse_state(self, payload: dict[str, Any]) -> GymState:
        return GymState(**payload)
