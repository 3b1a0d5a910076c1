"""One attempt at a Modelica task: extract the model, simulate it, score it against the reference.

The reward is the fraction of checks passed: one per compared variable, one per scalar
requirement. A model that does not compile or simulate scores 0 and gets the compiler's
message back, with line numbers where they can be found. Only a backend that cannot run at
all (or a reference that does not simulate) is an `error`.

The answer key stays out of the answer's reach: references are simulated by the backend's
reference runner, which never sees an answer, and the comparison runs here, in the gym's
process, on replies parsed strictly (backend.py).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from gyms.base import Episode, Outcome, Task, Verdict
from gyms.modelica import compare
from gyms.modelica.backend import backend_for
from gyms.modelica.catalog import Setup
from gyms.modelica.extract import MAX_SOURCE_CHARS, defined_classes, extract_source
from gyms.modelica.feedback import describe_failure
from gyms.modelica.simulation import BackendConfig, BackendFault, SimRequest, Simulation
from gyms.sandbox import Sandbox, SandboxError, Workdir

RETRY = "\n\nFix the model and answer again with the complete model."
NO_MODEL = "No Modelica model found. Answer with the complete model in a ```modelica code block."

# Reference simulations per process, by backend configuration and request (LRU). An entry
# holds dense trajectories (~0.3 MB), hence the modest size.
_REFERENCES: OrderedDict[tuple[BackendConfig, SimRequest], Simulation] = OrderedDict()
_REFERENCE_CACHE_SIZE = 64


class ModelicaEpisode(Episode):
    """Holds its task, the backend configuration and (for some backends) a work directory path."""

    def __init__(self, task: Task, max_turns: int, config: BackendConfig) -> None:
        super().__init__(task, max_turns)
        self.config = config
        self.workdir: Workdir | None = None  # made on first need, in the worker process

    def evaluate(self, action: str) -> Verdict:
        retry = RETRY if self.turn < self.max_turns else ""
        setup = Setup.from_metadata(self.task.metadata)
        source = extract_source(action)
        if source is None:
            return Verdict(0.0, Outcome.FAIL, NO_MODEL, {"status": "no-model"})
        if len(source) > MAX_SOURCE_CHARS:
            why = f"The model is {len(source)} characters long; these tasks need far less (at most {MAX_SOURCE_CHARS})."
            return Verdict(0.0, Outcome.FAIL, why + retry, {"status": "too-long"})
        if setup.model not in defined_classes(source):
            found = ", ".join(defined_classes(source)) or "no class"
            why = f"The task asks for a model named `{setup.model}`; your answer defines {found}."
            return Verdict(0.0, Outcome.FAIL, why + retry, {"status": "wrong-name"})
        try:
            return self._score(source, setup, retry)
        except (BackendFault, SandboxError) as exc:
            return Verdict(0.0, Outcome.ERROR, "internal error: the Modelica backend failed", {"error": str(exc)})

    def close(self) -> None:
        if self.workdir is not None:
            self.workdir.cleanup()
            self.workdir = None

    def _score(self, source: str, setup: Setup, retry: str) -> Verdict:
        reference = self._reference(setup)
        candidate = self._simulate(_request(source, setup, parameters=setup.tune))
        info: dict[str, Any] = {"status": candidate.status, "timed_out": candidate.status == "timeout",
                                "backend": self.config.kind, "simulate_s": candidate.seconds,
                                "simulate_cpu_s": candidate.cpu_s}  # fmt: skip
        if candidate.status == "crash":
            self._reference(setup, fresh=True)  # raises if the backend itself is broken
        if not candidate.ok:
            feedback = describe_failure(candidate.status, candidate.message, source, candidate.diagnostics)
            return Verdict(0.0, Outcome.FAIL, feedback + retry, info)
        if setup.tune:
            tuned = self._tuned_reference(setup, candidate)
            if isinstance(tuned, str):
                return Verdict(0.0, Outcome.FAIL, tuned + retry, info)
            reference = tuned
        checks = _checks(setup, reference, candidate)
        passed = sum(c.passed for c in checks)
        info["checks"] = {c.name: c.passed for c in checks}
        lines = "\n".join(f"- {'ok' if c.passed else 'FAILED'}: {c.detail}" for c in checks)
        if passed == len(checks):
            return Verdict(1.0, Outcome.PASS, f"All {len(checks)} checks passed.\n{lines}", info)
        summary = f"{passed} of {len(checks)} checks passed (simulated to time {setup.stop_time:g}):\n{lines}"
        return Verdict(passed / len(checks), Outcome.FAIL, summary + retry, info)

    def _tuned_reference(self, setup: Setup, candidate: Simulation) -> Simulation | str:
        """The reference simulated with the answer's tuned parameters, or feedback on why not."""
        values = {name: candidate.parameters.get(name) for name in setup.tune}
        absent = [name for name, value in values.items() if value is None]
        if absent:
            wanted = "; ".join(f"parameter Real {name} = <number>;" for name in absent)
            return f"Declare the tuned parameter(s) at the top level of `{setup.model}` with plain numbers: {wanted}"
        overrides = tuple((name, float(value)) for name, value in values.items() if value is not None)
        return self._reference(setup, overrides=overrides)

    def _reference(self, setup: Setup, overrides: tuple[tuple[str, float], ...] = (), fresh: bool = False) -> Simulation:
        assert self.task.reference is not None, f"task {self.task.id} has no reference model"
        request = _request(self.task.reference, setup, overrides=overrides)
        key = (self.config, request)
        if fresh or key not in _REFERENCES:
            result = backend_for(self.config).simulate_reference(request)
            if not result.ok and not overrides:
                raise BackendFault(f"the reference of task {self.task.id} did not simulate: {result.status}: {result.message}")
            _REFERENCES[key] = result
            while len(_REFERENCES) > _REFERENCE_CACHE_SIZE:
                _REFERENCES.popitem(last=False)
        _REFERENCES.move_to_end(key)
        return _REFERENCES[key]

    def _simulate(self, request: SimRequest) -> Simulation:
        backend = backend_for(self.config)
        if backend.needs_workdir and self.workdir is None:
            self.workdir = Sandbox().workdir(prefix="heavygym-modelica-")
        return backend.simulate(request, self.workdir if backend.needs_workdir else None)


