"""The `openenv` gym: any OpenEnv environment server as a heavygym gym.

    harness benchmark --gym openenv -o url=http://127.0.0.1:8000 -o tasks=tasks.jsonl
    harness gyms check openenv -o url=http://127.0.0.1:8000 -o tasks=tasks.jsonl
    harness benchmark --gym openenv -o app=echo_env.server.app:app -o size=8 --policy tiny

A task is a set of reset arguments. `tasks=FILE.jsonl` lists them, one JSON object a line:

    {"id": "add-3-4", "reset": {"task_id": "add-3-4"},
     "candidates": [{"action": "\\boxed{7}", "expect": "pass", "label": "reference"}]}

`id` defaults to the reset arguments as JSON; `candidates` (known answers with the outcome the
server must give, as `gyms.Candidate`) are optional: with them the replay policy and
`harness gyms check` work; without them only real policies can answer. With no file, `size=N`
tasks reset with seeds 0..N-1. The reset arguments must pick the task deterministically: the
gym resets each task once to read its prompt, and each episode resets again; an episode whose
prompt differs is an `error`.

An episode is one WebSocket session, opened on its first step in the worker process that runs
it (`Episode.stays_on_worker`: the pool keeps its later turns there). The answer goes in the
action's one text field (`action_field`, else read from the server's /schema); the prompt and
feedback come from the observation's `prompt_field` (default `prompt`). A step passes when the
server's metadata says `outcome: pass` (as `harness serve` does) or, lacking an outcome, when
the reward reaches `pass_reward`. A server that cannot be reached, times out, or answers
outside that schema makes the step an `error` with the reason: never a hang, never a reward.

An observation that carries the conversation (`messages`, as `harness serve` sends, or the field
`messages_field` names) has it checked, and the gym's feedback role is the one the server says:
the reset's `feedback_role`, else `-o feedback_role=`, else user; each later feedback message
must come in that role, since the trainer renders the feedback in the gym's role.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import threading
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gyms.base import FEEDBACK_ROLES, Candidate, Episode, Gym, Outcome, Task, ToolCheck, Verdict
from gyms.options import Options

# The roles a foreign conversation may hold: heavygym's (trainer/types.py) and a system message,
# which an environment may open with.
_ROLES = ("system", "user", "assistant", "tool")

_OPTIONS = Options("openenv")
_EXPECTS = ("pass", "fail", "timeout")
_CONNECT_TIMEOUT_S = 5.0
_MAX_TASKS_FILE_BYTES = 64 * 1024 * 1024
INSTALL_HINT = "install the openenv extra: HEAVYGYM_EXTRAS=openenv make setup, or pip install -e '.[openenv]'"


@dataclass(frozen=True)
class Remote:
    """Where the server is and how its schema maps onto heavygym's (small: it travels with each episode)."""

    url: str
    action_field: str
    prompt_field: str
    pass_reward: float
    timeout_s: float
    messages_field: str = ""  # the observation's conversation; "": `messages` where the server sends one
    feedback_role: str = "user"  # the role each feedback message must have


class RemoteError(Exception):
    """The server answered outside the protocol, or not at all."""


def _client(remote: Remote) -> Any:
    try:
        from openenv import GenericEnvClient
    except ImportError:
        raise RemoteError(f"OpenEnv is not installed: {INSTALL_HINT}") from None
    client = GenericEnvClient(base_url=remote.url, connect_timeout_s=_CONNECT_TIMEOUT_S,
                              message_timeout_s=remote.timeout_s).sync()  # fmt: skip
    client.connect()
    return client


def _prompt(remote: Remote, observation: Any) -> str:
    if not isinstance(observation, Mapping):
        raise RemoteError(f"the observation is {type(observation).__name__}, not a JSON object")
    text = observation.get(remote.prompt_field)
    if not isinstance(text, str):
        fields = ", ".join(sorted(k for k in observation if k != "metadata")) or "none"
        raise RemoteError(f"the observation has no text field {remote.prompt_field!r} (its fields: {fields}); "
                          "name the right one with -o prompt_field=")  # fmt: skip
    return text


