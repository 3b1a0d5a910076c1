"""What the host trusts of the sandbox: strict replies, a private reply channel, no answer key inside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gyms.modelica import ModelicaGym
from gyms.modelica.backend import backend_for
from gyms.modelica.mutations import as_answer
from gyms.modelica.openmodelica import read_result, screen
from gyms.modelica.simulation import MalformedReply, SimRequest, Simulation

REQUEST = SimRequest("model A end A;", "A", 2.0, 4, ("x",), ("k",))
GOOD = {"status": "ok", "time": [0.0, 1.0, 1.0, 2.0], "values": {"x": [0.0, 1.0, 2.0, 3.0]}, "parameters": {"k": 2.0},
        "names": ["x", "k"]}  # fmt: skip


def test_a_well_formed_reply_is_taken_with_what_was_asked_only():
    sim = Simulation.from_reply(GOOD, 0.1, REQUEST)
    assert sim.ok and sim.time.tolist() == [0.0, 1.0, 1.0, 2.0] and sim.parameters == {"k": 2.0}
    assert Simulation.from_reply({**GOOD, "values": {}}, 0.1, REQUEST).missing == ("x",)


@pytest.mark.parametrize(
    "change",
    [
        {"status": "passed"},
        {"time": [0.0, 2.0, 1.0, 2.0]},  # backwards
        {"time": [0.5, 1.0, 1.5, 2.0]},  # not from 0
        {"time": [0.0, 1.0, 2.0, 3.0]},  # past the stop time
        {"values": {"x": [0.0, 1.0, 2.0]}},  # not one value per time point
        {"values": {"x": [0.0, 1.0, float("nan"), 3.0]}},
        {"values": {"x": ["0", "1", "2", "3"]}},  # strings are not numbers
        {"values": {"x": [0.0, 1.0, 2.0, 3.0], "reference.x": [0.0, 1.0, 2.0, 3.0]}},  # not asked for
        {"parameters": {"k": "2"}},
        {"parameters": {"k": True}},
        {"names": "x"},
        {"time": [0.0] * 600_000},
    ],
)
def test_a_reply_outside_the_protocol_is_refused(change):
    with pytest.raises(MalformedReply):
        Simulation.from_reply({**GOOD, **change}, 0.1, REQUEST)


def test_a_run_that_ends_early_is_the_models_failure():
    early = {**GOOD, "time": [0.0, 0.5, 1.0, 1.0], "message": "terminate() called"}
    sim = Simulation.from_reply(early, 0.1, REQUEST)
    assert sim.status == "simulation-error" and "stopped at t=1, before the stop time 2" in sim.message


def test_nothing_printed_to_stdout_inside_the_runner_reaches_the_reply_channel():
    runner = Path(__file__).parent.parent / "gyms" / "modelica" / "runner.py"
    program = (
        f"import os, sys; sys.path.insert(0, {str(runner.parent)!r}); import runner\n"
        "channel = runner._reply_channel()\n"
        "os.write(1, b'{\"status\": \"ok\"}\\n'); print('{\"status\": \"ok\"}', flush=True)\n"
        "print('{\"id\": 1}', file=channel, flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.stdout == '{"id": 1}\n'
    assert done.stderr.count('{"status": "ok"}') == 2  # sent to stderr, where no reply is read


def test_the_answer_key_is_not_in_the_answers_sandbox():
    gym = ModelicaGym()
    task = next(t for t in gym.tasks("train") if t.id == "ode/logistic-harvest")
    key = "r*x*(1 - x/K) - q*x"  # the reference's own equation
    wrong = task.reference.replace(key, "r*x*(1 - x/K) - 0.5*q*x")
    with gym.open(task) as episode:
        assert episode.step(as_answer(wrong)).reward < 1
    backend = backend_for(gym.config)
    answers, references = backend._warm, backend._reference_runner
    assert answers.running and references.running and answers.pid != references.pid
    # Nothing of the reference in the answer runner's command line, environment or files.
    seen = [Path(f"/proc/{answers.pid}/cmdline").read_bytes(), Path(f"/proc/{answers.pid}/environ").read_bytes()]
    workdir = answers._workdir.path
    seen += [p.read_bytes() for p in workdir.rglob("*") if p.is_file() and not p.is_symlink()]
    assert seen and not any(key.encode() in blob for blob in seen)
    assert key.encode() not in json.dumps(os.environ.copy()).encode()


def test_openmodelica_answers_with_external_code_are_refused_before_omc_runs():
    for source in ('function f external "C" y = g(u); end f;', "Modelica.Utilities.System.command(\"ls\")",
                   "// uses an external solver", 'annotation(Include = "#include <x.h>")'):  # fmt: skip
        assert screen(source) is not None, source
    assert screen("model A\n  Real externalForce;\nequation\n  externalForce = 1;\nend A;") is None


def test_an_openmodelica_result_with_garbage_is_a_failed_simulation_not_a_crash():
    request = SimRequest("", "A", 1.0, 2, ("x",))
    for csv in ("time,x\n0,1\n0.5,abc\n1,2\n", "time,x\n0,1\n0.5\n1,2\n", "time,x\n1,1\n0,2\n"):
        assert read_result(csv, "", request, 0.1).status == "simulation-error", csv
