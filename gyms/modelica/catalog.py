"""The task catalog: one TOML file per task, read and checked. Two suites: `core` (the files in
gyms/modelica/tasks/) and `heavy` (gyms/modelica/tasks/heavy/: models with 50 to 400 states or
many events, whose check costs real simulation work; ids `heavy/<name>`).

A task file holds the spec in words, the reference model, the simulation set-up, the checks
and the realistic wrong variants (see docs/gyms/modelica.md, "Task format"). Loading checks
everything that can be checked without simulating: unknown keys (typos), the model name,
that every mutation edits the reference at exactly one place. Simulating the reference and
failing the mutations is the conformance check's job.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gyms.base import Task
from gyms.modelica import library
from gyms.modelica.extract import defined_classes

TASK_DIR = Path(__file__).with_name("tasks")  # with the reference models: an answer key
HEAVY_DIR = TASK_DIR / "heavy"
SUITES = {"core": TASK_DIR, "heavy": HEAVY_DIR}
SPLITS = ("train", "test")
# Default width, as a fraction of the stop time, of the window around a reference event.
EVENT_WINDOW_FRACTION = 1e-4
# Mutation labels whose candidate never finishes (a `timeout` candidate); the rest must fail.
TIMEOUT_LABELS = ("never-ends",)

_REQUIREMENT_KEYS = {
    "overshoot": {"target", "max"},
    "settling_time": {"target", "max"},
    "final_value": {"target", "tolerance"},
    "peak": {"max"},
}
_OPTIONAL_REQUIREMENT_KEYS = {"kind", "variable", "from_time", "band"}
_TASK_KEYS = {
    "id", "split", "model", "spec", "uses", "stop_time", "intervals", "variables", "rtol", "atol",
    "event_window", "tune", "reference", "equivalent", "requirements", "mutations",
}  # fmt: skip


class TaskFileError(ValueError):
    """A task file is malformed; the message names the file and the fix."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"task file {path}: {why}")