def _conversation(remote: Remote, observation: Mapping[str, Any]) -> list[dict[str, str]] | None:
    """The observation's conversation, checked (None where it carries none and none was asked for)."""
    field = remote.messages_field or "messages"
    if field not in observation:
        if remote.messages_field:
            fields = ", ".join(sorted(k for k in observation if k != "metadata")) or "none"
            raise RemoteError(f"the observation has no field {field!r} (messages_field; its fields: {fields}); "
                              "name the one that holds the conversation with -o messages_field=")  # fmt: skip
        return None
    from gyms.openenv.protocol import MalformedObservation, read_conversation

    try:
        return read_conversation(observation[field], field, _ROLES, exact=False)
    except MalformedObservation as exc:
        raise RemoteError(f"{exc}: a conversation is a list of {{\"role\", \"content\"}} objects with a role of "
                          f"{', '.join(_ROLES)}; name the field that holds one with -o messages_field=") from None  # fmt: skip


def _said_feedback_role(observation: Mapping[str, Any]) -> str | None:
    """The feedback role the observation names (`harness serve` sends `feedback_role`), if any."""
    if "feedback_role" not in observation:
        return None
    role = observation["feedback_role"]
    if role not in FEEDBACK_ROLES:
        raise RemoteError(f"the observation's feedback_role is {str(role)[:40]!r}, not one of {', '.join(FEEDBACK_ROLES)}")
    return str(role)


# The sessions of the episodes this worker process runs, by episode key.
_sessions: dict[str, Any] = {}


class OpenEnvEpisode(Episode):
    stays_on_worker = True

    def __init__(self, task: Task, max_turns: int, remote: Remote) -> None:
        super().__init__(task, max_turns)
        self.remote = remote
        self.key = uuid.uuid4().hex

    def evaluate(self, action: str) -> Verdict:
        try:
            client = self._session()
            result = client.step({self.remote.action_field: action})
            verdict = self._verdict(result)
        except (RemoteError, ConnectionError, TimeoutError, OSError, RuntimeError, ValueError) as exc:
            self._end()
            why = f"timed out after {self.remote.timeout_s:g} s" if isinstance(exc, TimeoutError) else str(exc)
            if "CAPACITY_REACHED" in why:
                why += ("; every session of the server is taken: serve more (harness serve --max-sessions) "
                        "than the episodes a run keeps open (batch x group)")  # fmt: skip
            return Verdict(0.0, Outcome.ERROR, f"openenv server {self.remote.url}: {why}", {"error": why})
        if result.done or verdict.outcome is not Outcome.FAIL:
            self._end()
            if verdict.outcome is Outcome.FAIL:
                self.max_turns = self.turn  # the server ended the episode: no turn is left
        return verdict

    def close(self) -> None:
        self._end()

    def _session(self) -> Any:
        client = _sessions.get(self.key)
        if client is not None:
            return client
        if self.turn > 1:
            raise RemoteError("the episode's session was lost with the gym worker that held it")
        client = _client(self.remote)
        _sessions[self.key] = client
        started = _prompt(self.remote, client.reset(**self.task.metadata["reset"]).observation)
        if started != self.task.prompt:
            raise RemoteError("the server's reset gave another prompt than before for the same arguments: "
                              "make the reset arguments pick the task (a task id or a seed)")  # fmt: skip
        return client

    def _verdict(self, result: Any) -> Verdict:
        feedback = _prompt(self.remote, result.observation)
        self._check_feedback_role(result.observation, result.done)
        metadata = result.metadata if isinstance(result.metadata, Mapping) else {}
        reward = result.reward if result.reward is not None else 0.0
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not 0.0 <= reward <= 1.0:
            raise RemoteError(f"reward {result.reward!r} is not a number in [0, 1]")
        outcome = metadata.get("outcome")
        if outcome is None:
            outcome = "pass" if reward >= self.remote.pass_reward else "fail"
        if outcome not in ("pass", "fail", "error"):
            raise RemoteError(f"outcome {outcome!r} is not one of pass, fail, error")
        if (outcome == "fail") == (reward >= 1.0) and outcome != "error":
            raise RemoteError(f"a {outcome} with reward {reward}: a pass pays 1, a fail less")
        info = dict(metadata.get("info") or {}) if isinstance(metadata.get("info"), Mapping) else {}
        for key in ("service_s", "queue_wait_s"):  # the server's own timing, where it gives it
            if key in metadata:
                info[f"server_{key}"] = metadata[key]
        reward = {"pass": 1.0, "error": 0.0}.get(outcome, float(reward))
        return Verdict(reward, Outcome(outcome), feedback, info)

    def _check_feedback_role(self, observation: Mapping[str, Any], done: bool) -> None:
        """The feedback message comes in the role the gym took at start-up: the trainer renders the
        feedback in the gym's role, so another one would put words in the wrong mouth."""
        role = self.remote.feedback_role
        said = _said_feedback_role(observation)
        if said is not None and said != role:
            raise RemoteError(f"the observation's feedback_role is {said!r}, but its reset said {role!r}: "
                              "the feedback role must stay the same through a run")  # fmt: skip
        conversation = _conversation(self.remote, observation)
        if conversation and not done and conversation[-1]["role"] != role:
            field = self.remote.messages_field or "messages"
            raise RemoteError(f"the feedback (the last message of {field}) is a {conversation[-1]['role']!r} "
                              f"message, not {role!r} as the gym took at start-up (the reset's feedback_role, else "
                              f"-o feedback_role=, else user): give -o feedback_role={conversation[-1]['role']}")  # fmt: skip

    def _end(self) -> None:
        client = _sessions.pop(self.key, None)
        if client is not None:
            try:
                client.close()
            except Exception:  # a dead connection: nothing is left to close
                pass


