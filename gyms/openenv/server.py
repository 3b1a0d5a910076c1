"""A heavygym gym as an OpenEnv environment, on OpenEnv's own server (`harness serve`).

Each session is one `GymEnvironment`: `reset` opens an episode of a task, each `step` runs one
turn of it in the gym pool (worker processes, every check in the sandbox, as in training).
Every observation carries the episode's conversation so far (`messages`, with roles) and the
gym's `feedback_role`, so a client trainer can keep its token ids consistent (docs/openenv.md).
A session lives only while a WebSocket connection holds it: the one that made it (`/ws`, the
`/mcp` WebSocket), or the one that attached it (`/ws?session_id=...`) to a session made over
HTTP (`POST /mcp`, `openenv/session/create`), which waits `ATTACH_GRACE_S` for its connection.
When that connection ends, however it ends, the session closes its episode and removes its
work directory. OpenEnv's HTTP `/reset` and `/step` make a new environment per request: there
a step names its task (`task_id`) and is a one-turn episode.

Sessions are bounded (`max_sessions`): one over the bound is refused at once with OpenEnv's
`CAPACITY_REACHED` error. No client holds a place by doing nothing: a WebSocket's session is made
at its first message, and a WebSocket without a reset `RESET_GRACE_S` after it connected is
closed; a client's sessions made over HTTP and not attached are bounded per peer address
(`http_sessions_per_client`). Steps of all sessions share the pool's workers in arrival order.
Request bodies are checked strictly before OpenEnv reads them, so that bad input is a one-line
4xx, never a 500 (docs/openenv.md has the table).
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import threading
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal, TypeVar

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse
from openenv.core.env_server.types import (
    ConcurrencyConfig,
    EnvironmentMetadata,
    ServerMode,
    WSErrorCode,
    WSErrorResponse,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import Headers, QueryParams
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gyms.base import FEEDBACK_ROLES, Episode, Gym, Task
from gyms.openenv.protocol import (
    MAX_ANSWER_CHARS,
    MAX_ID_CHARS,
    MAX_MESSAGE_ANSWER_CHARS,
    AnswerAction,
    ChatMessage,
    GymObservation,
    GymState,
    ResetArguments,
    StepRequestBody,
)
from gyms.pool import SlotPool

# A request body or WebSocket message above this is refused before it is parsed: room for the
# largest answer with JSON's escapes (up to 6 bytes a character), and no more.
MAX_PAYLOAD_BYTES = 6 * MAX_ANSWER_CHARS + 64 * 1024
# A session made over HTTP (POST /mcp, openenv/session/create) has no connection to hold it:
# it is closed this long after it was made unless a WebSocket attached it by then. Enough for
# a client to attach at once (OpenEnv's own client does), too short to crowd out others.
ATTACH_GRACE_S = 5.0
# A WebSocket that has not sent its reset (on /mcp, which has none: any message) this long after
# it connected is closed, and its session with it: a client that connects resets at once, and a
# connection that sends nothing holds no place meanwhile (its session is made at its first
# message), so idle connections never keep a working client out.
RESET_GRACE_S = 10.0
# Sessions made over HTTP that no WebSocket attached yet, per client (peer address): at most this
# share of --max-sessions (and at least 1), so that one client re-creating them cannot hold the
# places of the others.
HTTP_SESSIONS_SHARE = 4
_RESET_ARGUMENTS = "task_id (a task's id), seed (an integer, 0 or more) and episode_id (a string)"
_SHOWN_PROBLEMS = 5  # a request with more bad fields than this names these and counts the rest

_Model = TypeVar("_Model", bound=BaseModel)


class RequestError(ValueError):
    """A request the server cannot serve as asked (an unknown task, a step without an episode, a
    malformed argument): over WebSocket OpenEnv's EXECUTION_ERROR with this message, over HTTP a
    400 (a malformed body, caught before OpenEnv reads it, is a 422)."""


def _validate(model: type[_Model], data: Mapping[str, Any] | bytes, what: str, fix: str) -> _Model:
    """`data` (JSON text, or already parsed) as `model`; else a one-line RequestError that names
    each bad field and why, never echoing a value, and ends with `fix`."""
    try:
        return model.model_validate_json(data) if isinstance(data, bytes) else model.model_validate(data)
    except ValidationError as error:
        raise RequestError(f"{_explain(error.errors(), what)}; {fix}") from None


def _explain(errors: Sequence[Any], what: str) -> str:
    """Validation errors as one line: `unknown field x; field y: Input should be a valid string`."""
    problems = [_problem(error, what) for error in errors[:_SHOWN_PROBLEMS]]
    more = f" (and {len(errors) - _SHOWN_PROBLEMS} more)" if len(errors) > _SHOWN_PROBLEMS else ""
    return "; ".join(problems) + more


def _problem(error: Mapping[str, Any], what: str) -> str:
    where = ".".join(str(part)[:40] for part in error["loc"])  # a key can be as long as the body
    if error["type"] == "extra_forbidden":
        return f"unknown {what} {where}"
    return f"{what} {where}: {error['msg']}" if where else str(error["msg"])


def _read_reset(arguments: Mapping[str, Any] | bytes) -> ResetArguments:
    return _validate(ResetArguments, arguments, "reset argument", f"reset takes {_RESET_ARGUMENTS}")


class ServedGym:
    """What every session of one server shares: the gym, its pool, and a seeded task order."""

    def __init__(self, gym: Gym, pool: SlotPool[Any], split: str = "train", seed: int = 0) -> None:
        self.gym = gym
        self.pool = pool
        self.split = split
        tasks = list(gym.tasks(split))
        if not tasks:
            raise ValueError(f"gym {gym.name} has no tasks in split {split!r}: nothing to serve")
        if gym.feedback_role not in FEEDBACK_ROLES:
            raise ValueError(f"gym {gym.name} says its feedback_role is {str(gym.feedback_role)[:40]!r}: a served "
                             f"conversation's feedback is one of {', '.join(FEEDBACK_ROLES)} (gyms/base.py)")  # fmt: skip
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
                # the command that prints the ids, not `gyms list`'s table, which only counts them
                split = "" if self.split == "train" else f" --split {self.split}"
                raise RequestError(f"unknown task_id {task_id!r}: gym {self.gym.name} has {len(self.tasks)} "
                                   f"{self.split} tasks; `harness gyms list {self.gym.name} --tasks{split}` prints "
                                   "their ids (with the -o options the server was started with)")  # fmt: skip
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
        self._messages: list[ChatMessage] = []  # the open episode's conversation so far
        self._steps = 0
        self._closed = False

    def reset(self, seed: Any = None, episode_id: Any = None, **others: Any) -> GymObservation:
        self._refuse_if_closed()
        arguments = _read_reset({"seed": seed, "episode_id": episode_id, **others})
        task = self.served.task(arguments.task_id, arguments.seed)
        self._open(task, arguments.episode_id)
        return self._observation(task.prompt, metadata=self._bookkeeping())

    def step(self, action: AnswerAction, timeout_s: float | None = None, **_: Any) -> GymObservation:
        self._refuse_if_closed()
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
        self._messages += [ChatMessage(role="assistant", content=action.answer[:MAX_MESSAGE_ANSWER_CHARS]),
                           ChatMessage(role=self.served.gym.feedback_role, content=result.observation)]  # fmt: skip
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
        return self._observation(result.observation, reward=result.reward, done=result.done, metadata=metadata)

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
        """The session ended: close its episode, removing its work directory, for good. OpenEnv
        can end a session under a connection that still sends (the idle timeout, or another
        client's openenv/session/close); what it sends then is refused, so no episode outlives
        its session."""
        self._closed = True
        self._close_episode()

    def _close_episode(self) -> None:
        if self._episode is not None:
            self._episode.close()
            self._episode = None

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise RequestError("this session is closed (idle past --idle-timeout, or closed by openenv/session/close): "
                               "connect again for a new one")  # fmt: skip

    def _open(self, task: Task, episode_id: str | None) -> Episode:
        self._close_episode()
        self._episode = self.served.gym.open(task)
        self._episode_id = episode_id
        self._steps = 0
        self._messages = [ChatMessage(role="user", content=task.prompt)]
        return self._episode

    def _observation(self, prompt: str, **fields: Any) -> GymObservation:
        """What the model reads next, with the conversation so far (a copy: the session's grows on)."""
        return GymObservation(prompt=prompt, messages=list(self._messages), feedback_role=self.served.gym.feedback_role,
                              **fields)  # fmt: skip

    def _bookkeeping(self) -> dict[str, Any]:
        episode = self._episode
        assert episode is not None
        return {"task_id": episode.task.id, "turn": episode.turn, "max_turns": episode.max_turns}


def _json_safe(info: Mapping[str, Any]) -> dict[str, Any]:
    """A gym's step info as plain JSON (paths and other objects as their text)."""
    return json.loads(json.dumps(dict(info), default=str))


# True while serving a WebSocket connection: a session made there is held by it.
_IN_WEBSOCKET: ContextVar[bool] = ContextVar("in_websocket", default=False)
# The peer address of the HTTP request being served (a session made there counts against it).
_PEER: ContextVar[str] = ContextVar("peer", default="")


def http_sessions_per_client(max_sessions: int) -> int:
    """How many sessions made over HTTP and not yet attached one client may hold at once."""
    return max(1, max_sessions // HTTP_SESSIONS_SHARE)


class ConnectionBoundServer(HTTPEnvServer):
    """OpenEnv's server (openenv 0.10.0, pinned: this reads its session tables) with every session
    bound to a connection. OpenEnv closes a session its WebSocket made when that connection ends,
    but keeps one made over HTTP until the idle timeout, and one a WebSocket attached after that
    connection ends; here the first waits `ATTACH_GRACE_S` for a connection, the second ends
    with its connection."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._expiries: set[asyncio.Task[None]] = set()  # held: the event loop keeps only weak references
        self._unattached: dict[str, int] = {}  # peer address -> its HTTP-made sessions not attached yet
        self._made_by: dict[str, str] = {}  # such a session -> the peer that made it

    async def _create_session(self) -> tuple[str, Environment]:
        if _IN_WEBSOCKET.get():
            return await super()._create_session()
        peer, budget = _PEER.get(), http_sessions_per_client(self._max_concurrent_envs)
        held = self._unattached.get(peer, 0)
        if held >= budget:
            raise SessionCapacityError(len(self._sessions), self._max_concurrent_envs, message=(
                f"client {peer[:64]} already holds {held} session(s) made over HTTP that no WebSocket attached, "
                f"its budget (a {HTTP_SESSIONS_SHARE}th of the server's {self._max_concurrent_envs}, at least 1): "
                "attach one (/ws?session_id=ID) or close it (openenv/session/close) first"))  # fmt: skip
        self._unattached[peer] = held + 1  # counted before the await: a concurrent create sees it
        try:
            session_id, env = await super()._create_session()
        except BaseException:
            self._release_peer(peer)
            raise
        self._made_by[session_id] = peer
        expiry = asyncio.create_task(self._expire_unless_attached(session_id))
        self._expiries.add(expiry)
        expiry.add_done_callback(self._expiries.discard)
        return session_id, env

    def _release_peer(self, peer: str) -> None:
        left = self._unattached.get(peer, 0) - 1
        if left > 0:
            self._unattached[peer] = left
        else:
            self._unattached.pop(peer, None)

    def _attached_or_gone(self, session_id: str) -> None:
        """An HTTP-made session no longer counts against its client: attached, or closed."""
        peer = self._made_by.pop(session_id, None)
        if peer is not None:
            self._release_peer(peer)

    async def _destroy_session(self, session_id: str) -> None:
        self._attached_or_gone(session_id)
        await super()._destroy_session(session_id)

    async def _expire_unless_attached(self, session_id: str) -> None:
        await asyncio.sleep(ATTACH_GRACE_S)
        async with self._session_lock:
            if session_id not in self._sessions or session_id in self._session_websocket_attachments:
                return  # gone already, or a connection holds it now
            # Marked attached so that no connection attaches it between here and its end.
            self._session_websocket_attachments.add(session_id)
        await self._destroy_session(session_id)

    def is_open(self, session_id: str) -> bool:
        return session_id in self._sessions

    def end_with_connection(self, session_id: str) -> None:
        """Close the session when the WebSocket now attaching it ends. OpenEnv closes an attached
        session at the end of its connection only when a close is pending: one is, from now."""
        if session_id in self._sessions:
            self._session_pending_closes.add(session_id)
        self._attached_or_gone(session_id)


class _BindWebSockets:
    """ASGI middleware: marks what runs for a WebSocket connection (a session made there is its
    own), binds a session it attaches to it, and refuses to attach a session that is not open.
    It accepts a connection itself and starts OpenEnv's handler, which makes the session, only at
    the connection's first message; a connection without a reset `RESET_GRACE_S` after it
    connected is closed (1008), its session with it. An HTTP request runs with its peer address
    known (`_PEER`: sessions made over HTTP count per client)."""

    def __init__(self, app: ASGIApp, server: ConnectionBoundServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            token = _PEER.set((scope.get("client") or ("unknown",))[0])
            try:
                await self.app(scope, receive, send)
            finally:
                _PEER.reset(token)
            return
        attach = QueryParams(scope["query_string"]).get("session_id")
        if attach and not self.server.is_open(attach):
            await _refuse_websocket(receive, send, f"session {attach[:64]!r} is not open: a session ends with the "
                                    f"WebSocket that holds it, and one made by POST /mcp {ATTACH_GRACE_S:g} s later "
                                    "unless a WebSocket attached it; connect to /ws without session_id for a new one")  # fmt: skip
            return
        if attach:
            self.server.end_with_connection(attach)
        guarded = _ResetDeadline(receive, send, needs_reset=scope["path"] != "/mcp")
        if not await guarded.first_message():
            return  # left, or closed for sending nothing: no session was made
        token = _IN_WEBSOCKET.set(True)
        try:
            await self.app(scope, guarded.receive, guarded.send)
        finally:
            _IN_WEBSOCKET.reset(token)


class _ResetDeadline:
    """One WebSocket connection, accepted here: its first message is awaited before OpenEnv's
    handler runs, and until a reset comes (`needs_reset`; else any message), every wait for a
    message ends at `RESET_GRACE_S` after the connection, with an error frame and a close."""

    def __init__(self, receive: Receive, send: Send, needs_reset: bool) -> None:
        self._receive, self._send = receive, send
        self._pending: list[Any] = []  # replayed to OpenEnv's handler: connect, then the first message
        self._reset_seen = not needs_reset
        self._closed = False
        self._deadline = 0.0

    async def first_message(self) -> bool:
        connect = await self._receive()
        if connect["type"] != "websocket.connect":
            return False
        await self._send({"type": "websocket.accept"})
        self._deadline = asyncio.get_running_loop().time() + RESET_GRACE_S
        first = await self._until_deadline()
        if first is None or first["type"] != "websocket.receive":
            return False
        self._note(first)
        self._pending = [first, connect]
        return True

    async def receive(self) -> Any:
        if self._pending:
            return self._pending.pop()
        if self._reset_seen:
            return await self._receive()
        message = await self._until_deadline()
        if message is None:  # OpenEnv's handler ends as for a client that left, closing the session
            return {"type": "websocket.disconnect", "code": 1008}
        self._note(message)
        return message

    async def send(self, message: Any) -> None:
        if message["type"] == "websocket.accept" or self._closed:
            return  # accepted here already; or closed here, where the handler's last words go nowhere
        await self._send(message)

    def _note(self, message: Any) -> None:
        if not self._reset_seen and message["type"] == "websocket.receive":
            self._reset_seen = _is_reset(message.get("text"))

    async def _until_deadline(self) -> Any:
        """The next message, or None once the deadline passed (the connection is then closed)."""
        remaining = self._deadline - asyncio.get_running_loop().time()
        try:
            if remaining > 0:
                return await asyncio.wait_for(self._receive(), remaining)
        except asyncio.TimeoutError:
            pass
        what = "reset" if not self._reset_seen else "message"
        error = WSErrorResponse(data={"message": f"no {what} within {RESET_GRACE_S:g} s of connecting: this connection is "
                                      "closed and its place freed; connect when ready to reset at once",
                                      "code": WSErrorCode.SESSION_ERROR})  # fmt: skip
        self._closed = True
        await self._send({"type": "websocket.send", "text": error.model_dump_json()})
        await self._send({"type": "websocket.close", "code": 1008, "reason": f"no {what} within {RESET_GRACE_S:g} s"})
        return None


def _is_reset(text: str | None) -> bool:
    """Whether a WebSocket message is OpenEnv's reset (anything else, unreadable included, is not)."""
    if not text or '"reset"' not in text:  # cheap: most messages before a reset are one
        return False
    try:
        message = json.loads(text)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("type") == "reset"


async def _refuse_websocket(receive: Receive, send: Send, message: str) -> None:
    """Accept, say why in OpenEnv's error frame (SESSION_ERROR, as OpenEnv refuses a session), close."""
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    error = WSErrorResponse(data={"message": message, "code": WSErrorCode.SESSION_ERROR})
    await send({"type": "websocket.send", "text": error.model_dump_json()})
    await send({"type": "websocket.close", "code": 1000})


class _McpParams(BaseModel):
    """Of /mcp's params, OpenEnv uses `session_id` as a key: a list there was its 500."""

    model_config = ConfigDict(extra="allow", strict=True)
    session_id: str | None = Field(default=None, max_length=MAX_ID_CHARS)


class _McpRequest(BaseModel):
    """A JSON-RPC 2.0 request to POST /mcp, as OpenEnv's `JsonRpcRequest`, strictly typed."""

    model_config = ConfigDict(extra="forbid", strict=True)
    jsonrpc: Literal["2.0"]
    method: str = Field(max_length=MAX_ID_CHARS)
    params: _McpParams = Field(default_factory=_McpParams)
    id: str | int | None = None


def _check_reset(body: bytes) -> None:
    _read_reset(body or b"{}")  # OpenEnv takes an empty body as no arguments


def _check_step(body: bytes) -> None:
    _validate(StepRequestBody, body, "field", 'a step is {"action": {"answer": TEXT}}; GET /schema has the action')


def _check_mcp(body: bytes) -> None:
    _validate(_McpRequest, body, "field", "a JSON-RPC 2.0 request with a string session_id, if any")


def _unprocessable(reason: str) -> JSONResponse:
    return JSONResponse({"detail": reason}, status_code=422)


def _bad_rpc(reason: str) -> JSONResponse:
    return JSONResponse(JsonRpcResponse.error_response(JsonRpcErrorCode.INVALID_REQUEST, reason).model_dump(), 400)


# The POST routes whose bodies are checked before OpenEnv reads them, and how a refusal is said.
_SCREENS = {"/reset": (_check_reset, _unprocessable), "/step": (_check_step, _unprocessable),
            "/mcp": (_check_mcp, _bad_rpc)}  # fmt: skip


class _ScreenBodies:
    """ASGI middleware in front of OpenEnv's HTTP routes: a body over `MAX_PAYLOAD_BYTES` is refused
    unread, and those of /reset, /step and /mcp are checked strictly before OpenEnv reads them
    (it reads a seed of `true` as 1, passes unknown fields on, and answers an /mcp session_id
    that is not a string with a 500)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = _size_refusal(Headers(scope=scope).get("content-length"), scope["method"])
        screen = _SCREENS.get(scope["path"]) if scope["method"] == "POST" else None
        if refusal is None and screen is not None:
            body = await _read_body(receive)
            if body is None:
                return  # the client left
            check, refuse = screen
            try:
                check(body)
            except RequestError as error:
                refusal = refuse(str(error))
            receive = _replay(body, receive)
        await (self.app if refusal is None else refusal)(scope, receive, send)


def _size_refusal(declared: str | None, method: str) -> JSONResponse | None:
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_PAYLOAD_BYTES):
        return JSONResponse({"detail": f"request body of {declared[:20]} bytes; the limit is {MAX_PAYLOAD_BYTES:,}"},
                            status_code=413)  # fmt: skip
    if declared is None and method in ("POST", "PUT", "PATCH"):
        return JSONResponse({"detail": "a request body needs a Content-Length header"}, status_code=411)
    return None


async def _read_body(receive: Receive) -> bytes | None:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body already read, then whatever the client sends next."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Any:
        return pending.pop() if pending else await receive()

    return replay


def build_app(served: ServedGym, max_sessions: int, idle_timeout_s: float | None) -> FastAPI:
    """OpenEnv's routes for `served` (simulation mode, without the web interface whatever
    OPENENV_MODE and ENABLE_WEB_INTERFACE say), sessions bound to connections, bodies screened."""
    server = ConnectionBoundServer(
        functools.partial(GymEnvironment, served),
        AnswerAction,
        GymObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s),
        env_name=f"heavygym-{served.gym.name}",
        state_cls=GymState,
    )
    app = FastAPI(title=f"heavygym {served.gym.name} gym, served on OpenEnv (docs/openenv.md)")
    server.register_routes(app, mode=ServerMode.SIMULATION)

    @app.exception_handler(RequestError)
    async def bad_request(request, exc: RequestError):  # type: ignore[no-untyped-def]
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def unprocessable(request, exc: RequestValidationError):  # type: ignore[no-untyped-def]
        return _unprocessable(_explain(exc.errors(), "field"))

    app.add_middleware(_ScreenBodies)
    app.add_middleware(_BindWebSockets, server=server)
    return app
