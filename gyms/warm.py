"""Long-lived checker processes in the sandbox, spoken to over their stdin and stdout.

Starting a checker (Python with sympy, a Lean environment) costs far more than one check, so
gyms keep one warm per worker process. `SandboxedPipe` holds what every such process needs:
start in a fresh sandbox work directory, non-blocking writes and reads against a deadline,
kill on timeout, stderr tail on a crash, clean-up. Subclasses choose the framing of a reply.

`WarmProcess` is the simple protocol: the program prints `{"ready": true}` once it is ready,
then answers every JSON line on stdin with one JSON line on stdout. A request that gets no
answer in time kills the process (the next request starts a fresh one): a stuck checker
never blocks the worker.

A request that checks an answer is limited in CPU time (`cpu_s`): what the checker's processes
(the sandbox's process tree) spend on it, read from /proc while the host waits for the reply. A
busy machine slows a checker down many times over but makes it spend little more CPU (up to
about 1.7 times as much here, where busy neighbours share its caches and cores), so a correct
answer passes under any load that leaves it that much headroom below its limit. Wall time
(`timeout_s`) backs the limit up, `WALL_PER_CPU` times as long, for a checker that sleeps or is
starved of CPU. Starting a checker is not the answer's work: its limit is wall time alone.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, NoReturn

from gyms import hostfs
from gyms.sandbox import Limits, Sandbox, Workdir, kill_group, kill_uid, processes_of

# Per-request time is bounded by the request timeout; the rlimit only stops a runaway process.
WARM_CPU_S = 24 * 3600
# The wall-clock backstop of a CPU-time limit, as a multiple of it: a request that needs its whole
# CPU budget still gets it while two other processes per core compete for the machine.
WALL_PER_CPU = 3.0
# While the host waits for a reply it reads the CPU used this often: a fortieth of the budget,
# so a request overruns its budget by little, but no more often than every 20 ms (a read scans
# /proc, ~2 ms) and at least every 0.25 s.
_CPU_READS_PER_BUDGET = 40
_CPU_READ_MIN_S = 0.02
_CPU_READ_MAX_S = 0.25
_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


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
        self.last_cpu_s: float | None = None  # CPU time the last request with a CPU budget took
        self._proc: subprocess.Popen[bytes] | None = None
        self._tree: list[int] = []  # the sandbox's processes, as last found
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
        self._tree = []

    def _exchange(self, request: bytes, wall_s: float, cpu_s: float | None = None) -> dict[str, Any]:
        """Send one encoded request and wait for its reply, within `wall_s` of wall time and, if
        given, `cpu_s` of CPU time spent by the sandbox's processes (then `last_cpu_s` says how much)."""
        assert self._proc is not None
        deadline = time.monotonic() + wall_s
        self.last_cpu_s = None
        clock = None if cpu_s is None else _CpuClock(self._processes(), self._tree, cpu_s)
        self._send(request, deadline)
        reply = self._receive(deadline, clock)
        if clock is not None:
            self.last_cpu_s = clock.spent_s()
            self._tree = clock.pids
        return reply

    def _processes(self) -> Callable[[], dict[int, float]]:
        """How to find the checker's processes and their CPU seconds: the tree below the process
        the host started, or under docker, where that process is only the `docker exec` client and
        the checker runs below the container's init, every process of the work directory's uid
        (its own, as root; without root the client's tree is all there is, and only the wall
        limit holds)."""
        assert self._proc is not None
        uid = self._workdir.uid if self._workdir is not None else None
        if self.sandbox.container is not None and uid is not None:
            return lambda: _uid_cpu(uid)
        root = self._proc.pid
        return lambda: _tree_cpu(root)

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

    def _receive(self, deadline: float, clock: _CpuClock | None = None) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while (reply := self._take_reply()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    # A busy machine starves it before its CPU budget is spent: say how far it got.
                    used = f", having spent {clock.spent_s():.2f} of its {clock.budget_s:g} s of CPU time" if clock else ""
                    self._timed_out(f"gave no answer in time{used}")
                if clock is not None and clock.over_budget():
                    self._timed_out(f"spent more than {clock.budget_s:g} s of CPU time on one request")
                if not sel.select(timeout=remaining if clock is None else min(remaining, clock.until_read())):
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

    def request(self, payload: Mapping[str, Any], timeout_s: float, cpu_s: float | None = None) -> dict[str, Any]:
        """The reply to one request, within `timeout_s` of wall time and, if given, `cpu_s` of CPU
        time (make `timeout_s` WALL_PER_CPU times that); past either the process is killed."""
        if not self.running:
            self._start()
        return self._exchange(json.dumps(payload).encode() + b"\n", timeout_s, cpu_s)

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


class _CpuClock:
    """The CPU time a process tree spends from now on, against a budget. While the host waits it
    is read at most every `_CPU_READ_*` interval, and each read finds the tree again, so processes
    the checker starts meanwhile count too (their whole lives: they were born during the request).
    A process's figure includes the children it has reaped."""

    def __init__(self, find: Callable[[], dict[int, float]], known: list[int], budget_s: float) -> None:
        self.find = find  # one scan: the tree's processes and their CPU seconds
        self.budget_s = budget_s
        # The tree found by the last request of this process: reading it costs far less than a scan.
        self.pids = known or list(find())
        self._start = _cpu_of(self.pids)
        self._interval = min(_CPU_READ_MAX_S, max(_CPU_READ_MIN_S, budget_s / _CPU_READS_PER_BUDGET))
        self._next_read = time.monotonic() + self._interval

    def until_read(self) -> float:
        return max(0.0, self._next_read - time.monotonic())

    def over_budget(self) -> bool:
        """Whether the tree has spent more than the budget, as of a read made now if one is due."""
        if time.monotonic() < self._next_read:
            return False
        self._next_read = time.monotonic() + self._interval
        return self._spent(self.find()) > self.budget_s

    def spent_s(self) -> float:
        """What the tree, as last found, has spent so far."""
        return self._spent(_cpu_of(self.pids))

    def _spent(self, now: dict[int, float]) -> float:
        self.pids = list(now)
        return sum(cpu - self._start.get(pid, 0.0) for pid, cpu in now.items())


def _tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds of `root` and of every process below it, by pid (one scan of /proc)."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            children.setdefault(stat[0], []).append(int(entry.name))
            cpu[int(entry.name)] = stat[1]
    tree: dict[int, float] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in cpu:
            tree[pid] = cpu[pid]
            todo += children.get(pid, [])
    return tree


def _uid_cpu(uid: int) -> dict[int, float]:
    """CPU seconds of every live process of host uid `uid`."""
    return _cpu_of(processes_of(uid))


def _cpu_of(pids: list[int]) -> dict[int, float]:
    """CPU seconds of each of `pids` that is still there."""
    return {pid: stat[1] for pid in pids if (stat := _stat(pid)) is not None}


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds: user and system time, its reaped children's included) from
    /proc/PID/stat; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # the name, in parentheses, may hold anything
    except OSError:
        return None
    return int(fields[1]), sum(int(ticks) for ticks in fields[11:15]) / _TICKS_PER_S
