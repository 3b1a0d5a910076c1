"""The Modelica gym end to end: real rumoca runs in the real sandbox, through episodes and the pool."""

from __future__ import annotations

import math
import pickle
import shutil
from pathlib import Path

import pytest
from conftest import harness, reply_shapes

from gyms.base import Outcome, Task
from gyms.conformance import check_gym
from gyms.modelica import ModelicaGym, runner
from gyms.modelica.catalog import Setup, load_catalog
from gyms.modelica.library import LIBRARY_ROOT
from gyms.modelica.mutations import as_answer
from gyms.registry import GymLoadError, make
from gyms.warm import WALL_PER_CPU

USERLIB = Path(__file__).parent / "fixtures" / "modelica" / "userlib"


@pytest.fixture(scope="module")
def gym() -> ModelicaGym:
    return ModelicaGym()


def task_of(gym: ModelicaGym, task_id: str) -> Task:
    return next(t for t in gym.tasks("train") + gym.tasks("test") if t.id == task_id)


def step(gym: ModelicaGym, task: Task, source: str):
    with gym.open(task) as episode:
        return episode.step(as_answer(source))


def simulate_reference(task_id: str) -> dict:
    """A task's reference simulated by the runner in this process (no sandbox): for checking references."""
    spec = next(s for s in load_catalog() if s.id == task_id)
    setup = spec.setup
    return runner.handle({
        "source": spec.reference, "filename": "answer.mo", "model": setup.model, "roots": [str(LIBRARY_ROOT)],
        "stop_time": setup.stop_time, "intervals": setup.intervals, "variables": list(setup.variables),
    })  # fmt: skip


def test_references_follow_their_closed_form_solutions():
    # Logistic growth with constant-effort harvest is logistic with r - q and K*(1 - q/r).
    reply = simulate_reference("ode/logistic-harvest")
    r, K, q, x0 = 0.8, 10.0, 0.3, 2.0
    rate, capacity = r - q, K * (1 - q / r)
    for t, x in zip(reply["time"], reply["values"]["x"]):
        assert x == pytest.approx(capacity / (1 + (capacity / x0 - 1) * math.exp(-rate * t)), rel=1e-4)
    # The RC step response, built from HeavyLib components.
    reply = simulate_reference("lib/rc-step")
    for t, v in zip(reply["time"], reply["values"]["C1.v"]):
        expected = 5 * (1 - math.exp(-(t - 0.1) / 0.1)) if t > 0.1 else 0.0
        assert v == pytest.approx(expected, rel=1e-3, abs=1e-6)


def test_the_reference_passes_and_a_wrong_parameter_fails_with_partial_credit(gym):
    task = task_of(gym, "ode/reaction-chain")
    spec = next(s for s in load_catalog() if s.id == task.id)
    with gym.open(task) as episode:
        good = episode.step(as_answer(spec.reference))
    assert good.outcome is Outcome.PASS and good.reward == 1.0 and good.done
    old, new = spec.mutations["changed-parameter"]
    bad = step(gym, task, spec.reference.replace(old, new))
    assert bad.outcome is Outcome.FAIL and bad.reward == pytest.approx(1 / 3)  # cA is still right
    assert "- ok: `cA` matches" in bad.observation and "FAILED: `cB` differs" in bad.observation
    assert bad.info["checks"] == {"cA": True, "cB": False, "cC": False}


@pytest.mark.parametrize("shape", reply_shapes("x", "modelica"))
def test_a_correct_model_passes_in_every_shape_of_reply(gym, shape):
    task = task_of(gym, "event/bouncing-ball")
    with gym.open(task) as episode:
        result = episode.step(reply_shapes(task.reference or "", "modelica")[shape])
    assert result.outcome is Outcome.PASS, result.observation[:300]


