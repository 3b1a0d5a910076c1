"""What a simulation backend is asked and what it answers; `backend.py` picks the backend.

A backend compiles and simulates one Modelica source in the sandbox. It answers every
model-caused failure (compile error, unbalanced model, failed simulation, timeout) with a
`Simulation` whose status says so; it raises `BackendFault` only when it cannot do its job
at all (tool missing, sandbox broken), which the episode reports as an `error` outcome.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

import numpy as np

from gyms.sandbox import Workdir
from gyms.warm import WALL_PER_CPU

# The answer's file name as compilers report it in messages.
SOURCE_NAME = "answer.mo"
# CPU seconds a backend call may take beyond the simulation's own budget (start-up, compiling).
# rumoca: a per-call runner starts in ~0.15 s of CPU and compiles a heavy-suite model in under
# 0.1 s; OpenModelica runs omc and a C compiler.
COMPILE_ALLOWANCE_S = {"rumoca": 2.0, "openmodelica": 90.0}
BACKENDS = tuple(COMPILE_ALLOWANCE_S)

Status = Literal["ok", "compile-error", "unbalanced", "simulation-error", "timeout", "crash"]


class BackendFault(RuntimeError):
    """The backend could not run (a missing tool, a broken sandbox): an infrastructure error."""


@dataclass(frozen=True)
class SimRequest:
    """One compile-and-simulate call. Hashable: reference results are cached by request."""

    source: str
    model: str
    stop_time: float
    intervals: int  # simulated intervals: a dense grid, far finer than the task's output (compare.py)
    variables: tuple[str, ...]
    parameters: tuple[str, ...] = ()  # parameter values to report back (parameter fitting)
    overrides: tuple[tuple[str, float], ...] = ()  # parameter values to simulate with


class MalformedReply(ValueError):
    """A runner's reply is not what the protocol allows: never trusted, never partly used."""


@dataclass(frozen=True, eq=False)
class Simulation:
    status: Status
    message: str = ""
    time: np.ndarray = field(default_factory=lambda: np.zeros(0))
    values: Mapping[str, np.ndarray] = field(default_factory=dict)
    missing: tuple[str, ...] = ()  # requested variables the model does not have
    parameters: Mapping[str, float | None] = field(default_factory=dict)  # None: not a plain number
    names: tuple[str, ...] = ()  # the model's variables, for "did you mean" feedback
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    seconds: float = 0.0  # wall time of the backend call
    cpu_s: float | None = None  # CPU time of the backend call's processes, where measured

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_reply(cls, reply: Any, seconds: float, request: SimRequest) -> Simulation:
        """A runner's JSON reply (see runner.py), parsed strictly against the request.

        The runner lives in the sandbox: every field is type- and size-checked, only the
        requested variables and parameters are taken, and the trajectory must run from 0 to
        the stop time. Raises `MalformedReply` for anything the protocol does not allow.
        """
        if not isinstance(reply, Mapping) or reply.get("status") not in get_args(Status):
            raise MalformedReply(f"unknown status in {str(reply)[:200]}")
        status = reply["status"]
        message = _text(reply.get("message", ""), "message", MAX_MESSAGE_CHARS)
        if status != "ok":
            return cls(status, message, diagnostics=_diagnostics(reply.get("diagnostics", [])), seconds=seconds)
        time = _series(reply.get("time"), "time")
        if time.size == 0 or time[0] != 0.0 or np.any(np.diff(time) < 0):
            raise MalformedReply("the time axis must start at 0 and never go back")
        end = request.stop_time
        if time[-1] > end * (1 + _END_SLACK):
            raise MalformedReply(f"the time axis runs past the stop time, to {time[-1]!r}")
        if time[-1] < end * (1 - _END_SLACK):  # terminate() or a solver that gave up: the model's doing
            return cls("simulation-error", f"the simulation stopped at t={time[-1]:g}, before the stop time {end:g}"
                       + (f" ({message})" if message else ""), seconds=seconds)  # fmt: skip
        values = _mapping(reply.get("values", {}), "values", request.variables)
        series = {name: _series(v, name) for name, v in values.items()}
        if any(v.shape != time.shape for v in series.values()):
            raise MalformedReply("a variable has not one value per time point")
        parameters = _mapping(reply.get("parameters", {}), "parameters", request.parameters)
        if not all(v is None or _is_number(v) for v in parameters.values()):
            raise MalformedReply("a parameter value is neither a number nor null")
        names = reply.get("names", [])
        if not isinstance(names, list) or len(names) > MAX_NAMES or not all(isinstance(n, str) for n in names):
            raise MalformedReply("names must be a short list of strings")
        return cls(
            status="ok",
            time=time,
            values=series,
            missing=tuple(name for name in request.variables if name not in series),
            parameters={k: None if v is None else float(v) for k, v in parameters.items()},
            names=tuple(n[:MAX_NAME_CHARS] for n in names),
            seconds=seconds,
        )


# Caps on what a reply may hold: far above any real reply, far below what could hurt the host.
MAX_MESSAGE_CHARS = 20_000
MAX_POINTS = 500_000
MAX_NAMES = 200
MAX_NAME_CHARS = 200
_END_SLACK = 1e-9


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _text(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise MalformedReply(f"{what} is not a string")
    return value[:limit]


def _series(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, list) or len(value) > MAX_POINTS or not all(type(v) is float for v in value):
        raise MalformedReply(f"{what!r} is not a list of at most {MAX_POINTS} floats")
    array = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(array)):
        raise MalformedReply(f"{what!r} holds non-finite values")
    return array


def _mapping(value: Any, what: str, allowed: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not set(value) <= set(allowed):
        raise MalformedReply(f"{what} must be an object over the requested names only")
    return value


def _diagnostics(value: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, list):
        raise MalformedReply("diagnostics must be a list")
    found = []
    for item in value[:20]:
        if not isinstance(item, Mapping):
            raise MalformedReply("a diagnostic must be an object")
        found.append({"level": _text(item.get("level", ""), "level", 20),
                      "message": _text(item.get("message", ""), "message", 4000)})  # fmt: skip
    return tuple(found)


@dataclass(frozen=True)
class BackendConfig:
    """Everything that selects and tunes a backend; small and picklable (episodes carry it)."""

    kind: str = "rumoca"
    roots: tuple[str, ...] = ()  # library directories: the project's library first, then the user's
    sim_timeout_s: float = 3.0  # the simulation's own budget in CPU time; past it the model fails with a timeout
    warm: bool = True  # rumoca: one long-lived runner per worker process, else one process per call

    @property
    def call_cpu_s(self) -> float:
        """The CPU time one backend call may take: a busy machine does not eat into it."""
        return self.sim_timeout_s + COMPILE_ALLOWANCE_S[self.kind]

    @property
    def call_wall_s(self) -> float:
        """The wall-clock backstop of a call, for a process that sleeps or is starved of CPU."""
        return self.call_cpu_s * WALL_PER_CPU


class Backend(Protocol):
    needs_workdir: bool  # whether `simulate` wants the episode's work directory

    def simulate(self, request: SimRequest, workdir: Workdir | None) -> Simulation:
        """Simulate an answer: everything it produces is parsed strictly; a broken reply is a `crash`."""

    def simulate_reference(self, request: SimRequest) -> Simulation:
        """Simulate a task's own model in a process and work directory no answer ever reached."""

    def close(self) -> None: ...
