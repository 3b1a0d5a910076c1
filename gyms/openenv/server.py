"""A heavygym gym as an OpenEnv environment, on OpenEnv's own server (`harness serve`).

Each WebSocket session (`/ws`) is one `GymEnvironment`: `reset` opens an episode of a task,
each `step` runs one turn of it in the gym pool (worker processes, every check in the
sandbox, as in training), and closing the session, or the client going away, closes the
episode and removes its work directory. OpenEnv's HTTP `/reset` and `/step` make a new
environment per request: there a step names its task (`task_id`) and is a one-turn episode.

Sessions are bounded (`max_sessions`): one over the bound is refused at once with OpenEnv's
`CAPACITY_REACHED` error. Steps of all sessions share the pool's workers in arrival order.
"""

from __future__ import annotations

import functools
import json
import random
import threading
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata
from starlette.responses import JSONResponse

from gyms.base import Episode, Gym, Task
from gyms.openenv.protocol import MAX_ANSWER_CHARS, AnswerAction, GymObservation, GymState
from gyms.pool import SlotPool

# A request body or WebSocket message above this is refused before it is parsed: room for the
# largest answer with JSON's escapes (up to 6 bytes a character), and no more.
MAX_PAYLOAD_BYTES = 6 * MAX_ANSWER_CHARS + 64 * 1024
_RESET_ARGUMENTS = "task_id, seed and episode_id"


class RequestError(ValueError):
    """A request the server cannot serve as asked (an unknown task, a step without an episode):
    over WebSocket OpenEnv's EXECUTION_ERROR with this message, over HTTP a 400."""


class ServedGym:
    """What every session of one server shares: the gym, its pool, and a seeded task order."""

    def __init__(self, gym: Gym, pool: SlotPool[Any], split: str = "train", seed: int = 0) -> None:
        self.gym = gym
        self.pool = pool
        tasks = list(gym.tasks(split))
        if not tasks:
            raise ValueError(f"gym {gym.name} has no tasks in split {split!r}: nothing to serve")
        self.tasks = {t.id: t for t in tasks}
        self.order = sorted(tasks, key=lambda t: t.id)
        random.Random(seed).shuffle(self.order)
        self._next = 0
        self._lock = threading.Lock()

    def task(self, task_id: str | None = None, seed: int | None = None) -> Task:
        """The task named `task_id`; else the one at position `seed` of the order (the same task
        for the same seed); else the next one of the order, shared by every session."""
        if task_id is not None:
            if task_id not in self.tasks:
                raise RequestError(f"unknown task_id {task_id!r}: gym {self.gym.name} has {len(self.tasks)} tasks "
                                 f"(harness gyms list {self.gym.name} names them)")  # fmt: skip
            return self.tasks[task_id]
        if seed is not None:
            return self.order[seed % len(self.order)]
        with self._lock:
            position, self._next = self._next, self._next + 1
        return self.order[position % len(self.order)]


class GymEnvironment(Environment[AnswerAction, GymObservation, GymState]):
    """One session: at most one open episode at a time."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each episode has a work directory of its own

    def __init__(self, served: ServedGym) -> None:
        super().__init__()
        self.served = served
        self._episode: Episode | None = None
        self._episode_id: str | None = None
        self._steps = 0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None, **unknown: Any
    ) -> GymObservation:
        if unknown:
            raise RequestError(f"unknown reset argument(s) {', '.join(sorted(unknown))}: reset takes {_RESET_ARGUMENTS}")
        task = self.served.task(task_id, seed)
        self._open(task, episode_id)
        return GymObservation(prompt=task.prompt, metadata=self._bookkeeping())

    def step(self, action: AnswerAction, timeout_s: float | None = None, **_: Any) -> GymObservation:
        episode = self._episode
        if episode is None:
            if action.task_id is None:
                raise RequestError("no episode is open: reset first (a WebSocket session), or name the task with "
                                 "task_id for a one-turn episode (stateless HTTP /step)")  # fmt: skip
            episode = self._open(self.served.task(action.task_id), None)
        elif action.task_id not in (None, episode.task.id):
            raise RequestError(f"this session's episode is of task {episode.task.id!r}, not {action.task_id!r}: "
                             "reset with that task_id first")  # fmt: skip
        if episode.done:
            raise RequestError(f"the episode of task {episode.task.id!r} is over after {episode.turn} turn(s): "
                             "reset for a new one")  # fmt: skip
        call = self.served.pool.submit(episode, action.answer).result()
        self._episode = call.episode
        self._steps += 1
        result = call.result
        if result.done:
            call.episode.close()
        metadata = {
            **self._bookkeeping(),
            "outcome": result.outcome.value,
            "terminated": result.terminated,
            "truncated": result.truncated,
            "service_s": call.service_s,
            "queue_wait_s": call.queue_wait_s,
            "info": _json_safe(result.info),
        }
        return GymObservation(prompt=result.observation, reward=result.reward, done=result.done, metadata=metadata)

    @property
    def state(self) -> GymState:
        episode = self._episode
        return GymState(
            episode_id=self._episode_id,
            step_count=self._steps,
            gym=self.served.gym.name,
            task_id=episode.task.id if episode else None,
            turn=episode.turn if episode else 0,
            max_turns=episode.max_turns if episode else 0,
            done=episode.done if episode else False,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        gym = self.served.gym
        return EnvironmentMetadata(
            name=f"heavygym-{gym.name}",
            description=f"heavygym's {gym.name} gym: {len(self.served.tasks)} tasks, answers checked in a sandbox",
            version=gym.version,
        )

    def close(self) -> None:
        """Close the open episode, removing its work directory (the session ended or reset)."""
        if self._episode is not None:
            self._episode.close()
            self._episode = None

    def _open(self, task: Task, episode_id: str | None) -> Episode:
        self.close()
        self._episode = self.served.gym.open(task)
        self._episode_id = episode_id
        self._steps = 0
        return self._episode

    def _bookkeeping(self) -> dict[str, Any]:
        episode = self._episode
        assert episode is not None
        return {"task_id": episode.task.id, "turn": episode.turn, "max_turns": episode.max_turns}


def _json_safe(info: Mapping[str, Any]) -> dict[str, Any]:
    """A gym's step info as plain JSON (paths and other objects as their text)."""
    return json.loads(json.dumps(dict(info), default=str))


def build_app(served: ServedGym, max_sessions: int, idle_timeout_s: float | None) -> FastAPI:
    """OpenEnv's FastAPI app for `served`, with request bodies capped at `MAX_PAYLOAD_BYTES`."""
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s)
    app = create_app(
        functools.partial(GymEnvironment, served),
        AnswerAction,
        GymObservation,
        env_name=f"heavygym-{served.gym.name}",
        concurrency_config=concurrency,
        state_cls=GymState,
    )

    @app.exception_handler(RequestError)
    async def bad_request(request, exc: RequestError):  # type: ignore[no-untyped-def]
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.middleware("http")
    async def cap_body(request, call_next):  # type: ignore[no-untyped-def]
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_PAYLOAD_BYTES):
            return JSONResponse(
                {"detail": f"request body of {declared} bytes; the limit is {MAX_PAYLOAD_BYTES:,}"}, status_code=413
            )
        if declared is None and request.method in ("POST", "PUT", "PATCH"):
            return JSONResponse({"detail": "a request body needs a Content-Length header"}, status_code=411)
        return await call_next(request)

    return app
