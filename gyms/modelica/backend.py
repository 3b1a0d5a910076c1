"""What a simulation backend is asked and what it answers, and which backend a process uses.

A backend compiles and simulates one Modelica source in the sandbox. It answers every
model-caused failure (compile error, unbalanced model, failed simulation, timeout) with a
`Simulation` whose status says so; it raises `BackendFault` only when it cannot do its job
at all (tool missing, sandbox broken), which the episode reports as an `error` outcome.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from gyms.base import ToolCheck
from gyms.sandbox import Workdir

# The answer's file name as compilers report it in messages.
SOURCE_NAME = "answer.mo"
# Seconds a backend call may take beyond the simulation's own budget (start-up, compiling).
COMPILE_ALLOWANCE_S = {"rumoca": 5.0, "openmodelica": 90.0}
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
    intervals: int
    variables: tuple[str, ...]
    parameters: tuple[str, ...] = ()  # parameter values to report back (parameter fitting)
    overrides: tuple[tuple[str, float], ...] = ()  # parameter values to simulate with


@dataclass(frozen=True)
class Simulation:
    status: Status
    message: str = ""
    time: Sequence[float] = ()
    values: Mapping[str, Sequence[float]] = field(default_factory=dict)
    missing: tuple[str, ...] = ()  # requested variables the model does not have
    parameters: Mapping[str, float | None] = field(default_factory=dict)  # None: not a plain number
    names: tuple[str, ...] = ()  # the model's variables, for "did you mean" feedback
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    seconds: float = 0.0  # wall time of the backend call

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any], seconds: float) -> Simulation:
        """A runner's JSON reply (see runner.py) as a Simulation."""
        if reply.get("status") not in get_args(Status):
            raise BackendFault(f"the simulation runner answered with an unknown status: {str(reply)[:300]}")
        return cls(
            status=reply["status"],
            message=reply.get("message", ""),
            time=reply.get("time", ()),
            values=reply.get("values", {}),
            missing=tuple(reply.get("missing", ())),
            parameters=reply.get("parameters", {}),
            names=tuple(reply.get("names", ())),
            diagnostics=tuple(reply.get("diagnostics", ())),
            seconds=seconds,
        )


@dataclass(frozen=True)
class BackendConfig:
    """Everything that selects and tunes a backend; small and picklable (episodes carry it)."""

    kind: str = "rumoca"
    roots: tuple[str, ...] = ()  # library directories: the project's library first, then the user's
    sim_timeout_s: float = 3.0  # the simulation's own budget; past it the model fails with a timeout
    warm: bool = True  # rumoca: one long-lived runner per worker process, else one process per call

    @property
    def call_timeout_s(self) -> float:
        return self.sim_timeout_s + COMPILE_ALLOWANCE_S[self.kind]


class Backend(Protocol):
    needs_workdir: bool  # whether `simulate` wants the episode's work directory

    def simulate(self, request: SimRequest, workdir: Workdir | None) -> Simulation: ...

    def close(self) -> None: ...


# One backend per configuration and process: a warm runner must not cross a fork.
_backends: dict[tuple[int, BackendConfig], Backend] = {}


def backend_for(config: BackendConfig) -> Backend:
    key = (os.getpid(), config)
    if key not in _backends:
        if config.kind == "rumoca":
            from gyms.modelica.rumoca_backend import RumocaBackend

            _backends[key] = RumocaBackend(config)
        elif config.kind == "openmodelica":
            from gyms.modelica.openmodelica import OpenModelicaBackend

            _backends[key] = OpenModelicaBackend(config)
        else:
            raise ValueError(f"unknown Modelica backend {config.kind!r}; use one of {', '.join(BACKENDS)}")
    return _backends[key]


def tool_checks(kind: str) -> list[ToolCheck]:
    """Availability of the tools the chosen backend runs, without starting anything."""
    if kind == "rumoca":
        from gyms.modelica.rumoca_backend import rumoca_tool

        return [rumoca_tool()]
    from gyms.modelica.openmodelica import omc_tool

    return [omc_tool()]
