"""Answer keys are masked by what a gym declares (`Gym.answer_keys()`), in every gym pool worker
before its first step, whatever that worker imported: a worker that never loaded a gym's task
modules still shows that gym's keys empty to every sandbox.

The reading is done by an episode of tests/sandbox_reader.py (a module that imports no gym), run through a real
`GymPool` in the bwrap sandbox; the same read through a pool given no keys shows the files, so
each test can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TESTS, needs_icarus
from sandbox_reader import ReadEpisode

from gyms.base import Outcome, Task
from gyms.lean import LeanGym
from gyms.modelica import ModelicaGym
from gyms.pool import GymPool
from gyms.sandbox import Sandbox
from gyms.verilog import VerilogGym
from gyms.verilog.tasks import TASK_DIR as VERILOG_TASK_DIR

pytestmark = pytest.mark.skipif(Sandbox().backend != "bwrap", reason="only the bwrap sandbox hides paths")

VERILOG_EVAL = TESTS / "fixtures" / "verilog" / "verilog_eval"
def read_in_a_worker(paths: list[Path], answer_keys: list[Path]) -> tuple[dict[str, str], list[str]]:
    """What a sandbox of a fresh pool worker reads at each of `paths`, and the gym task modules
    that worker had imported."""
    with GymPool(1, step_timeout_s=30, answer_keys=answer_keys) as pool:
        result = pool.step(ReadEpisode(Task("read", "")), "\n".join(map(str, paths))).result
    assert result.outcome is Outcome.PASS, result.observation
    return result.info["shown"], result.info["imported"]


def _keys_of_each_gym() -> list[tuple[str, list[Path], list[Path]]]:
    """(gym, its answer keys, answer-key files inside them that hold a reference)."""
    verilog = VerilogGym(source=f"verilog-eval:{VERILOG_EVAL}", tasks="Prob002_count_down")
    lean, modelica = LeanGym(suite="heavy"), ModelicaGym(suite="heavy")
    return [
        ("verilog", verilog.answer_keys(), [
            VERILOG_EVAL / "Prob002_count_down_ref.sv", VERILOG_TASK_DIR / "sequential.py",
        ]),
        ("lean", lean.answer_keys(), [lean.answer_keys()[0] / "heavy.lean"]),
        ("modelica", modelica.answer_keys(), sorted((modelica.answer_keys()[0] / "heavy").glob("*.toml"))[:1]),
    ]  # fmt: skip


@pytest.mark.parametrize("gym", ["verilog", "lean", "modelica"])
def test_a_worker_masks_the_keys_its_gym_declares_without_importing_the_gym(gym: str) -> None:
    _, keys, references = next(entry for entry in _keys_of_each_gym() if entry[0] == gym)
    assert references and all(path.is_file() and path.stat().st_size > 0 for path in references)
    assert all(any(path.is_relative_to(key) for key in keys) for path in references)
    control = TESTS / "conftest.py"  # not an answer key: still readable

    shown, imported = read_in_a_worker([*references, control], keys)
    assert imported == []  # the worker never loaded a gym's task module
    assert all(shown[str(path)] == "" for path in references), {p: s[:80] for p, s in shown.items()}
    assert "def harness" in shown[str(control)]

    shown, _ = read_in_a_worker(references, [])  # the same read, in a worker given no keys
    assert all(shown[str(path)].strip() for path in references)


@needs_icarus
def test_recorded_reference_traces_are_answer_keys(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path / "traces"))
    gym = VerilogGym(source=f"verilog-eval:{VERILOG_EVAL}", tasks="Prob002_count_down")
    task = gym.tasks()[0]
    with gym.open(task) as episode:  # records the trace, as the first step of a run does
        assert episode.step(f"```verilog\n{task.reference}\n```").outcome is Outcome.PASS
    (trace,) = (tmp_path / "traces").iterdir()
    shown, _ = read_in_a_worker([trace], gym.answer_keys())
    assert shown[str(trace)] == ""
