"""Run one function on untrusted input under CPU-time and memory limits, in a forked child.

Some checks parse an answer on the host with a library whose cost is not linear in the text
(pyslang elaborates constant functions and parameters: a few KB can take minutes and gigabytes).
`call_limited(fn, *args)` forks, sets RLIMIT_CPU and RLIMIT_AS in the child, runs `fn` there and
sends its result back pickled, so the calling process (a gym worker) never grows or stalls
because of an answer. The child starts with the parent's memory (copy on write), so the fork
costs a few milliseconds and needs no imports; the memory limit is counted on top of the
parent's address space at the fork. A wall-clock deadline backs the CPU limit up, for a child
that sleeps or is starved on a loaded machine.

The child runs `fn` alone and exits without running the parent's clean-up (`os._exit`), so it
touches nothing the parent's other threads might hold beyond the allocator and the pickler.
"""

from __future__ import annotations

import math
import os
import pickle
import resource
import select
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any, Literal, TypeVar

T = TypeVar("T")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_READ_CHUNK = 1 << 16


class LimitExceeded(Exception):
    """The function ran out of its CPU time (`cpu`, the wall-clock backstop included) or memory."""

    def __init__(self, kind: Literal["cpu", "memory"], detail: str) -> None:
        super().__init__(f"{kind} limit: {detail}")
        self.kind = kind


class ChildRaised(RuntimeError):
    """The function raised in the child; the message carries its exception and where it was raised."""


def call_limited(fn: Callable[..., T], *args: Any, cpu_s: float, memory_mb: int, wall_s: float) -> T:
    """`fn(*args)` run in a forked child with `cpu_s` of CPU time and `memory_mb` of address space
    beyond the caller's. Raises `LimitExceeded` past either limit or past `wall_s`, and
    `ChildRaised` when `fn` raised. `fn`'s result must pickle."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(write_end, fn, args, cpu_s, memory_mb)
    os.close(write_end)
    try:
        data, finished = _read_until(read_end, time.monotonic() + wall_s)
    finally:
        os.close(read_end)
    if not finished:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not finished:
        raise LimitExceeded("cpu", f"no result within the {wall_s:g} s wall-clock backstop")
    return _result(data, status, cpu_s)


def _child(out: int, fn: Callable[..., Any], args: tuple[Any, ...], cpu_s: float, memory_mb: int) -> None:
    status = 0
    try:
        cpu = math.ceil(cpu_s)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU, then SIGKILL a second later
        space = _address_space() + memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (space, space))
        try:
            reply: tuple[str, Any] = ("ok", fn(*args))
        except MemoryError:
            reply = ("memory", "the allocation failed")
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            place = traceback.extract_tb(exc.__traceback__)[-1]
            reply = ("raised", f"{type(exc).__name__}: {str(exc)[:500]} (at {place.filename}:{place.lineno})")
        data = pickle.dumps(reply)
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
    except BaseException:  # noqa: BLE001 - the parent reads a broken pipe as a crash
        status = 1
    finally:
        os._exit(status)


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * _PAGE


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything written to `fd` until its writer closed it (True) or the deadline (False)."""
    chunks = []
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False


def _result(data: bytes, status: int, cpu_s: float) -> Any:
    code = os.waitstatus_to_exitcode(status)
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        raise LimitExceeded("cpu", f"used its {math.ceil(cpu_s)} s of CPU time")
    if code < 0 or not data:  # an allocation the library could not survive (abort, segfault)
        raise LimitExceeded("memory", f"the child ended with exit code {code} and no result")
    kind, value = pickle.loads(data)  # noqa: S301 - written by our own child, from our own objects
    if kind == "memory":
        raise LimitExceeded("memory", value)
    if kind == "raised":
        raise ChildRaised(value)
    return value
