"""A long-lived checker process in the sandbox, spoken to in JSON lines.

Starting a checker (Python with sympy, a Lean environment) costs far more than one check, so
gyms keep one warm per worker process. The program must print `{"ready": true}` once it is
ready, then answer every JSON line on stdin with one JSON line on stdout. A request that
gets no answer in time kills the process (the next request starts a fresh one): a stuck
checker never blocks the worker.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gyms.sandbox import Limits, Sandbox, Workdir, kill_group, kill_uid

# Per-request time is bounded by the request timeout; the rlimit only stops a runaway process.
_WARM_CPU_S = 24 * 3600


class WarmTimeout(TimeoutError):
    """The checker did not answer in time; it was killed."""


class WarmCrash(RuntimeError):
    """The checker died, failed to start, or answered with something that is not JSON."""


class WarmProcess:
    def __init__(
        self,
        argv: Sequence[str],
        name: str,
        *,
        memory_mb: int | None = 1024,
        start_timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.argv = list(argv)
        self.name = name
        self.start_timeout_s = start_timeout_s
        self.env = dict(env or {})
        self.sandbox = sandbox or Sandbox()
        self.limits = Limits(cpu_s=_WARM_CPU_S, memory_mb=memory_mb, wall_s=float("inf"))
        self.starts = 0  # how many processes were started, restarts included
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Workdir | None = None
        self._buffer = b""

    def request(self, payload: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        deadline = time.monotonic() + timeout_s
        self._send(json.dumps(payload).encode() + b"\n", deadline)
        return self._read_reply(deadline)

    def _send(self, data: bytes, deadline: float) -> None:
        # Non-blocking writes: a stuck checker with a full pipe must not block us.
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        os.set_blocking(fd, False)
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_WRITE)
            while data:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.close()
                    raise WarmTimeout(f"{self.name} checker stopped reading its input; it was restarted")
                if not sel.select(timeout=remaining):
                    continue
                try:
                    data = data[os.write(fd, data) :]
                except BrokenPipeError:
                    self._crashed("the process exited")

    def _start(self) -> None:
        self.close()
        self._workdir = self.sandbox.workdir(prefix=f"heavygym-{self.name}-")
        stderr = open(self._workdir.path / ".stderr", "wb")  # a file: stderr can never block it
        try:
            self._proc = self.sandbox.popen(
                self.argv,
                self._workdir,
                limits=self.limits,
                env=self.env,
                stdin=subprocess.PIPE,
                stderr=stderr,
            )
        finally:
            stderr.close()
        self.starts += 1
        self._buffer = b""
        try:
            ready = self._read_reply(time.monotonic() + self.start_timeout_s)
        except WarmTimeout as exc:
            raise WarmCrash(f"{self.name} checker did not start within {self.start_timeout_s:.0f} s") from exc
        if ready != {"ready": True}:
            self._crashed(f"expected {{'ready': true}} first, got {ready!r}")

    def _read_reply(self, deadline: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.close()
                    raise WarmTimeout(f"{self.name} checker gave no answer in time; it was restarted")
                if not sel.select(timeout=remaining):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    self._crashed("the process exited")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            self._crashed(f"unreadable reply {line[:200]!r}")
        if not isinstance(reply, dict):
            self._crashed(f"a reply must be a JSON object, got {line[:200]!r}")
        return reply

    def _crashed(self, why: str) -> None:
        stderr_tail = ""
        if self._workdir is not None:
            try:
                stderr_tail = (self._workdir.path / ".stderr").read_text(errors="replace")[-2000:]
            except OSError:
                pass
        self.close()
        raise WarmCrash(f"{self.name} checker failed: {why}" + (f"\n{stderr_tail}" if stderr_tail else ""))

    def close(self) -> None:
        if self._proc is not None:
            kill_group(self._proc)
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
            self._proc = None
        if self._workdir is not None:
            if self._workdir.uid is not None:
                kill_uid(self._workdir.uid)
            self._workdir.cleanup()
            self._workdir = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass
