"""OpenEnv environments that are not heavygym's, on OpenEnv's own server.

`app`: its action's text field is `message`, its observation's text is `text`, and it pays what
the message asks for (`reward:X`), so a test can make it answer outside heavygym's schema. Its
conversation is in `history` (a system message, then the prompt; each answer, then its feedback
as a `tool` message), which no observation of heavygym's names: `-o messages_field=history`.
A message starting `again` is a fail with a turn left; `garble` makes `history` not a list.

`mirror_app`: its observation's `messages` and `feedback_role` are what the reset asked for
(`reset(messages=..., feedback_role=...)`), so a test can send heavygym's client any conversation.

Served with `python -m uvicorn openenv_foreign:app --port 0`.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class EchoAction(Action):
    message: str


class EchoObservation(Observation):
    text: str = ""
    history: Any = None


class EchoEnvironment(Environment[EchoAction, EchoObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._history: list[dict[str, str]] = []

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id)
        text = f"say something ({seed})"
        self._history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]
        return EchoObservation(text=text, history=list(self._history))

    def step(self, action: EchoAction, timeout_s: float | None = None, **_: Any) -> EchoObservation:
        self._state.step_count += 1
        asked = action.message.removeprefix("reward:")
        reward: Any = asked if asked != action.message else 0.0
        try:
            reward = float(reward)
        except ValueError:
            pass
        text = f"you said {action.message}"
        self._history += [{"role": "assistant", "content": action.message}, {"role": "tool", "content": text}]
        history: Any = "garbled" if action.message == "garble" else list(self._history)
        return EchoObservation(text=text, history=history, reward=reward, done=not action.message.startswith("again"))

    @property
    def state(self) -> State:
        return self._state


app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=8)


class MirrorObservation(Observation):
    prompt: str = ""
    messages: Any = None
    feedback_role: Any = None


class MirrorEnvironment(Environment[EchoAction, MirrorObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def reset(self, seed: int | None = None, episode_id: str | None = None, **asked: Any) -> MirrorObservation:
        return MirrorObservation(prompt="mirror", messages=asked.get("messages"), feedback_role=asked.get("feedback_role"))

    def step(self, action: EchoAction, timeout_s: float | None = None, **_: Any) -> MirrorObservation:
        return MirrorObservation(prompt="mirror", done=True)

    @property
    def state(self) -> State:
        return State()


mirror_app = create_app(MirrorEnvironment, EchoAction, MirrorObservation, env_name="mirror", max_concurrent_envs=8)
