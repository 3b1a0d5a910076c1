"""The rumoca backend: runner.py in the sandbox, warm (one per worker process) or one per call.

Warm is the default. Python start-up and the rumoca/numpy import cost about 100 ms per
sandboxed process, while compiling and simulating a task model takes 5-30 ms, so a warm
runner makes a step several times cheaper (measured figures: docs/gyms/modelica.md). Every
request still gets a fresh rumoca session, so one answer cannot leave classes behind for the
next. `warm=False` starts a fresh runner per call in the episode's own work directory, for
deployments that want no process shared between episodes. References (the answer key) are
simulated by a runner of their own (warm) or in a work directory of their own (per call).

A call's limit is CPU time (`BackendConfig.call_cpu_s`), measured by the host, with a wall-clock
backstop: the warm runner is killed when its processes spend more on one request (`gyms.warm`),
a per-call runner by its CPU rlimit. rumoca's own budget (`max_wall_seconds`) is not used: it
counts wall time, so on a busy machine it would stop a correct simulation.
"""

from __future__ import annotations

import atexit
import json
import math
import secrets
import sys
import time
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from gyms.base import ToolCheck
from gyms.modelica.simulation import (
    SOURCE_NAME,
    BackendConfig,
    BackendFault,
    MalformedReply,
    SimRequest,
    Simulation,
)
from gyms.sandbox import Limits, Sandbox, SandboxError, Workdir
from gyms.warm import WarmCrash, WarmProcess, WarmTimeout

RUNNER = Path(__file__).with_name("runner.py")
# Address space of the runner: rumoca maps ~300 MB for a small model; the rest is headroom.
MEMORY_MB = 2048
INSTALL_HINT = "pip install rumoca==0.10.2"
# A per-call runner's reply (dense trajectories: ~1 MB) fits; a cut reply is refused, not parsed.
REPLY_BYTES = 32 * 2**20
# How long a runner may take to exit when asked, before it is killed.
SHUTDOWN_S = 2.0


def rumoca_tool() -> ToolCheck:
    try:
        return ToolCheck("rumoca", True, version("rumoca"))
    except PackageNotFoundError:
        return ToolCheck("rumoca", False, install_hint=INSTALL_HINT)