@dataclass(frozen=True)
class Setup:
    """What an episode needs to score an answer; travels in `Task.metadata` as a plain dict."""

    model: str
    stop_time: float
    intervals: int
    variables: tuple[str, ...]
    rtol: float = 1e-3
    atol: float = 1e-9
    event_window: float = 0.0
    requirements: tuple[Mapping[str, Any], ...] = ()
    tune: tuple[str, ...] = ()  # parameters the answer chooses (parameter-fitting tasks)

    @property
    def simulated(self) -> tuple[str, ...]:
        """Every variable the checks read: the compared ones and those with requirements."""
        extra = [r["variable"] for r in self.requirements if r["variable"] not in self.variables]
        return self.variables + tuple(dict.fromkeys(extra))

    def to_metadata(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> Setup:
        fields = {k: metadata[k] for k in cls.__dataclass_fields__ if k in metadata}
        for key in ("variables", "requirements", "tune"):
            if key in fields:
                fields[key] = tuple(fields[key])
        return cls(**fields)


@dataclass(frozen=True)
class TaskSpec:
    id: str
    split: str
    spec: str
    setup: Setup
    reference: str
    uses: tuple[str, ...] = ()  # HeavyLib packages the prompt documents
    equivalent: str | None = None  # a differently written correct model: must pass too
    mutations: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # label: (old, new)

    def task(self) -> Task:
        return Task(self.id, prompt(self), self.reference, self.setup.to_metadata(), self.split)


def load_task_file(path: Path) -> TaskSpec:
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(path, f"not valid TOML: {exc}") from None
    unknown = set(raw) - _TASK_KEYS
    if unknown:
        raise TaskFileError(path, f"unknown key(s) {', '.join(sorted(unknown))}; the keys are {', '.join(sorted(_TASK_KEYS))}")
    try:
        setup = Setup(
            model=str(raw["model"]),
            stop_time=float(raw["stop_time"]),
            intervals=int(raw["intervals"]),
            variables=tuple(raw["variables"]),
            rtol=float(raw.get("rtol", 1e-3)),
            atol=float(raw.get("atol", 1e-9)),
            event_window=float(raw.get("event_window", EVENT_WINDOW_FRACTION * float(raw["stop_time"]))),
            requirements=tuple(_requirement(path, r) for r in raw.get("requirements", [])),
            tune=tuple(raw.get("tune", ())),
        )
        spec = TaskSpec(
            id=str(raw["id"]),
            split=str(raw.get("split", "train")),
            spec=str(raw["spec"]).strip(),
            setup=setup,
            reference=str(raw["reference"]).strip() + "\n",
            uses=tuple(raw.get("uses", ())),
            equivalent=str(raw["equivalent"]).strip() + "\n" if "equivalent" in raw else None,
            mutations={str(k): _mutation(path, k, v) for k, v in raw.get("mutations", {}).items()},
        )
    except KeyError as exc:
        raise TaskFileError(path, f"missing key {exc}") from None
    _validate(path, spec)
    return spec


def _requirement(path: Path, raw: Mapping[str, Any]) -> Mapping[str, Any]:
    kind = raw.get("kind")
    if kind not in _REQUIREMENT_KEYS:
        raise TaskFileError(path, f"requirement kind {kind!r} is not one of {', '.join(_REQUIREMENT_KEYS)}")
    needed = _REQUIREMENT_KEYS[kind] | {"variable"}
    missing, unknown = needed - set(raw), set(raw) - needed - _OPTIONAL_REQUIREMENT_KEYS
    if missing or unknown:
        raise TaskFileError(path, f"a {kind} requirement needs {', '.join(sorted(needed))}; got {', '.join(sorted(raw))}")
    return dict(raw)


def _mutation(path: Path, label: str, value: Any) -> tuple[str, str]:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise TaskFileError(path, f"mutation {label!r} must be [\"text in the reference\", \"replacement\"]")
    return value[0], value[1]


def _validate(path: Path, spec: TaskSpec) -> None:
    if spec.split not in SPLITS:
        raise TaskFileError(path, f"split {spec.split!r} is not one of {', '.join(SPLITS)}")
    if spec.setup.stop_time <= 0 or spec.setup.intervals < 1:
        raise TaskFileError(path, "stop_time must be positive and intervals at least 1")
    for name, source in (("reference", spec.reference), ("equivalent", spec.equivalent)):
        if source is not None and spec.setup.model not in defined_classes(source):
            raise TaskFileError(path, f"the {name} does not define model {spec.setup.model}")
    for label, (old, _) in spec.mutations.items():
        count = spec.reference.count(old)
        if count != 1:
            raise TaskFileError(path, f"mutation {label!r}: {old!r} occurs {count} times in the reference, not once")
    for name in spec.setup.tune:
        if not re.search(rf"parameter\s+Real\s+{re.escape(name)}\s*=", spec.reference):
            raise TaskFileError(path, f"tuned parameter {name!r} is not declared as `parameter Real {name} = ...`")
    try:
        library.summary(spec.uses)
    except ValueError as exc:
        raise TaskFileError(path, str(exc)) from None


@functools.cache
def load_catalog(directory: Path = TASK_DIR) -> tuple[TaskSpec, ...]:
    specs = tuple(load_task_file(path) for path in sorted(directory.glob("*.toml")))
    ids = [s.id for s in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise TaskFileError(directory, f"duplicate task id(s) {', '.join(duplicates)}")
    return specs


def suite_catalog(suite: str) -> tuple[TaskSpec, ...]:
    """The tasks of a suite: `core` (quick checks, the default) or `heavy` (real simulation work)."""
    if suite not in SUITES:
        raise ValueError(f"modelica gym option suite={suite!r}: use one of {', '.join(SUITES)}")
    specs = load_catalog(SUITES[suite])
    if not specs:  # e.g. a wheel built without tasks/heavy/*.toml in its package data
        raise TaskFileError(SUITES[suite], f"the {suite} suite has no task files (*.toml) here")
    if suite != "core":
        stray = [s.id for s in specs if not s.id.startswith(f"{suite}/")]
        if stray:
            raise TaskFileError(SUITES[suite], f"task id(s) {', '.join(stray)} must start with {suite}/")
    return specs


def prompt(spec: TaskSpec) -> str:
    setup = spec.setup
    step = setup.stop_time / setup.intervals
    names = ", ".join(f"`{v}`" for v in setup.variables)
    against = "a reference model that uses your parameter values" if setup.tune else "a reference solution"
    parts = [
        spec.spec,
        f"Write a Modelica model named `{setup.model}`. The checker simulates it from time 0 to "
        f"{setup.stop_time:g} (output interval {step:g}) and compares {names} with {against} "
        f"(relative tolerance {setup.rtol:g}).",
    ]
    if setup.tune:
        tuned = ", ".join(f"`parameter Real {name} = <value>;`" for name in setup.tune)
        parts.append(f"Choose the value of {tuned} at the top level of the model; write it as a plain number.")
    if setup.requirements:
        parts.append("Requirements, checked on your simulation:\n" + "\n".join(f"- {describe(r)}" for r in setup.requirements))
    if spec.uses:
        parts.append(
            f"The component library {library.LIBRARY_NAME} is loaded: use its classes by full name "
            f"(`{library.LIBRARY_NAME}.Electrical.Resistor`) or import them. Its interface (declarations only; "
            f"flows are positive into a component):\n{library.summary(spec.uses)}"
        )
    parts.append("Answer with the complete model in one ```modelica code block.")
    return "\n\n".join(parts)


def describe(requirement: Mapping[str, Any]) -> str:
    """A requirement in words, for prompts."""
    var, kind = f"`{requirement['variable']}`", requirement["kind"]
    since = f" (measured from time {requirement['from_time']:g})" if requirement.get("from_time") else ""
    if kind == "overshoot":
        return f"{var} overshoots its final value {requirement['target']:g} by at most {requirement['max']:.0%}{since}"
    if kind == "settling_time":
        band = requirement.get("band", 0.02)
        return f"{var} settles within {band:.0%} of {requirement['target']:g} after at most {requirement['max']:g} time units{since}"
    if kind == "final_value":
        return f"{var} ends at {requirement['target']:g} ± {requirement['tolerance']:g}"
    return f"|{var}| never exceeds {requirement['max']:g}{since}"