class OpenEnvGym(Gym):
    """Options: `url` (the server) or `app` (an installed environment's ASGI app, MODULE:ATTRIBUTE,
    served here on a loopback port while the gym lives), `tasks` (a JSONL file) or `size` (seeds 0..size-1; default
    16), `action_field`, `prompt_field` (default prompt), `messages_field` (the observation's
    conversation; default `messages`, where there is one), `feedback_role` (user or tool, where
    the server does not say; default user), `max_turns` (default: the reset's `max_turns`
    metadata, else 1), `step_timeout_s` (default 60), `pass_reward` (default 1).

    `feedback_role` is this instance's: the one the server's resets name (`harness serve` sends
    the served gym's), read by `tasks()`."""

    name = "openenv"
    version = "0.1.0"
    required_options = ("url|app",)

    def __init__(
        self,
        url: str = "",
        app: str = "",
        tasks: str = "",
        size: int | str = 16,
        action_field: str = "",
        prompt_field: str = "prompt",
        messages_field: str = "",
        feedback_role: str = "",
        max_turns: int | str = 0,
        step_timeout_s: float | str = 60.0,
        pass_reward: float | str = 1.0,
    ) -> None:
        if bool(url) == bool(app):
            raise ValueError("openenv gym: give the server's address, -o url=http://HOST:PORT (harness serve "
                             "prints it), or an installed environment's app, -o app=MODULE:ATTRIBUTE; one of the two")  # fmt: skip
        if url and not url.startswith(("http://", "https://", "ws://", "wss://")):
            raise ValueError(f"openenv gym option url={url!r}: give the server's address, -o url=http://HOST:PORT")
        if app and not re.fullmatch(r"[\w.]+:[\w.]+", app):
            raise ValueError(f"openenv gym option app={app!r}: name the environment's ASGI app as MODULE:ATTRIBUTE, "
                             "e.g. -o app=echo_env.server.app:app")  # fmt: skip
        self.url = url.rstrip("/")
        self.app = app
        self.tasks_file = Path(tasks) if tasks else None
        self.size = _OPTIONS.whole("size", size, 1)
        self._action_field = action_field
        self.prompt_field = prompt_field
        self.messages_field = messages_field
        self._feedback_role = _OPTIONS.choice("feedback_role", feedback_role, FEEDBACK_ROLES) if feedback_role else ""
        self.feedback_role = self._feedback_role or "user"
        self._max_turns = _OPTIONS.whole("max_turns", max_turns, 0)
        self.step_timeout_s = _OPTIONS.seconds("step_timeout_s", step_timeout_s)
        try:
            self.pass_reward = float(pass_reward)
        except (TypeError, ValueError):
            self.pass_reward = float("nan")
        if not 0 < self.pass_reward <= 1:  # also refuses nan
            raise ValueError(f"openenv gym option pass_reward={pass_reward!r} must be a number in (0, 1]")
        self._tasks: list[Task] | None = None
        self._candidates: dict[str, list[Candidate]] = {}
        self.max_turns = self._max_turns or 1

    @property
    def remote(self) -> Remote:
        return Remote(self.url, self._action_field or "answer", self.prompt_field, self.pass_reward,
                      self.step_timeout_s, self.messages_field, self.feedback_role)  # fmt: skip

    def tasks(self, split: str = "train") -> Sequence[Task]:
        if split != "train":
            raise ValueError(f"the openenv gym has one split, train (the server's tasks); got {split!r}")
        if self._tasks is None:
            if self.app and not self.url:  # started here, not at construction: Ray's actors make the gym too
                self.url = _serve_app(self)
            entries = _read_tasks(self.tasks_file) if self.tasks_file else [
                {"id": f"seed-{k}", "reset": {"seed": k}, "candidates": []} for k in range(self.size)]  # fmt: skip
            self._action_field = self._action_field or _action_field(self.url)
            self._tasks = self._reset_each(entries)
        return self._tasks

    def open(self, task: Task) -> OpenEnvEpisode:
        return OpenEnvEpisode(task, self.max_turns, self.remote)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return list(self._candidates.get(task.id, []))

    def tools(self) -> list[ToolCheck]:
        try:
            import openenv
        except ImportError:
            return [ToolCheck("openenv", False, install_hint=INSTALL_HINT)]
        return [ToolCheck("openenv", True, openenv.__version__)]

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "url": self.url, **({"app": self.app} if self.app else {})}

    def _reset_each(self, entries: list[dict[str, Any]]) -> list[Task]:
        """Reset every task once, on one session, to read its prompt (and the server's max_turns)."""
        try:
            client = _client(self.remote)
        except (RemoteError, ConnectionError, OSError) as exc:
            raise ConnectionError(f"openenv server {self.url}: {exc}") from None
        tasks, roles = [], {}
        try:
            for entry in entries:
                try:
                    result = client.reset(**entry["reset"])
                    prompt = _prompt(self.remote, result.observation)
                    _conversation(self.remote, result.observation)
                    said = _said_feedback_role(result.observation)
                except (RemoteError, RuntimeError, TimeoutError, OSError) as exc:
                    raise ValueError(f"openenv server {self.url}: reset {json.dumps(entry['reset'])}: {exc}") from None
                if said is not None:
                    roles.setdefault(said, entry["id"])
                server_turns = (result.metadata or {}).get("max_turns")
                if not self._max_turns and isinstance(server_turns, int) and server_turns > self.max_turns:
                    self.max_turns = server_turns
                tasks.append(Task(entry["id"], prompt, metadata={"reset": entry["reset"]}))
                self._candidates[entry["id"]] = entry["candidates"]
        finally:
            client.close()
        self._take_feedback_role(roles)
        return tasks

    def _take_feedback_role(self, said: Mapping[str, str]) -> None:
        """The feedback role the resets named (each role with the first task that named it)."""
        if len(said) > 1:
            shown = ", ".join(f"{role!r} (task {task})" for role, task in said.items())
            raise ValueError(f"openenv server {self.url}: its resets name different feedback roles, {shown}: "
                             "a gym's feedback has one role")  # fmt: skip
        if said:
            [role] = said
            if self._feedback_role and role != self._feedback_role:
                raise ValueError(f"openenv gym option feedback_role={self._feedback_role!r}: the server {self.url} "
                                 f"says its feedback role is {role!r}; leave the option out")  # fmt: skip
            self.feedback_role = role