def _request(
    source: str, setup: Setup, parameters: tuple[str, ...] = (), overrides: tuple[tuple[str, float], ...] = ()
) -> SimRequest:
    intervals = compare.dense_intervals(setup.intervals)
    return SimRequest(source, setup.model, setup.stop_time, intervals, setup.simulated, parameters, overrides)


def _checks(setup: Setup, reference: Simulation, candidate: Simulation) -> list[compare.CheckOutcome]:
    points = compare.grid(setup.stop_time, compare.dense_intervals(setup.intervals))
    tolerance = compare.Tolerance(setup.rtol, setup.atol)
    checks = []
    for name in setup.variables:
        if name not in candidate.values:
            checks.append(compare.CheckOutcome(name, False, _missing(name, candidate)))
        elif not reference.ok:
            why = f"`{name}`: with your parameter values the expected model does not simulate ({reference.message})"
            checks.append(compare.CheckOutcome(name, False, why))
        else:
            checks.append(
                compare.match_trajectory(
                    name,
                    (reference.time, reference.values[name]),
                    (candidate.time, candidate.values[name]),
                    points,
                    tolerance,
                    setup.event_window,
                )
            )
    for requirement in setup.requirements:
        name = requirement["variable"]
        if name not in candidate.values:
            checks.append(compare.CheckOutcome(f"{requirement['kind']} of `{name}`", False, _missing(name, candidate)))
        else:
            checks.append(compare.check_requirement(requirement, candidate.time, candidate.values[name]))
    return checks


def _missing(name: str, candidate: Simulation) -> str:
    listed = ", ".join(candidate.names[:20]) + (", ..." if len(candidate.names) > 20 else "")
    return f"`{name}` is not a variable of your model; name it exactly `{name}` (your model has: {listed or 'none'})"
