"""The OpenModelica backend: everything up to running omc here, and real runs where omc exists."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from gyms.base import Outcome
from gyms.modelica import ModelicaGym
from gyms.modelica.library import LIBRARY_ROOT, library_names
from gyms.modelica.openmodelica import (
    find_omc,
    mos_script,
    read_result,
    result_file,
    used_libraries,
)
from gyms.modelica.simulation import BackendConfig, SimRequest

FIXTURES = Path(__file__).parent / "fixtures" / "modelica"
OMC_MISSING = "OpenModelica's omc is not installed here (not on PATH, OPENMODELICAHOME unset)"
REQUEST = SimRequest(
    source="model Ball\n  HeavyLib.Blocks.Constant c;\nend Ball;",
    model="Ball",
    stop_time=1.0,
    intervals=4,
    variables=("h", "v", "arr[1].x"),
    parameters=("e",),
    overrides=(("e", 0.7),),
)
CONFIG = BackendConfig(kind="openmodelica", roots=(str(LIBRARY_ROOT), str(FIXTURES / "userlib")), sim_timeout_s=2.5)


def test_the_script_loads_the_used_libraries_simulates_and_reports_parameters():
    script = mos_script(REQUEST, CONFIG)
    lines = script.splitlines()
    assert lines[0] == f'setModelicaPath("{LIBRARY_ROOT}{os.pathsep}{FIXTURES / "userlib"}");'
    assert "loadModel(HeavyLib); getErrorString();" in lines
    assert not any("UserLib" in line for line in lines)  # the answer does not use it
    assert 'loadFile("answer.mo"); getErrorString();' in lines
    simulate = next(line for line in lines if line.startswith("simulate("))
    assert "simulate(Ball, startTime=0.0, stopTime=1.0, numberOfIntervals=4, tolerance=1e-06" in simulate
    assert 'outputFormat="csv"' in simulate
    assert r'variableFilter="time|h|v|arr\\[1\\]\\.x"' in simulate  # regex-escaped, then .mos-escaped
    assert 'simflags="-alarm=8 -override=e=0.7"' in simulate  # omc's wall-clock alarm: 3 x 2.5 s of CPU time
    assert 'print("@heavygym-param e=" + getParameterValue(Ball, "e") + "\\n");' in lines
    assert result_file(REQUEST) == "Ball_res.csv"


def test_libraries_are_found_in_the_roots_and_matched_by_name():
    names = library_names(CONFIG.roots)
    assert names == {"HeavyLib": str(LIBRARY_ROOT), "UserLib": str(FIXTURES / "userlib")}
    assert used_libraries("import UserLib.Leak;\nmodel M HeavyLib.Blocks.Step s; end M;", names) == ["HeavyLib", "UserLib"]
    assert used_libraries("model M Real MyHeavyLib; end M;", names) == []


def test_a_result_file_becomes_a_simulation():
    output = "record SimulationResult\n    resultFile = \"Ball_res.csv\",\nend SimulationResult;\n@heavygym-param e=0.7\n"
    sim = read_result((FIXTURES / "om_result.csv").read_text(), output, REQUEST, 1.5)
    assert sim.ok and sim.parameters == {"e": 0.7}
    assert sim.time[3:5].tolist() == [0.5530261, 0.5530261]  # the event instant, before and after
    assert sim.values["v"][4] == pytest.approx(3.79763023)
    assert sim.missing == ("arr[1].x",)


@pytest.mark.parametrize(
    ("output", "status"),
    [
        ("[answer.mo:3:3-3:12:writable] Error: Too many equations, over-determined system.", "unbalanced"),
        ("[answer.mo:4:10-4:11:writable] Error: Variable y not found in scope Ball.", "compile-error"),
        ("Simulation execution failed for model: Ball\nassert | x too big", "simulation-error"),
        ("Simulation call terminated by alarm after 3 seconds", "timeout"),
    ],
)
def test_failures_are_classified(output, status):
    sim = read_result(None, output, REQUEST, 1.0)
    assert sim.status == status and sim.message


def test_a_result_that_stops_early_is_not_a_pass():
    truncated = '"time","h","v"\n0,1.5,0\n0.25,1.19,-2.45\n'
    assert read_result(truncated, "", REQUEST, 1.0).status == "simulation-error"
    assert read_result(truncated, "terminated by alarm", REQUEST, 1.0).status == "timeout"


def test_an_expression_parameter_is_reported_as_not_a_number():
    sim = read_result((FIXTURES / "om_result.csv").read_text(), "@heavygym-param e=2*k\n", REQUEST, 1.0)
    assert sim.parameters == {"e": None}


def test_openmodelicahome_locates_omc(tmp_path, monkeypatch):
    omc = tmp_path / "bin" / "omc"
    omc.parent.mkdir()
    omc.write_text("#!/bin/sh\n")
    omc.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("OPENMODELICAHOME", str(tmp_path))
    assert find_omc() == str(omc)
    monkeypatch.delenv("OPENMODELICAHOME")
    assert find_omc() is None


@pytest.mark.skipif(find_omc() is not None, reason="omc is installed: the missing-tool path cannot be shown")
def test_without_omc_the_gym_reports_the_missing_tool_and_steps_end_as_errors():
    gym = ModelicaGym(backend="openmodelica")
    (tool,) = gym.tools()
    assert tool.name == "omc" and not tool.available and "OPENMODELICAHOME" in tool.install_hint
    assert gym.describe()["omc"] == "missing"
    task = gym.tasks()[0]
    with gym.open(task) as episode:
        result = episode.step(task.reference)
    assert result.outcome is Outcome.ERROR and "omc was not found" in result.info["error"]


@pytest.mark.skipif(find_omc() is None, reason=OMC_MISSING)
def test_with_omc_references_pass_and_wrong_variants_fail():
    gym = ModelicaGym(backend="openmodelica")
    for task_id in ("ode/logistic-harvest", "event/bouncing-ball", "lib/rc-step", "fit/damper-overshoot"):
        task = next(t for t in gym.tasks() if t.id == task_id)
        for candidate in gym.candidates(task, random.Random(0)):
            with gym.open(task) as episode:
                result = episode.step(candidate.action)
            assert result.outcome is not Outcome.ERROR, (task_id, candidate.label, result.info)
            assert (result.outcome is Outcome.PASS) == (candidate.expect == "pass"), (task_id, candidate.label)
