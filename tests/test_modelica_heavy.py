"""The modelica gym's heavy suite (`-o suite=heavy`, gyms/modelica/tasks/heavy/): the option
is checked, every task is big (states counted by rumoca from the reference, events counted in
the reference's simulated trajectory from the sandboxed runner), the task files are hidden
from the sandbox, and (through the installed command) the conformance check passes on the
first two tasks."""

from __future__ import annotations

import json
import math
import re

import pytest
import rumoca
from conftest import harness

from gyms.modelica import ModelicaGym
from gyms.modelica.backend import backend_for
from gyms.modelica.catalog import HEAVY_DIR, SUITES, TASK_DIR, TIMEOUT_LABELS, load_catalog, suite_catalog
from gyms.modelica.compare import event_times, grid
from gyms.modelica.simulation import SimRequest
from gyms.warm import WALL_PER_CPU

# What makes a task heavy: this many continuous states, or this many events in the reference run.
MIN_STATES = 50
MIN_EVENTS = 100


@pytest.fixture(scope="module")
def heavy() -> ModelicaGym:
    return ModelicaGym(suite="heavy")


def states(source: str, model: str) -> int:
    """The continuous states of a model, as rumoca's compiler counts them (array sizes multiplied out)."""
    compiled = rumoca.Session().loads(source, model=model, filename="reference.mo")
    return sum(math.prod(variable.dims) for variable in compiled.states)


def test_the_suite_option_selects_the_heavy_tasks(heavy: ModelicaGym) -> None:
    tasks = heavy.tasks("train") + heavy.tasks("test")
    assert len(tasks) == len(suite_catalog("heavy")) >= 12
    assert len(heavy.tasks("train")) >= 12  # `harness gyms profile` measures the train split
    assert all(t.id.startswith("heavy/") for t in tasks)
    assert heavy.describe()["suite"] == "heavy"
    assert heavy.config.sim_timeout_s == 20.0 and heavy.step_timeout_s == 3 * (20.0 + 2.0) * WALL_PER_CPU
    assert ModelicaGym(suite="heavy", sim_timeout_s="30").config.sim_timeout_s == 30.0
    core = ModelicaGym()  # the default is still the core suite, with its own budget
    assert core.describe()["suite"] == "core" and core.config.sim_timeout_s == 3.0
    assert not any(t.id.startswith("heavy/") for t in core.tasks("train") + core.tasks("test"))
    assert suite_catalog("core") == load_catalog()
    assert SUITES == {"core": TASK_DIR, "heavy": HEAVY_DIR} and HEAVY_DIR.parent == TASK_DIR


@pytest.mark.parametrize("bad", ["bogus", "Heavy2", ""])
def test_an_unknown_suite_is_one_clear_error_naming_both(bad: str) -> None:
    with pytest.raises(ValueError) as raised:
        ModelicaGym(suite=bad)
    message = str(raised.value)
    assert message == f"modelica gym option suite={bad!r}: use one of core, heavy"
    with pytest.raises(ValueError, match=re.escape(f"suite={bad!r}: use one of core, heavy")):
        suite_catalog(bad)


def test_every_heavy_task_has_many_states_or_many_events(heavy: ModelicaGym) -> None:
    backend = backend_for(heavy.config)
    counted = {}
    for spec in suite_catalog("heavy"):
        n = states(spec.reference, spec.setup.model)
        events = 0
        if n < MIN_STATES:  # then it must be a hybrid model with many events over its horizon
            intervals = spec.setup.intervals
            request = SimRequest(spec.reference, spec.setup.model, spec.setup.stop_time, intervals, spec.setup.variables)
            result = backend.simulate_reference(request)
            assert result.ok, (spec.id, result.message)
            events = len(event_times(result.time, grid(spec.setup.stop_time, intervals)))
        counted[spec.id] = (n, events)
        assert n >= MIN_STATES or events >= MIN_EVENTS, (spec.id, n, events)
    assert sum(n >= MIN_STATES for n, _ in counted.values()) >= 10, counted
    assert max(n for n, _ in counted.values()) >= 400, counted


def test_every_heavy_task_uses_arrays_and_has_realistic_wrong_variants() -> None:
    for spec in suite_catalog("heavy"):
        assert re.search(r"\bfor \w+ in \d+:", spec.reference), f"{spec.id}: no for loop over an array"
        assert any("[" in v for v in spec.setup.variables), spec.id  # array elements are compared
        semantic = [label for label in spec.mutations if label not in TIMEOUT_LABELS]
        assert len(semantic) >= 3, spec.id
        assert "changed-parameter" in spec.mutations, spec.id
        for name in spec.setup.variables:
            assert f"`{name.replace(',', ', ')}`" in spec.spec or f"`{name}`" in spec.spec, (spec.id, name)
    labels = [label for spec in suite_catalog("heavy") for label in spec.mutations]
    assert "never-ends" in labels  # the suite exercises the step timeout
    assert any("event" in label for label in labels) and any("sign" in label for label in labels)


@pytest.mark.slow
def test_harness_gyms_check_modelica_heavy() -> None:
    """The conformance check on the first two heavy tasks, through the installed command."""
    done = harness(
        "gyms", "check", "modelica", "-o", "suite=heavy", "--limit", "2", "--gym-workers", "2", "--json", timeout=600
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["tasks"] == 2 and report["ok"]
    assert not [c for c in report["checks"] if c["problem"]]
    ids = {c["task_id"] for c in report["checks"]}
    assert len(ids) == 2 and ids <= {s.id for s in suite_catalog("heavy")}
    passed = [c for c in report["checks"] if c["label"] == "reference"]
    assert len(passed) == 2 and all(c["outcome"] == "pass" for c in passed)