def test_a_fitting_task_scores_requirements_on_the_answers_own_parameters(gym):
    task = task_of(gym, "fit/damper-overshoot")
    spec = next(s for s in load_catalog() if s.id == task.id)
    underdamped = step(gym, task, spec.reference.replace("d = 16", "d = 8"))
    assert underdamped.reward == 0.5  # the trajectories match the plant with d = 8; the requirements fail
    assert "FAILED: overshoot of `x`" in underdamped.observation
    hidden = step(gym, task, spec.reference.replace("parameter Real d = 16", "parameter Real d = 2*8"))
    assert "Declare the tuned parameter(s)" in hidden.observation


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        ("der(y) = mu*(1 - x^2)*y - x\nend", "line 8, column 1: unexpected `end` (is a `;` missing"),
        ("der(y) = mu*(1 - x^2)*y - xx;", "line 7: unknown name `xx`"),
        ("der(y) = mu*(1 - x^2)*y - sin(x, 2);", "line 7, column 29: sin() expects 1 argument(s), found 2"),
        ("der(y) = mu*(1 - x^2)*y - x;\n  assert(x > 0, \"x stays positive\");", "an assert failed at t=2.5"),
        ("der(y) = mu*(1 - x^2)*y - x;\n  x = 2;", "not balanced: 3 equations for 2 unknowns (1 equation(s) too many)"),
    ],
)
def test_errors_come_back_readable_with_line_numbers(gym, broken, expected):
    reference = next(s for s in load_catalog() if s.id == "ode/van-der-pol").reference
    result = step(gym, task_of(gym, "ode/van-der-pol"), reference.replace("der(y) = mu*(1 - x^2)*y - x;\nend", broken + "\nend"))
    assert result.outcome is Outcome.FAIL and result.reward == 0.0
    assert expected in result.observation, result.observation
    assert "Traceback" not in result.observation


def test_a_non_finite_value_is_traced_to_its_declaration_and_equation(gym):
    source = (
        "model VanDerPol\n  Real x(start = 2, fixed = true);\n  Real y;\n  Real ratio;\nequation\n"
        "  der(x) = -x;\n  y = x;\n  ratio = y/(x - x);\nend VanDerPol;"
    )
    result = step(gym, task_of(gym, "ode/van-der-pol"), source)
    assert "non-finite (inf) value computed for `ratio` (declared on line 4)" in result.observation
    assert "8 | ratio = y/(x - x);" in result.observation


def test_a_model_that_kills_the_runner_fails_and_the_next_answer_gets_a_fresh_runner(gym):
    task = task_of(gym, "ode/van-der-pol")
    huge = (
        "model VanDerPol\n  parameter Integer n = 100000000;\n  Real z[n];\n  Real x(start = 2, fixed = true);\n"
        "  Real y;\nequation\n  z = fill(1.0, n);\n  der(x) = -x;\n  y = x;\nend VanDerPol;"
    )
    crashed = step(gym, task, huge)
    assert crashed.outcome is Outcome.FAIL and crashed.info["status"] == "crash"
    assert "memory allocation of 7200000000 bytes failed" in crashed.observation
    assert step(gym, task, task.reference).outcome is Outcome.PASS


def test_answers_without_the_model_fail_fast_with_advice(gym):
    task = task_of(gym, "ode/van-der-pol")
    with gym.open(task) as episode:
        result = episode.step("I would use a Van der Pol oscillator.")
    assert result.outcome is Outcome.FAIL and "```modelica" in result.observation
    renamed = step(gym, task, "model VdP\n  Real x;\nequation\n  x = 1;\nend VdP;")
    assert "asks for a model named `VanDerPol`; your answer defines VdP" in renamed.observation
    missing = step(gym, task, "model VanDerPol\n  Real x(start = 2, fixed = true);\nequation\n  der(x) = -x;\nend VanDerPol;")
    assert "`y` is not a variable of your model; name it exactly `y` (your model has: x)" in missing.observation


def test_multi_turn_episodes_end_on_a_pass_or_after_max_turns(gym):
    task = task_of(gym, "ode/sir-epidemic")
    wrong = as_answer(task.reference.replace("beta = 0.3", "beta = 0.33"))
    with gym.open(task) as episode:
        first = episode.step(wrong)
        assert first.outcome is Outcome.FAIL and not first.done and "answer again" in first.observation
        second = episode.step(as_answer(task.reference))
        assert second.outcome is Outcome.PASS and second.done and second.turn == 2
    short = ModelicaGym(max_turns="1")
    with short.open(task) as episode:
        only = episode.step(wrong)
    assert only.done and "answer again" not in only.observation


def test_an_episode_is_small_and_picklable(gym):
    episode = gym.open(task_of(gym, "lib/pi-speed-loop"))
    episode.step(as_answer(episode.task.reference))
    assert len(pickle.dumps(episode)) < 20_000


