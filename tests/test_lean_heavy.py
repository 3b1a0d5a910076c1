"""The lean gym's heavy suite (`-o suite=heavy`, gyms/lean/tasks/heavy.lean): the file parses
into tasks with references and known-wrong proofs, the option is checked, and (slow, on the
real wasm Lean) the conformance check passes on the first two tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import harness
from test_lean_wasm import wasm_lean  # noqa: F401  (the fixture: installs the wasm Lean if missing)

from gyms.lean import LeanGym
from gyms.lean.acceptance import screen
from gyms.lean.tasks import HEAVY_FILE, core_tasks, suite_tasks

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lean"


def test_the_heavy_file_parses_into_tasks_with_references_and_wrong_proofs() -> None:
    tasks = suite_tasks("heavy")
    assert len(tasks) >= 15
    assert tasks == core_tasks(HEAVY_FILE, "heavy")
    assert len({t.name for t in tasks}) == len(tasks)
    for task in tasks:
        assert task.id == f"heavy/{task.name}" and task.source == "heavy"
        assert task.statement.startswith(f"theorem {task.name} ") and task.description
        assert task.reference and task.wrong, task.name
        assert "native_decide" not in task.reference and "sorry" not in task.reference
    # One task in five is held out, as in the core suite.
    assert [t.split for t in tasks[:5]] == ["train"] * 4 + ["test"]
    gym = LeanGym(suite="heavy")
    assert len(gym.tasks("train")) + len(gym.tasks("test")) == len(tasks)
    assert all(t.id.startswith("heavy/") for t in gym.tasks())
    assert gym.describe()["suite"] == "heavy"
    assert LeanGym().tasks()[0].id.startswith("core/")  # the default suite is still core


def test_wrong_proofs_reach_lean_and_most_tasks_have_one_that_does_work() -> None:
    """The replay mix puts half its weight on fail candidates: the heavy suite's wrong proofs
    must get past the text screen (so Lean elaborates them, unlike the gym's cheats), and most
    train tasks offer one that first proves a neighbouring case (`have ... := (by decide ...)` or
    `(by omega)`) before it fails, so a failed check costs real work too. (The first two tasks,
    which the slow test below checks, keep their cheaper wrong proofs to keep that test short.)"""
    tasks = suite_tasks("heavy")
    for task in tasks:
        for wrong in task.wrong:
            assert screen(wrong) == [], (task.name, wrong)
            assert wrong.strip() != task.reference.strip(), task.name
    train = [t for t in tasks if t.split == "train"]
    working = [t for t in train if any(w.startswith("by have ") and "(by " in w for w in t.wrong)]
    assert len(working) >= len(train) - 3, sorted({t.name for t in train} - {t.name for t in working})


def test_an_unknown_suite_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"suite='bogus': use one of core, heavy"):
        LeanGym(suite="bogus")
    with pytest.raises(ValueError, match="suite='bogus'"):
        suite_tasks("bogus")
    with pytest.raises(ValueError, match="source=core"):
        LeanGym(source=str(FIXTURES / "minif2f.jsonl"), backend="native", suite="heavy")


@pytest.mark.slow
def test_harness_gyms_check_lean_heavy(wasm_lean: Path) -> None:  # noqa: F811
    """The conformance check on the first two heavy tasks, through the installed command."""
    done = harness(
        "gyms",
        "check",
        "lean",
        "-o",
        "suite=heavy",
        "--limit",
        "2",
        "--gym-workers",
        "1",
        "--json",
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["tasks"] == 2 and not [c for c in report["checks"] if c["problem"]]
    assert report["ok"]
    assert {c["task_id"] for c in report["checks"]} <= {t.id for t in suite_tasks("heavy")}