class RumocaBackend:
    """Answers and references run in separate runners: the process that simulates a task's
    reference (the answer key) never receives an answer's text, and every reply is matched to
    its request by a random id and parsed strictly on the host."""

    def __init__(self, config: BackendConfig) -> None:
        if not rumoca_tool().available:
            raise BackendFault(f"rumoca is not installed in {sys.prefix}; {INSTALL_HINT}")
        self.config = config
        self.needs_workdir = not config.warm
        # Users' libraries, wherever they live, and the runner itself (docker mounts both read-only).
        self._sandbox = Sandbox(expose=[*self.config.roots, RUNNER])
        self._argv = [self._sandbox.python, "-I", str(RUNNER)]
        self._warm: WarmProcess | None = None
        self._reference_runner: WarmProcess | None = None
        if config.warm:
            self._warm = WarmProcess(self._argv, name="rumoca", memory_mb=MEMORY_MB, sandbox=self._sandbox)
            self._reference_runner = WarmProcess(
                self._argv, name="rumoca-reference", memory_mb=MEMORY_MB, sandbox=self._sandbox
            )
            atexit.register(self.close)

    def simulate(self, request: SimRequest, workdir: Workdir | None) -> Simulation:
        if self._warm is None and workdir is None:
            raise BackendFault("the per-call rumoca runner needs the episode's work directory")
        try:
            return self._call(request, self._warm, workdir)
        except MalformedReply as exc:
            if self._warm is not None:
                self._warm.close()  # whatever it holds back must not answer the next request
            return Simulation("crash", f"the runner's reply was rejected: {exc}")

    def simulate_reference(self, request: SimRequest) -> Simulation:
        try:
            if self._reference_runner is not None:
                return self._call(request, self._reference_runner, None)
            with self._sandbox.workdir(prefix="heavygym-modelica-ref-") as workdir:
                return self._call(request, None, workdir)
        except MalformedReply as exc:
            raise BackendFault(f"the reference runner answered outside its protocol: {exc}") from exc

    def close(self) -> None:
        for runner in (self._warm, self._reference_runner):
            if runner is not None:
                _shut_down(runner)

    def _call(self, request: SimRequest, warm: WarmProcess | None, workdir: Workdir | None) -> Simulation:
        payload = self._payload(request)
        started = time.monotonic()
        if warm is not None:
            reply, cpu_s = self._ask_warm(warm, payload)
        else:
            assert workdir is not None
            reply, cpu_s = self._ask_once(payload, workdir)
        if not isinstance(reply, dict):
            raise MalformedReply("a reply must be a JSON object")
        if reply.pop("id", None) != payload["id"]:
            raise MalformedReply("the reply does not carry this request's id")
        return replace(Simulation.from_reply(reply, time.monotonic() - started, request), cpu_s=cpu_s)

    def _payload(self, request: SimRequest) -> dict[str, Any]:
        return {
            "id": secrets.token_hex(16),
            "source": request.source,
            "filename": SOURCE_NAME,
            "model": request.model,
            "roots": list(self.config.roots),
            "stop_time": request.stop_time,
            "intervals": request.intervals,
            "variables": list(request.variables),
            "parameters": list(request.parameters),
            "overrides": dict(request.overrides),
        }

    def _ask_warm(self, warm: WarmProcess, payload: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
        """The runner's reply and the CPU time it took."""
        try:
            return warm.request(payload, self.config.call_wall_s, cpu_s=self.config.call_cpu_s), warm.last_cpu_s
        except WarmTimeout:
            return _timed_out(self.config, payload), None
        except WarmCrash as exc:
            # The episode tells a crash caused by the model from a broken runner (see episode.py).
            return {"id": payload["id"], "status": "crash", "message": _last_line(str(exc))}, None
        except SandboxError as exc:
            raise BackendFault(f"the sandbox could not start the rumoca runner: {exc}") from exc

    def _ask_once(self, payload: dict[str, Any], workdir: Workdir) -> tuple[dict[str, Any], float | None]:
        """The reply of a runner started for this call, and the CPU time it took."""
        cpu = math.ceil(self.config.call_cpu_s)  # an rlimit counts whole seconds
        limits = Limits(wall_s=self.config.call_wall_s, cpu_s=cpu, memory_mb=MEMORY_MB, output_bytes=REPLY_BYTES)
        try:
            result = self._sandbox.run(
                [*self._argv, "--once"], workdir, limits=limits, stdin=json.dumps(payload).encode()
            )
        except SandboxError as exc:
            raise BackendFault(f"the sandbox could not start the rumoca runner: {exc}") from exc
        if result.killed in ("timeout", "cpu-limit"):
            return _timed_out(self.config, payload), result.cpu_s
        lines = result.stdout.strip().splitlines()
        if result.returncode != 0 or not lines:
            why = result.killed or f"exit code {result.returncode}"
            message = f"the runner died ({why}): {_last_line(result.stderr)}"
            return {"id": payload["id"], "status": "crash", "message": message}, result.cpu_s
        if len(lines) != 1:
            raise MalformedReply(f"expected one reply line, got {len(lines)}")
        try:
            return json.loads(lines[0]), result.cpu_s
        except json.JSONDecodeError as exc:
            raise MalformedReply(f"the runner printed something that is not JSON: {lines[0][:200]!r}") from exc


def _shut_down(runner: WarmProcess) -> None:
    """Let a runner exit by itself before closing it: its sandbox then reaps it. Killed first,
    it would outlive its sandbox for a while as a zombie of whatever reaps orphans."""
    if runner.running:
        try:
            runner.request({"exit": True}, SHUTDOWN_S)
        except (WarmTimeout, WarmCrash, SandboxError):
            pass
        deadline = time.monotonic() + SHUTDOWN_S
        while runner.running and time.monotonic() < deadline:
            time.sleep(0.01)
    runner.close()


def _timed_out(config: BackendConfig, payload: dict[str, Any]) -> dict[str, Any]:
    message = (f"compiling and simulating took more than {config.call_cpu_s:g} s of CPU time "
               f"(or {config.call_wall_s:g} s of wall time)")  # fmt: skip
    return {"id": payload["id"], "status": "timeout", "message": message}


def _last_line(text: str) -> str:
    """The last informative line of a dying runner's output (Rust adds a `note:` on backtraces)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("note:")]
    return lines[-1][:300] if lines else "no message"