def test_a_reference_that_does_not_simulate_is_an_infrastructure_error(gym):
    setup = Setup(model="A", stop_time=1.0, intervals=10, variables=("x",))
    task = Task("broken/reference", "", reference="model A\n  Real x;\nequation\n  x = y;\nend A;", metadata=setup.to_metadata())
    with gym.open(task) as episode:
        result = episode.step(as_answer("model A\n  Real x = 1;\nend A;"))
    assert result.outcome is Outcome.ERROR and "the reference of task broken/reference did not simulate" in result.info["error"]


def test_per_call_runners_work_in_the_episodes_own_workdir():
    gym = ModelicaGym(warm="false")
    task = task_of(gym, "event/bouncing-ball")
    episode = gym.open(task)
    assert episode.step(as_answer(task.reference)).outcome is Outcome.PASS
    workdir = episode.workdir.path
    assert workdir.is_dir()
    episode.close()
    assert not workdir.exists()


def test_a_model_that_never_ends_is_stopped_by_the_cpu_limit_of_a_per_call_runner():
    gym = ModelicaGym(warm="false", sim_timeout_s=0.5)  # 2.5 s of CPU time per call
    spec = next(s for s in load_catalog() if s.id == "event/drug-dosing")
    old, new = spec.mutations["never-ends"]
    with gym.open(task_of(gym, spec.id)) as episode:
        result = episode.step(as_answer(spec.reference.replace(old, new)))
    assert result.outcome is Outcome.FAIL and result.info["timed_out"] is True, result.observation
    assert "of CPU time" in result.observation


def test_a_library_root_adds_user_libraries():
    setup = Setup(model="Store", stop_time=2.0, intervals=20, variables=("leak.x",))
    reference = "model Store\n  UserLib.Leak leak(k = 0.5);\nend Store;"
    task = Task("user/leak", "", reference=reference, metadata=setup.to_metadata())
    with_lib = ModelicaGym(library_root=str(USERLIB))
    assert step(with_lib, task, reference).outcome is Outcome.PASS
    without = step(with_lib, task, reference.replace("k = 0.5", "k = 0.6"))
    assert without.outcome is Outcome.FAIL and "`leak.x` differs" in without.observation
    assert "UserLib" not in ModelicaGym().describe()["library_roots"]


def test_library_roots_must_be_library_directories(tmp_path):
    with pytest.raises(ValueError, match="is not a directory"):
        ModelicaGym(library_root=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="holds no Modelica library"):
        ModelicaGym(library_root=str(USERLIB.parent))  # a directory above the library root


def test_a_library_below_a_private_directory_reaches_the_sandbox(tmp_path):
    # pytest's tmp_path lies under a directory of mode 700: the sandbox exposes the root anyway
    private = tmp_path / "userlib"
    shutil.copytree(USERLIB, private)
    setup = Setup(model="Store", stop_time=2.0, intervals=20, variables=("leak.x",))
    reference = "model Store\n  UserLib.Leak leak(k = 0.5);\nend Store;"
    task = Task("user/leak", "", reference=reference, metadata=setup.to_metadata())
    assert step(ModelicaGym(library_root=str(private)), task, reference).outcome is Outcome.PASS


def test_options_from_the_command_line_and_their_errors():
    gym = make("gyms.modelica:ModelicaGym", max_turns="2", sim_timeout_s="1.5", warm="no")
    assert gym.max_turns == 2 and gym.config.sim_timeout_s == 1.5 and not gym.config.warm
    assert gym.step_timeout_s == 3 * (1.5 + 2.0) * WALL_PER_CPU  # three calls, each at its wall-clock backstop
    assert gym.describe()["rumoca"] == "0.10.2" and gym.describe()["backend"] == "rumoca"
    for bad, message in [({"backend": "dymola"}, "use one of rumoca, openmodelica"), ({"warm": "maybe"}, "true or false")]:
        with pytest.raises((ValueError, GymLoadError), match=message):
            make("gyms.modelica:ModelicaGym", **bad)
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        gym.tasks("dev")


@pytest.mark.slow
def test_conformance_of_every_task():
    gym = ModelicaGym()
    for split in ("train", "test"):
        report = check_gym(gym, split=split, workers=2)
        assert report.ok, [(v.task_id, v.label, v.problem) for v in report.violations]
        assert report.tasks == len(gym.tasks(split))
        assert not report.notes  # a never-ending candidate was exercised


def test_harness_checks_the_gym_by_module_path():
    done = harness("gyms", "check", "gyms.modelica:ModelicaGym", "--limit", "1", "--gym-workers", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS gym modelica" in done.stdout
