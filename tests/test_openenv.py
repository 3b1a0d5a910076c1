"""OpenEnv both ways, over real sockets on 127.0.0.1: a real `harness serve` process driven by
OpenEnv's own client, and `harness benchmark --gym openenv` measuring a served gym.

Every wait here waits for an event (the server's address line, /health, a work directory
going away), with a deadline far beyond its usual time only so that a bug fails instead of
hanging.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import harness, needs_icarus, requires, with_path

from gyms import make

try:
    import openenv  # noqa: F401

    HAS_OPENENV = True
except ImportError:
    HAS_OPENENV = False

pytestmark = requires(HAS_OPENENV, "the openenv extra is not installed")

if HAS_OPENENV:
    import requests
    from websockets.sync.client import connect

    from gyms.openenv.client import GymClient
    from gyms.openenv.protocol import (
        MAX_ANSWER_CHARS,
        MAX_ID_CHARS,
        MAX_MESSAGE_ANSWER_CHARS,
        MAX_SEED,
        AnswerAction,
        MalformedObservation,
    )
    from websockets.exceptions import ConnectionClosed

    from gyms.openenv.server import ATTACH_GRACE_S, MAX_PAYLOAD_BYTES, RESET_GRACE_S

DEADLINE_S = 120.0


class Server:
    """A `harness serve` process; `url` once it answers /health."""

    def __init__(self, *args: str) -> None:
        exe = Path(sys.executable).parent / "harness"
        self.proc = subprocess.Popen([str(exe), "serve", *args, "--port", "0"], stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        self.log: list[str] = []
        for line in self.proc.stderr:  # up to the address line, printed once the port is bound
            self.log.append(line)
            if found := re.search(r"at (http://\S+) ", line):
                break
        else:
            raise AssertionError(f"harness serve exited without serving: {''.join(self.log)}")
        self.url = found[1]
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()  # type: ignore[arg-type]
        wait_for(lambda: _healthy(self.url), "the server to answer /health")

    def stop(self, how: signal.Signals = signal.SIGINT) -> int:
        self.proc.send_signal(how)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def _healthy(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=5).ok
    except requests.ConnectionError:
        return False


def wait_for(condition, what: str, deadline_s: float = DEADLINE_S) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {deadline_s:.0f} s for {what}")
        time.sleep(0.05)


def answer(gym_name: str, task_id: str, expect: str, **options: str) -> str:
    """A known answer of the in-process gym for a task: its first candidate with that label."""
    gym = make(gym_name, **options)
    task = next(t for t in gym.tasks() if t.id == task_id)
    return next(c.action for c in gym.candidates(task, random.Random(task.id)) if c.expect == expect)


@pytest.fixture(scope="module")
def math_server() -> Iterator[Server]:
    server = Server("math", "--gym-workers", "2", "--max-sessions", "3")
    yield server
    assert server.stop() == 0, "".join(server.log)


def conversation(result) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """An observation's messages as (role, content) pairs."""
    return [(m.role, m.content) for m in result.observation.messages]


def test_a_full_multi_turn_episode_driven_by_the_openenv_client(math_server):
    task = make("math").tasks()[3]
    wrong_answer, right_answer = answer("math", task.id, "fail"), answer("math", task.id, "pass")
    with GymClient(base_url=math_server.url).sync() as env:
        first = env.reset(task_id=task.id)
        assert first.observation.prompt == task.prompt and not first.done
        assert first.observation.metadata == {"task_id": task.id, "turn": 0, "max_turns": 2}
        assert conversation(first) == [("user", task.prompt)] and first.observation.feedback_role == "user"

        wrong = env.step(AnswerAction(answer=wrong_answer))
        meta = wrong.observation.metadata
        assert (wrong.reward, wrong.done, meta["outcome"], meta["turn"]) == (0.0, False, "fail", 1)
        assert "not correct" in wrong.observation.prompt  # the feedback for the next turn
        # the conversation grew by the answer as sent and the feedback, in the gym's role
        feedback = wrong.observation.prompt
        assert conversation(wrong) == [("user", task.prompt), ("assistant", wrong_answer), ("user", feedback)]

        right = env.step(AnswerAction(answer=right_answer))
        meta = right.observation.metadata
        assert (right.reward, right.done, meta["outcome"], meta["turn"], meta["terminated"]) == (1.0, True, "pass", 2, True)
        assert meta["service_s"] > 0 and meta["queue_wait_s"] >= 0
        assert conversation(right) == [*conversation(wrong), ("assistant", right_answer), ("user", right.observation.prompt)]

        state = env.state()
        assert (state.task_id, state.turn, state.done, state.step_count) == (task.id, 2, True, 2)
        with pytest.raises(RuntimeError, match="is over after 2 turn"):
            env.step(AnswerAction(answer="\\boxed{1}"))