def _serve_app(gym: OpenEnvGym) -> str:
    """Serve an installed OpenEnv environment's app on a loopback port, for as long as `gym`
    lives (or this process does); its address."""
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", gym.app, "--host", "127.0.0.1", "--port", "0",
                                "--log-level", "info"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)  # fmt: skip
    assert process.stderr is not None
    said = []
    for line in process.stderr:  # uvicorn names the port it bound once it serves
        said.append(line.rstrip())
        if found := re.search(r"running on (http://\S+)", line):
            break
    else:
        process.wait()
        raise ValueError(f"openenv gym option app={gym.app!r}: uvicorn could not serve it: "
                         f"{said[-1] if said else f'exit code {process.returncode}'}")  # fmt: skip
    threading.Thread(target=process.stderr.read, daemon=True).start()  # keep reading: a full pipe would stall it
    weakref.finalize(gym, _stop, process)
    return found[1]


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _action_field(url: str) -> str:
    """The action's one text field, from the server's /schema."""
    import requests

    schema_url = url.replace("ws://", "http://").replace("wss://", "https://") + "/schema"
    try:
        response = requests.get(schema_url, timeout=_CONNECT_TIMEOUT_S)
    except (requests.ConnectionError, requests.Timeout) as exc:
        errno = re.search(r"\[Errno -?\d+\] [^'\")]+", str(exc))
        raise ConnectionError(f"openenv server {url} cannot be reached ({errno[0] if errno else type(exc).__name__}): "
                              "is it running there? (harness serve prints its address)") from None  # fmt: skip
    try:
        response.raise_for_status()
        action = response.json()["action"]
        properties = action.get("properties", {})
    except (requests.RequestException, ValueError, KeyError, AttributeError, TypeError) as exc:
        raise ConnectionError(f"openenv server {url}: its /schema could not be read ({exc}); "
                              "name the action's text field with -o action_field=") from None  # fmt: skip
    texts = [name for name, p in properties.items() if name != "metadata" and p.get("type") == "string"]
    required = [name for name in texts if name in action.get("required", [])]
    if len(required or texts) != 1:
        raise ValueError(f"openenv server {url}: the action has text fields {texts or 'none'}; "
                         "name the one the answer goes in with -o action_field=")  # fmt: skip
    return (required or texts)[0]


