"""An OpenEnv environment that is not heavygym's, on OpenEnv's own server: its action's text
field is `message`, its observation's text is `text`, and it pays what the message asks for
(`reward:X`), so a test can make it answer outside heavygym's schema. Served with
`python -m uvicorn openenv_foreign:app --port 0`."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class EchoAction(Action):
    message: str


class EchoObservation(Observation):
    text: str = ""


class EchoEnvironment(Environment[EchoAction, EchoObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id)
        return EchoObservation(text=f"say something ({seed})")

    def step(self, action: EchoAction, timeout_s: float | None = None, **_: Any) -> EchoObservation:
        self._state.step_count += 1
        asked = action.message.removeprefix("reward:")
        reward: Any = asked if asked != action.message else 0.0
        try:
            reward = float(reward)
        except ValueError:
            pass
        return EchoObservation(text=f"you said {action.message}", reward=reward, done=True)

    @property
    def state(self) -> State:
        return self._state


app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=8)
