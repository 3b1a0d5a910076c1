"""Long-lived checker processes in the sandbox, spoken to over their stdin and stdout.

Starting a checker (Python with sympy, a Lean environment) costs far more than one check, so
gyms keep one warm per worker process. `SandboxedPipe` holds what every such process needs:
start in a fresh sandbox work directory, non-blocking writes and reads against a deadline,
kill on timeout, stderr tail on a crash, clean-up. Subclasses choose the framing of a reply.

`WarmProcess` is the simple protocol: the program prints `{"ready": true}` once it is ready,
then answers every JSON line on stdin with one JSON line on stdout. A request that gets no
answer in time kills the process (the next request starts a fresh one): a stuck checker
never blocks the worker.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any, NoReturn

from gyms import hostfs
from gyms.sandbox import Limits, Sandbox, Workdir, kill_group, kill_uid

# Per-request time is bounded by the request timeout; the rlimit only stops a runaway process.
WARM_CPU_S = 24 * 3600


class WarmTimeout(TimeoutError):
    """The checker did not answer in time; it was killed."""


class WarmCrash(RuntimeError):
    """The checker died, failed to start, or answered with something outside its protocol."""


class SandboxedPipe:
    """A sandboxed process with pipes; subclasses define `_take_reply` (the framing).

    `files` are written into the work directory before the start (a checker's own source,
    for instance), so the sandbox never needs to read the project tree.
    """

    def __init__(
        self,
        argv: Sequence[str],
        name: str,
        limits: Limits,
        *,
        env: Mapping[str, str] | None = None,
        files: Mapping[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.argv = list(argv)
        self.name = name
        self.limits = limits
        self.env = dict(env or {})
        self.files = dict(files or {})
        self.sandbox = sandbox or Sandbox()
        self.starts = 0  # how many processes were started, restarts included
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Workdir | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""

    @property
    def pid(self) -> int | None:
        """The process that runs the sandbox (the checker is among its descendants)."""
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _launch(self) -> None:
        self.close()
        self._workdir = self.sandbox.workdir(prefix=f"heavygym-{self.name}-")
        for relative, text in self.files.items():
            hostfs.write_file(self._workdir.path, relative, text)
        # A file, so stderr can never block the checker. The host keeps its own descriptor and
        # reads the tail through it: whatever the sandbox later puts at that path is never read.
        self._stderr = open(self._workdir.path / ".stderr", "w+b")
        self._proc = self.sandbox.popen(
            self.argv, self._workdir, limits=self.limits, env=self.env, stdin=subprocess.PIPE, stderr=self._stderr
        )
        self.starts += 1
        self._buffer = b""

    def _exchange(self, request: bytes, timeout_s: float) -> dict[str, Any]:
        """Send one encoded request and wait for its reply, all within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        self._send(request, deadline)
        return self._receive(deadline)

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
                    self._timed_out("stopped reading its input")
                if not sel.select(timeout=remaining):
                    continue
                try:
                    data = data[os.write(fd, data) :]
                except BrokenPipeError:
                    self._crashed("the process exited")

    def _receive(self, deadline: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while (reply := self._take_reply()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._timed_out("gave no answer in time")
                if not sel.select(timeout=remaining):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    self._crashed("the process exited")
                self._buffer += chunk
        return reply

    def _read_available(self) -> bool:
        """Add whatever output is readable right now to `self._buffer`, without waiting;
        whether the buffer holds anything (a reply nobody asked for, for instance)."""
        if self._proc is not None and self._proc.stdout is not None:
            fd = self._proc.stdout.fileno()
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                while sel.select(timeout=0):
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break  # the process exited; the next exchange reports it
                    self._buffer += chunk
        return bool(self._buffer)

    def _take_reply(self) -> dict[str, Any] | None:
        """Remove one complete reply from `self._buffer` and return it; None if none is complete."""
        raise NotImplementedError

    def _timed_out(self, what: str) -> NoReturn:
        self.close()
        raise WarmTimeout(f"{self.name} checker {what}; it was killed")

    def _crashed(self, why: str) -> NoReturn:
        tail = ""
        if self._stderr is not None:
            size = os.fstat(self._stderr.fileno()).st_size
            tail = os.pread(self._stderr.fileno(), 2000, max(0, size - 2000)).decode(errors="replace")
        self.close()
        raise WarmCrash(f"{self.name} checker failed: {why}" + (f"\nits stderr ends with:\n{tail}" if tail else ""))

    def close(self) -> None:
        if self._proc is not None:
            # The checker runs in a session of its own under the sandbox uid: kill it before its
            # launcher, or it outlives the launcher as an orphan for a moment.
            if self._workdir is not None and self._workdir.uid is not None:
                kill_uid(self._workdir.uid)
            kill_group(self._proc)
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
            self._proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass


class WarmProcess(SandboxedPipe):
    """A checker speaking one JSON object per line, started lazily and restarted after a failure."""

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
        limits = Limits(cpu_s=WARM_CPU_S, memory_mb=memory_mb, wall_s=float("inf"))
        super().__init__(argv, name, limits, env=env, sandbox=sandbox)
        self.start_timeout_s = start_timeout_s

    def request(self, payload: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        if not self.running:
            self._start()
        return self._exchange(json.dumps(payload).encode() + b"\n", timeout_s)

    def _start(self) -> None:
        self._launch()
        try:
            ready = self._receive(time.monotonic() + self.start_timeout_s)
        except WarmTimeout as exc:
            raise WarmCrash(f"{self.name} checker did not start within {self.start_timeout_s:.0f} s") from exc
        if ready != {"ready": True}:
            self._crashed(f"expected {{'ready': true}} first, got {ready!r}")

    def _take_reply(self) -> dict[str, Any] | None:
        if b"\n" not in self._buffer:
            return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            self._crashed(f"unreadable reply {line[:200]!r}")
        if not isinstance(reply, dict):
            self._crashed(f"a reply must be a JSON object, got {line[:200]!r}")
        return reply