def test_a_tool_feedback_gym_is_served_with_its_role_and_cut_answers(monkeypatch):
    """A gym whose feedback is a tool's output: three turns, each observation carrying the
    conversation so far with the feedback as `tool` messages; an answer over the cap is cut in
    the conversation (and still reaches the gym whole); the `openenv` gym takes the role."""
    monkeypatch.setenv("PYTHONPATH", with_path()["PYTHONPATH"])  # where toy_gyms lives
    server = Server("toy_gyms:ToolFeedbackGym", "--gym-workers", "1")
    try:
        huge = "x" * (MAX_MESSAGE_ANSWER_CHARS + 100)
        with GymClient(base_url=server.url).sync() as env:
            first = env.reset(task_id="toy/0")
            assert conversation(first) == [("user", "say pass")] and first.observation.feedback_role == "tool"
            second = env.step(AnswerAction(answer="nope"))
            assert conversation(second) == [("user", "say pass"), ("assistant", "nope"), ("tool", "'nope' is wrong")]
            third = env.step(AnswerAction(answer=huge))
            assert not third.done and "the limit is" in third.observation.prompt  # the gym read its size
            cut = third.observation.messages[3].content
            assert cut == huge[:MAX_MESSAGE_ANSWER_CHARS] and len(cut) < len(huge)
            assert conversation(third)[4] == ("tool", third.observation.prompt)
            last = env.step(AnswerAction(answer="pass"))
            assert (last.reward, last.done) == (1.0, True)
            assert conversation(last)[:4] == conversation(third)[:4] and len(conversation(last)) == 7
            assert conversation(last)[5:] == [("assistant", "pass"), ("tool", "well done")]
            again = env.reset(task_id="toy/1")  # a new episode starts a new conversation
            assert conversation(again) == [("user", "say pass")]
        gym = make("openenv", url=server.url, size="1")
        assert gym.feedback_role == "user"  # until its server says otherwise
        gym.tasks()
        assert gym.feedback_role == "tool" and type(gym).feedback_role == "user"  # on the instance alone
    finally:
        assert server.stop() == 0, "".join(server.log)
    assert "Traceback" not in "".join(server.log)


def test_resets_follow_a_seeded_order_and_a_seed_names_one_task(math_server):
    with GymClient(base_url=math_server.url).sync() as env:
        by_seed = [env.reset(seed=5).observation.metadata["task_id"] for _ in range(2)]
        assert by_seed[0] == by_seed[1]
        plain = [env.reset().observation.metadata["task_id"] for _ in range(3)]
        assert len(set(plain)) == 3  # the next task each time


def test_concurrent_sessions_hold_their_own_episodes_and_one_too_many_is_told_busy(math_server):
    gym = make("math")
    tasks = gym.tasks()[:3]
    clients = [GymClient(base_url=math_server.url).sync() for _ in tasks]
    try:
        for client, task in zip(clients, tasks):
            client.reset(task_id=task.id)
        with GymClient(base_url=math_server.url).sync() as extra:
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                extra.reset()
        results: dict[str, object] = {}

        def answer_task(client, task) -> None:  # type: ignore[no-untyped-def]
            results[task.id] = client.step(AnswerAction(answer=answer("math", task.id, "pass")))

        threads = [threading.Thread(target=answer_task, args=pair) for pair in zip(clients, tasks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLINE_S)
        for task in tasks:  # each session's step answered its own task
            result = results[task.id]
            assert result.observation.metadata["task_id"] == task.id and result.reward == 1.0  # type: ignore[attr-defined]
    finally:
        for client in clients:
            client.close()

    def a_session_is_free() -> bool:  # closed sessions give their places back
        try:
            with GymClient(base_url=math_server.url).sync() as again:
                return again.reset().observation.prompt != ""
        except RuntimeError:
            return False

    wait_for(a_session_is_free, "a closed session's place to come back")


def test_bad_input_gets_a_clear_error_and_the_server_keeps_serving(math_server):
    url = math_server.url
    ws_url = url.replace("http://", "ws://") + "/ws"
    with GymClient(base_url=url).sync() as env:
        with pytest.raises(RuntimeError, match="no episode is open: reset first"):
            env.step(AnswerAction(answer="\\boxed{1}"))
        with pytest.raises(RuntimeError, match=r"unknown task_id 'no-such-task': gym math has \d+ train tasks; "
                           r"`harness gyms list math --tasks` prints their ids"):  # fmt: skip
            env.reset(task_id="no-such-task")
        with pytest.raises(RuntimeError, match="unknown reset argument.*colour"):
            env.reset(colour="red")
    with connect(ws_url, max_size=None) as ws:
        ws.send("{not json")
        assert json.loads(ws.recv())["data"]["code"] == "INVALID_JSON"
        ws.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(ws.recv())["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"answer": "x" * (MAX_ANSWER_CHARS + 1)}}))
        reply = json.loads(ws.recv())["data"]
        assert reply["code"] == "VALIDATION_ERROR" and "at most" in json.dumps(reply["errors"])
        ws.send(json.dumps({"type": "step", "data": {"text": "wrong field"}}))
        assert json.loads(ws.recv())["data"]["code"] == "VALIDATION_ERROR"
    with connect(ws_url, max_size=None) as ws:  # a message over the cap ends the connection, 1009
        ws.send(json.dumps({"type": "step", "data": {"answer": "x" * MAX_PAYLOAD_BYTES}}))
        with pytest.raises(Exception) as closed:
            ws.recv()
        assert "1009" in str(closed.value) or "too big" in str(closed.value)

    too_big = requests.post(f"{url}/step", data=b"x" * (MAX_PAYLOAD_BYTES + 1), timeout=30,
                            headers={"content-type": "application/json"})  # fmt: skip
    assert too_big.status_code == 413 and "limit" in too_big.json()["detail"]
    unknown = requests.post(f"{url}/step", json={"action": {"answer": "1", "task_id": "nope"}}, timeout=30)
    assert unknown.status_code == 400 and "unknown task_id 'nope'" in unknown.json()["detail"]
    stateless = requests.post(f"{url}/step", json={"action": {"answer": "1"}}, timeout=30)
    assert stateless.status_code == 400 and "name the task with task_id" in stateless.json()["detail"]

    task = make("math").tasks()[0]  # still serving: a one-turn episode over stateless HTTP
    one_turn = requests.post(f"{url}/step", timeout=60,
                             json={"action": {"answer": answer("math", task.id, "pass"), "task_id": task.id}})  # fmt: skip
    assert one_turn.status_code == 200 and one_turn.json()["reward"] == 1.0


def test_serve_refuses_a_bad_gym_and_warns_off_loopback():
    out = harness("serve", "no-such-gym", "--port", "0", timeout=60)
    assert out.returncode == 2 and "no-such-gym" in out.stderr and "Traceback" not in out.stderr
    server = Server("harness.control:InstantGym", "-o", "of=math", "--host", "0.0.0.0", "--gym-workers", "1")
    try:
        assert "no authentication" in server.log[0]
    finally:
        assert server.stop() == 0


@needs_icarus
def test_a_vanished_client_has_its_verilog_episode_closed_and_work_directory_removed(tmp_path):
    server = Server("verilog", "--gym-workers", "1")
    try:
        gym = make("verilog")
        task = gym.tasks()[0]
        wrong = answer("verilog", task.id, "fail")
        # A client in a process of its own, killed after its first (failing) turn: no close message.
        script = (
            "import sys, json\n"
            "from gyms.openenv.client import GymClient\n"
            "from gyms.openenv.protocol import AnswerAction\n"
            f"env = GymClient(base_url={server.url!r}).sync()\n"
            f"env.reset(task_id={task.id!r})\n"
            f"r = env.step(AnswerAction(answer={wrong!r}))\n"
            "print(json.dumps(r.observation.metadata), flush=True)\n"
            "sys.stdin.read()\n"
        )
        client = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert client.stdout is not None
        meta = json.loads(client.stdout.readline())
        assert meta["outcome"] == "fail" and meta["turn"] == 1 and meta["turn"] < meta["max_turns"]
        workdir = Path(meta["info"]["workdir"])
        assert workdir.is_dir()  # the open episode keeps it between turns
        client.kill()
        client.wait()
        wait_for(lambda: not workdir.exists(), f"{workdir} to be removed after the client vanished")
    finally:
        assert server.stop(signal.SIGTERM) == 0, "".join(server.log)


def create_over_http(url: str, source: str = "127.0.0.1") -> dict:
    """POST /mcp openenv/session/create from loopback address `source` (any of 127.0.0.0/8 is this
    machine: a second address is a second client to the server); the JSON-RPC reply."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30, source_address=(source, 0))
    try:
        conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}),
                     {"Content-Type": "application/json"})  # fmt: skip
        reply = conn.getresponse()
        assert reply.status == 200, reply.read()
        return json.loads(reply.read())
    finally:
        conn.close()


def create_session_over_http(url: str, source: str = "127.0.0.1") -> str:
    """A session made by POST /mcp (openenv/session/create), no connection holding it."""
    reply = create_over_http(url, source)
    assert "result" in reply, reply
    return reply["result"]["session_id"]


def served_a_session(url: str) -> bool:
    """Whether a new WebSocket client gets a session (False: CAPACITY_REACHED)."""
    try:
        with GymClient(base_url=url).sync() as env:
            return env.reset().observation.prompt != ""
    except RuntimeError as busy:
        assert "CAPACITY_REACHED" in str(busy), busy
        return False


def test_sessions_made_over_http_give_their_places_back_after_the_grace():
    server = Server("math", "--gym-workers", "1", "--max-sessions", "2")
    try:
        task = make("math").tasks()[0]
        made = time.monotonic()
        # Two clients (one session made over HTTP each: a client's budget with 2 places is 1).
        held, unheld = create_session_over_http(server.url), create_session_over_http(server.url, "127.0.0.2")
        with connect(f"{server.url.replace('http://', 'ws://')}/ws?session_id={held}") as attached:
            attached.send(json.dumps({"type": "reset", "data": {"task_id": task.id}}))
            assert json.loads(attached.recv())["type"] == "observation"
            # The unattached session, made with the attached one, expires after the grace and a
            # WebSocket client gets its place: long before the idle timeout (900 s) OpenEnv waits.
            wait_for(lambda: served_a_session(server.url), "an unattached session's place", ATTACH_GRACE_S + 30)
            assert time.monotonic() - made >= ATTACH_GRACE_S  # it held its place for the grace
            # Past its own grace, the attached session is held by its connection and steps on.
            attached.send(json.dumps({"type": "step", "data": {"answer": answer("math", task.id, "pass")}}))
            assert json.loads(attached.recv())["data"]["reward"] == 1.0
        detached = requests.post(f"{server.url}/mcp", timeout=30, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                                                         "params": {"session_id": unheld}})  # fmt: skip
        assert f"Unknown session_id: {unheld}" in detached.json()["error"]["message"]
    finally:
        assert server.stop() == 0, "".join(server.log)
    assert "Traceback" not in "".join(server.log)


def closed_by_the_server(ws) -> tuple[list[dict], int | None]:  # type: ignore[no-untyped-def]
    """What the server sent on `ws` until it closed it, and its close code (waits for the close)."""
    frames = []
    try:
        while True:
            frames.append(json.loads(ws.recv(timeout=RESET_GRACE_S + 30)))
    except ConnectionClosed:
        return frames, ws.close_code


def test_websockets_that_send_nothing_hold_no_place_and_are_closed():
    """Today's spam: as many WebSockets as places, connected and silent. They hold no place (a
    session is made at a connection's first message), so a client is served every time; and each
    is closed RESET_GRACE_S after it connected. One that sent a message but no reset holds a
    place until then, and gives it back when closed."""
    server = Server("math", "--gym-workers", "1", "--max-sessions", "2")
    ws_url = f"{server.url.replace('http://', 'ws://')}/ws"
    with contextlib.ExitStack() as held:
        held.callback(lambda: server.stop() == 0 or pytest.fail("".join(server.log)))
        # Taken before the connections open: the server's grace for each starts after it, so the
        # closes below cannot come sooner than RESET_GRACE_S after it (an ordering, not a race).
        connecting = time.monotonic()
        silent = [held.enter_context(connect(ws_url)) for _ in range(4)]
        for _ in range(5):
            assert served_a_session(server.url), "a silent WebSocket kept a client out"
        # A connection that asks for its state (a session is made) but never resets.
        stalling_from = time.monotonic()
        stalling = held.enter_context(connect(ws_url))
        stalling.send(json.dumps({"type": "state"}))
        assert json.loads(stalling.recv(timeout=30))["type"] == "state"
        for ws in silent:
            frames, code = closed_by_the_server(ws)
            assert code == 1008 and "no reset within" in frames[-1]["data"]["message"], (code, frames)
        assert time.monotonic() - connecting >= RESET_GRACE_S  # closed at the grace, not before
        assert served_a_session(server.url)  # the stalling one holds one place, one is left
        frames, code = closed_by_the_server(stalling)
        assert code == 1008 and time.monotonic() - stalling_from >= RESET_GRACE_S, (code, frames)
        # Its place is back: two clients at once get a session each.
        with GymClient(base_url=server.url).sync() as one, GymClient(base_url=server.url).sync() as two:
            assert one.reset().observation.prompt and two.reset().observation.prompt
    assert "Traceback" not in "".join(server.log)


def test_one_client_re_creating_sessions_over_http_cannot_keep_another_out():
    """Today's other spam: one client making sessions over HTTP (POST /mcp) as fast as it can,
    never attaching them. It holds its budget (1 of 2 places here), no more: a client at another
    address is served every time, and the spammer is told why it is refused."""
    server = Server("math", "--gym-workers", "1", "--max-sessions", "2")
    try:
        assert "result" in create_over_http(server.url, "127.0.0.2")
        for _ in range(8):
            refused = create_over_http(server.url, "127.0.0.2")
            assert "budget" in refused["error"]["message"] and "127.0.0.2" in refused["error"]["message"], refused
            assert served_a_session(server.url), "a client re-creating sessions over HTTP kept another out"
        # Attached, its session no longer counts against its budget: it may make another.
        with connect(f"{server.url.replace('http://', 'ws://')}/ws?session_id={create_session_over_http(server.url)}"):
            pass
        spare = create_over_http(server.url, "127.0.0.3")  # another client: its own budget
        assert "result" in spare or "capacity" in spare["error"]["message"], spare
    finally:
        assert server.stop() == 0, "".join(server.log)
    assert "Traceback" not in "".join(server.log)


@needs_icarus
def test_an_attached_session_ends_with_its_connection_and_cannot_be_attached_again():
    server = Server("verilog", "--gym-workers", "1")
    try:
        task = make("verilog").tasks()[0]
        session_id = create_session_over_http(server.url)
        ws_url = f"{server.url.replace('http://', 'ws://')}/ws?session_id={session_id}"
        # A client in a process of its own attaches the session, fails one turn, and is killed: no close.
        script = (
            "import json, sys\n"
            "from websockets.sync.client import connect\n"
            f"with connect({ws_url!r}, max_size=None) as ws:\n"
            f"    ws.send(json.dumps({{'type': 'reset', 'data': {{'task_id': {task.id!r}}}}}))\n"
            "    ws.recv()\n"
            f"    ws.send(json.dumps({{'type': 'step', 'data': {{'answer': {answer('verilog', task.id, 'fail')!r}}}}}))\n"
            "    print(ws.recv(), flush=True)\n"
            "    sys.stdin.read()\n"
        )
        client = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert client.stdout is not None
        meta = json.loads(client.stdout.readline())["data"]["metadata"]
        assert meta["outcome"] == "fail" and meta["turn"] < meta["max_turns"]
        workdir = Path(meta["info"]["workdir"])
        assert workdir.is_dir()  # the open episode keeps it between turns
        client.kill()
        client.wait()
        wait_for(lambda: not workdir.exists(), f"{workdir} to be removed after the attached client vanished")
        with connect(ws_url, max_size=None) as again:  # the session ended with its connection
            refused = json.loads(again.recv())
        assert refused["type"] == "error" and f"session '{session_id}' is not open" in refused["data"]["message"]
    finally:
        assert server.stop(signal.SIGTERM) == 0, "".join(server.log)
    assert "Traceback" not in "".join(server.log)


def test_a_session_closed_under_its_connection_refuses_what_the_connection_sends_next():
    """OpenEnv's idle timeout closes a session but not its WebSocket: a reset there must not open
    an episode on the closed session, which nothing would ever close."""
    server = Server("math", "--gym-workers", "1", "--max-sessions", "1", "--idle-timeout", "1")
    try:
        with GymClient(base_url=server.url).sync() as idle:
            idle.reset()
            wait_for(lambda: served_a_session(server.url), "the idle session to be closed")
            with pytest.raises(RuntimeError, match="this session is closed"):
                idle.reset()
    finally:
        assert server.stop() == 0, "".join(server.log)
    assert "Traceback" not in "".join(server.log)


# One value of each JSON type, for a field of another type; an integer is also a number.
JSON_VALUES = {"boolean": True, "integer": 7, "number": 1.5, "string": "text", "array": [1], "object": {"a": 1}, "null": None}
RESET_FIELDS = {"task_id": "string?", "seed": "integer?", "episode_id": "string?"}  # ?: or null
ACTION_FIELDS = {"answer": "string", "task_id": "string?", "metadata": "object"}
STEP_FIELDS = {"timeout_s": "number?", "request_id": "string?"}
OVERSIZED = {"task_id": "x" * (MAX_ID_CHARS + 1), "episode_id": "x" * (MAX_ID_CHARS + 1), "seed": MAX_SEED + 1,
             "request_id": "x" * (MAX_ID_CHARS + 1), "answer": "x" * (MAX_ANSWER_CHARS + 1)}  # fmt: skip


def wrong_values(kind: str) -> list[object]:
    """A value of each JSON type a field of `kind` does not take."""
    takes = {kind.rstrip("?")} | ({"null"} if kind.endswith("?") else set())
    takes |= {"integer"} if "number" in takes else set()
    return [value for name, value in JSON_VALUES.items() if name not in takes]


def malformed_requests(task_id: str) -> Iterator[tuple[str, object, str]]:
    """(route, JSON body or raw text, the field its reason must name) for each malformed request."""
    action = {"answer": "\\boxed{1}", "task_id": task_id}
    for field, kind in RESET_FIELDS.items():
        for value in [*wrong_values(kind), OVERSIZED[field]]:
            yield "/reset", {field: value}, field
    for field, kind in ACTION_FIELDS.items():
        for value in [*wrong_values(kind), *([OVERSIZED[field]] if field in OVERSIZED else [])]:
            yield "/step", {"action": {**action, field: value}}, field
    for field, kind in STEP_FIELDS.items():
        for value in [*wrong_values(kind), OVERSIZED.get(field, -1)]:
            yield "/step", {"action": action, field: value}, field
    yield "/reset", {"seed": -1}, "seed"
    yield "/reset", {"colour": "red"}, "colour"
    yield "/step", {"action": {**action, "colour": "red"}}, "colour"
    yield "/step", {"action": action, "colour": "red"}, "colour"
    yield "/step", {"answer": "no action around it"}, "action"
    for value in wrong_values("string?"):
        yield "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close", "params": {"session_id": value}}, "session_id"
    yield "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"session_id": ["a"]}}, "session_id"
    yield "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}, "params"
    yield "/mcp", {"jsonrpc": "1.0", "id": 1, "method": "tools/list"}, "jsonrpc"
    for route in ("/reset", "/step", "/mcp"):  # bodies that are not a JSON object
        for raw in ("{not json", "[1]", "null", "[" * 100_000, '{"seed": 1' + "0" * 5000 + "}"):
            yield route, raw, ""


def reason_of(reply: requests.Response) -> object:
    """The reason an HTTP reply gives: `detail`, or a JSON-RPC error's message, else its text."""
    try:
        body = reply.json()
        return body.get("detail") or body["error"]["message"]
    except (ValueError, KeyError, AttributeError):
        return reply.text


def test_malformed_arguments_are_one_line_4xx_and_the_server_serves_on(math_server):
    url = math_server.url
    task = make("math").tasks()[0]
    for route, body, field in malformed_requests(task.id):
        data = body if isinstance(body, str) else json.dumps(body)
        reply = requests.post(f"{url}{route}", data=data, headers={"content-type": "application/json"}, timeout=60)
        said = reason_of(reply)
        case = f"{route} {data[:80]}: {reply.status_code} {said!r}"
        assert 400 <= reply.status_code < 500 and isinstance(said, str) and "\n" not in said, case
        assert field in said, case

    with connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:  # the same fields over a WebSocket
        for route, body, field in malformed_requests(task.id):
            if route == "/mcp" or isinstance(body, str):
                continue
            if route == "/reset":
                ws.send(json.dumps({"type": "reset", "data": body}))
            elif set(body) == {"action"}:  # the WebSocket's step message is the action alone
                ws.send(json.dumps({"type": "step", "data": body["action"]}))
            else:
                continue
            reply = json.loads(ws.recv())
            assert reply["type"] == "error" and reply["data"]["code"] in ("EXECUTION_ERROR", "VALIDATION_ERROR"), reply
            if route == "/reset":
                assert field in reply["data"]["message"] and "\n" not in reply["data"]["message"], reply
        ws.send(json.dumps({"type": "reset", "data": {"task_id": task.id}}))  # the session serves on
        assert json.loads(ws.recv())["type"] == "observation"

    with GymClient(base_url=url).sync() as env:  # and so does the server: a normal episode
        env.reset(task_id=task.id)
        assert env.step(AnswerAction(answer=answer("math", task.id, "pass"))).reward == 1.0
    assert "Traceback" not in "".join(math_server.log), "".join(math_server.log)


def summary_of(out: subprocess.CompletedProcess[str]) -> dict:
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_benchmark_through_openenv_agrees_with_the_gym_in_process(tmp_path):
    tasks_file = tmp_path / "math.jsonl"
    server = Server("math", "--gym-workers", "2", "--tasks-file", str(tasks_file))
    try:
        config = ["--mode", "sync", "--steps", "3", "--batch", "2", "--group", "2", "--gym-workers", "2",
                  "--results", str(tmp_path), "--json"]  # fmt: skip
        served = summary_of(harness("benchmark", "--gym", "openenv", "-o", f"url={server.url}",
                                    "-o", f"tasks={tasks_file}", *config))  # fmt: skip
        local = summary_of(harness("benchmark", "--gym", "math", *config))
    finally:
        assert server.stop() == 0, "".join(server.log)
    assert served["gym"] == "openenv" and served["tools"]["url"] == server.url
    # The replay policy gives the same answers to the same tasks, so the outcomes are the same.
    s, l = served["modes"]["sync"], local["modes"]["sync"]
    assert s["accounting"] == l["accounting"] and s["accounting"]["balanced"]
    assert s["accounting"]["errored"] == 0
    assert (s["pass_rate"], s["reward_mean"]) == (l["pass_rate"], l["reward_mean"])
    cards = [json.loads((tmp_path / "runs" / run["run_id"] / "card.json").read_text()) for run in (served, local)]
    assert cards[0]["calls"] == cards[1]["calls"] and cards[0]["mean_turns"] == cards[1]["mean_turns"]
    assert cards[0]["error_rate"] == cards[1]["error_rate"] == 0.0


def test_an_unreachable_server_is_one_clear_line_and_a_dead_one_an_error_outcome(tmp_path):
    out = harness("gyms", "check", "openenv", "-o", "url=http://127.0.0.1:9", timeout=60)
    assert out.returncode == 2 and "http://127.0.0.1:9 cannot be reached" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr

    from gyms.pool import GymPool

    server = Server("math", "--gym-workers", "1")
    try:
        gym = make("openenv", url=server.url, size="2")
        task = gym.tasks()[0]
        with GymPool(1, step_timeout_s=gym.step_timeout_s) as pool:
            first = pool.step(gym.open(task), "\\boxed{123456789}")
            assert first.result.outcome.value == "fail" and not first.result.done
            assert server.stop() == 0
            second = pool.step(first.episode, "\\boxed{1}")
    finally:
        server.proc.kill()
    assert second.result.outcome.value == "error" and second.result.done
    assert server.url in second.result.observation


@pytest.mark.slow
def test_conformance_check_through_openenv(tmp_path):
    tasks_file = tmp_path / "math.jsonl"
    server = Server("math", "--gym-workers", "2", "--tasks-file", str(tasks_file))
    try:
        out = harness("gyms", "check", "openenv", "-o", f"url={server.url}", "-o", f"tasks={tasks_file}",
                      "--limit", "3", "--gym-workers", "2", timeout=300)  # fmt: skip
        without = harness("gyms", "check", "openenv", "-o", f"url={server.url}", "-o", "size=2", timeout=120)
    finally:
        assert server.stop() == 0, "".join(server.log)
    assert out.returncode == 0 and "PASS gym openenv" in out.stdout, out.stdout + out.stderr
    assert without.returncode == 0 and "gave no candidates" in without.stdout, without.stdout + without.stderr
    assert "4 checks" in without.stdout  # the garbage answers, two per task, failed as they must




def test_a_foreign_openenv_app_through_the_openenv_gym_and_its_schema_errors(monkeypatch):
    """Not heavygym's server: an installed environment's app (`-o app=`), served by the gym on a
    loopback port; the answer's field is read from its /schema, the prompt field is named, and
    answers outside heavygym's schema (a reward above 1, a step the server fails) are errors."""
    from gyms.pool import GymPool

    monkeypatch.setenv("PYTHONPATH", with_path()["PYTHONPATH"])  # where openenv_foreign lives
    with pytest.raises(ValueError, match="no text field 'prompt'.*its fields: history, text"):
        make("openenv", app="openenv_foreign:app", size="1").tasks()
    gym = make("openenv", app="openenv_foreign:app", size="2", prompt_field="text")
    tasks = gym.tasks()
    assert gym.url.startswith("http://127.0.0.1:") and gym.describe()["app"] == "openenv_foreign:app"
    assert [t.prompt for t in tasks] == ["say something (0)", "say something (1)"]
    with GymPool(1, step_timeout_s=gym.step_timeout_s) as pool:
        paid = pool.step(gym.open(tasks[0]), "reward:1").result
        unpaid = pool.step(gym.open(tasks[0]), "reward:0.25").result
        forged = pool.step(gym.open(tasks[1]), "reward:2").result
        wordy = pool.step(gym.open(tasks[1]), "reward:lots").result
    assert (paid.outcome.value, paid.reward, paid.observation) == ("pass", 1.0, "you said reward:1")
    assert (unpaid.outcome.value, unpaid.reward, unpaid.done) == ("fail", 0.25, True)  # the server ended it
    # a reward above 1; a step the server itself fails on (its Observation refuses the reward)
    for bad, shown in ((forged, "reward 2.0 is not a number in [0, 1]"), (wordy, "Server error: Invalid message")):
        assert bad.outcome.value == "error" and bad.reward == 0.0 and shown in bad.observation, bad
    out = harness("benchmark", "--gym", "openenv", "-o", "app=no_such_module:app", timeout=60)
    assert out.returncode == 2 and 'Could not import module "no_such_module"' in out.stderr, out.stderr


def test_the_openenv_gym_reads_a_foreign_conversation_from_messages_field(monkeypatch):
    """The foreign app's conversation is in `history`, its feedback `tool` messages, and it names
    no feedback role: `-o messages_field=history -o feedback_role=tool` reads it; without the
    role, the first feedback that goes on is an error naming the fix; a conversation that is not
    a list is an error; a field that is not there is refused at start-up."""
    from gyms.pool import GymPool

    monkeypatch.setenv("PYTHONPATH", with_path()["PYTHONPATH"])  # where openenv_foreign lives
    options = {"app": "openenv_foreign:app", "size": "1", "prompt_field": "text", "max_turns": "2"}
    with pytest.raises(ValueError, match=r"no field 'nope' \(messages_field; its fields: history, text\)"):
        make("openenv", **options, messages_field="nope").tasks()
    with pytest.raises(ValueError, match=r"feedback_role='assistant': use one of user, tool"):
        make("openenv", **options, feedback_role="assistant")
    gym = make("openenv", **options, messages_field="history", feedback_role="tool")
    unsure = make("openenv", **options, messages_field="history")  # its feedback role stays user
    [task] = gym.tasks()
    unsure.tasks()
    assert (gym.feedback_role, unsure.feedback_role) == ("tool", "user")
    with GymPool(1, step_timeout_s=gym.step_timeout_s) as pool:
        first = pool.step(gym.open(task), "again")
        second = pool.step(first.episode, "reward:1").result
        wrong_role = pool.step(unsure.open(task), "again").result
        garbled = pool.step(gym.open(task), "garble").result
    assert (first.result.outcome.value, first.result.done, first.result.observation) == ("fail", False, "you said again")
    assert (second.outcome.value, second.reward, second.turn) == ("pass", 1.0, 2)
    assert wrong_role.outcome.value == "error" and "is a 'tool' message, not 'user'" in wrong_role.observation
    assert "give -o feedback_role=tool" in wrong_role.observation
    assert garbled.outcome.value == "error" and "field history is 'garbled', not a list" in garbled.observation
    with GymClient(base_url=gym.url).sync() as env, pytest.raises(MalformedObservation, match="field messages is missing"):
        env.reset(seed=0)  # heavygym's client wants heavygym's conversation


def serve_app(app: str) -> tuple[subprocess.Popen[str], str]:
    """An OpenEnv app served by uvicorn on a loopback port; the process and its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", "0"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        if found := re.search(r"running on (http://\S+)", line):
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, found[1]
    raise AssertionError(f"uvicorn could not serve {app}")


MALFORMED_CONVERSATIONS = [  # (messages, feedback_role, what the client's error says)
    (None, "user", "field messages is null, not a list"),
    ("hello", "user", "field messages is 'hello', not a list"),
    ([["user", "hello"]], "user", "field messages[0] is a list, not an object with a role and a content"),
    ([{"role": "user"}], "user", "field messages[0] is an object, not an object with a role and a content"),
    ([{"role": "system", "content": "hi"}], "user", "field messages[0].role is 'system', not one of user, assistant, tool"),
    ([{"role": "user", "content": 7}], "user", "field messages[0].content is a number, not a string"),
    ([{"role": "user", "content": "hi", "name": "x"}], "user", "field messages[0] has keys other than role and content: name"),
    ([{"role": "user", "content": "hi"}], "assistant", "field feedback_role is 'assistant', not one of user, tool"),
    ([], "user", "field messages is empty"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "f"}], "tool",
     "field messages[2].role is 'user', not 'tool'"),
]  # fmt: skip


def test_a_malformed_conversation_is_one_line_from_the_client(monkeypatch):
    """heavygym's client against a server that sends whatever conversation the reset asks for."""
    monkeypatch.setenv("PYTHONPATH", with_path()["PYTHONPATH"])  # where openenv_foreign lives
    proc, url = serve_app("openenv_foreign:mirror_app")
    said = []
    try:
        with GymClient(base_url=url).sync() as env:
            for messages, feedback_role, _ in MALFORMED_CONVERSATIONS:
                with pytest.raises(MalformedObservation) as raised:
                    env.reset(messages=messages, feedback_role=feedback_role)
                said.append(str(raised.value))
            fine = env.reset(messages=[{"role": "user", "content": "hi"}], feedback_role="tool")  # the control
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    for line, (_, _, says) in zip(said, MALFORMED_CONVERSATIONS):
        assert line.startswith("malformed observation from the server: " + says), line
        assert "\n" not in line and "docs/openenv.md" in line  # one line, with the fix
    assert [(m.role, m.content) for m in fine.observation.messages] == [("user", "hi")]


def test_a_real_policy_without_candidates_through_openenv(tmp_path, math_server):
    """No tasks file, no known answers: the tiny model answers, the served gym judges."""
    out = harness("benchmark", "--gym", "openenv", "-o", f"url={math_server.url}", "-o", "size=4",
                  "--policy", "tiny", "--mode", "sync", "--steps", "2", "--batch", "1", "--group", "2",
                  "--results", str(tmp_path), "--json", timeout=600)  # fmt: skip
    summary = summary_of(out)
    figures = summary["modes"]["sync"]
    assert summary["emulated"] is False and figures["accounting"]["balanced"]
    assert figures["accounting"]["errored"] == 0 and figures["accounting"]["trained"] >= 4


@pytest.mark.parametrize("line, says", [
    ('{"reset": {"seed": 1}}\n{not json', ":2: not JSON"),
    ('{"id": "a", "reset": {}}\n{"id": "a", "reset": {}}', ":2: id 'a' is not a string or repeats"),
    ('{"reset": [1]}', ":1: a task is an object with \"reset\""),
    ('{"reset": {}, "candidates": [{"action": "x", "expect": "maybe"}]}', ":1: a candidate needs a string action"),
])  # fmt: skip
def test_a_bad_tasks_file_is_one_line_naming_the_line(tmp_path, line, says):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(line + "\n")
    out = harness("gyms", "check", "openenv", "-o", "url=http://127.0.0.1:9", "-o", f"tasks={tasks}", timeout=60)
    assert out.returncode == 2 and f"{tasks}{says}" in out.stderr and "Traceback" not in out.stderr, out.stderr