def _read_tasks(path: Path) -> list[dict[str, Any]]:
    """The entries of a tasks file, each checked, with `id` and `candidates` filled in."""
    if path.stat().st_size > _MAX_TASKS_FILE_BYTES:
        raise ValueError(f"{path}: over {_MAX_TASKS_FILE_BYTES // 2**20} MiB; split it")
    entries, seen = [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("reset", {}), dict):
            raise ValueError(f"{where}: a task is an object with \"reset\": {{...}} (the reset arguments)")
        reset = entry.get("reset", {})
        task_id = entry.get("id", json.dumps(reset, sort_keys=True))
        if not isinstance(task_id, str) or task_id in seen:
            raise ValueError(f"{where}: id {task_id!r} is not a string or repeats an earlier line's")
        seen.add(task_id)
        entries.append({"id": task_id, "reset": reset, "candidates": _candidates(entry.get("candidates", []), where)})
    if not entries:
        raise ValueError(f"{path}: no tasks (one JSON object a line)")
    return entries


def _candidates(raw: Any, where: str) -> list[Candidate]:
    if not isinstance(raw, list):
        raise ValueError(f"{where}: candidates is a list of {{\"action\", \"expect\", \"label\"}} objects")
    found = []
    for c in raw:
        if not (isinstance(c, dict) and isinstance(c.get("action"), str) and c.get("expect") in _EXPECTS):
            raise ValueError(f"{where}: a candidate needs a string action and expect one of {', '.join(_EXPECTS)}")
        found.append(Candidate(c["action"], c["expect"], str(c.get("label", c["expect"])), c.get("stage")))
    return found


def tasks_file_lines(gym: Gym, split: str = "train") -> list[str]:
    """A heavygym gym's tasks as lines of a tasks file for a server that serves it
    (`harness serve --tasks-file`): reset by task id, with the gym's own candidates, drawn as the
    replay policy draws them, so a replay through the server gives the answers it gives in process.
    The candidates include the answer key: the file is for benchmarks, never for a model's eyes."""
    lines = []
    for task in gym.tasks(split):
        candidates = [{"action": c.action, "expect": c.expect, "label": c.label, **({"stage": c.stage} if c.stage else {})}
                      for c in gym.candidates(task, random.Random(task.id))]  # fmt: skip
        lines.append(json.dumps({"id": task.id, "reset": {"task_id": task.id}, "candidates": candidates}))
    return lines

