"""The recipe in docs/writing-a-gym.md runs as it is written: its module passes the conformance
check through a real gym pool, with its answer key masked in the workers' sandboxes."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from sandbox_reader import ReadEpisode

from gyms.base import Outcome, Task
from gyms.conformance import check_gym
from gyms.pool import GymPool
from gyms.sandbox import Sandbox


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    text = (ROOT / "docs" / "writing-a-gym.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    folder = tmp_path_factory.mktemp("recipe")
    (folder / "expression_gym.py").write_text(code)
    sys.path.insert(0, str(folder))  # spawned pool workers start with this path too
    try:
        yield importlib.import_module("expression_gym")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("expression_gym", None)


def test_the_recipe_passes_the_conformance_check(recipe) -> None:  # type: ignore[no-untyped-def]
    gym = recipe.ExpressionGym()
    report = check_gym(gym, workers=1)
    assert report.ok, [(v.task_id, v.label, v.problem, v.observation) for v in report.violations]
    labels = {check.label for check in report.checks}
    assert {"reference", "wrong", "never-ends"} <= labels


@pytest.mark.skipif(Sandbox().backend != "bwrap", reason="only the bwrap sandbox hides paths")
def test_the_recipes_answer_key_is_masked(recipe) -> None:  # type: ignore[no-untyped-def]
    key = Path(recipe.__file__)
    with GymPool(1, step_timeout_s=30, answer_keys=recipe.ExpressionGym().answer_keys()) as pool:
        shown = pool.step(ReadEpisode(Task("read", "")), str(key)).result
    assert shown.outcome is Outcome.PASS and shown.info["shown"] == {str(key): ""}


def test_the_recipes_attack_suite_holds(recipe) -> None:  # type: ignore[no-untyped-def]
    """The recipe's declared attacks, as `harness gyms attack` runs them: all contained, controls intact."""
    from gyms.attacks import CONTAINED, run_gym

    gym = recipe.ExpressionGym()
    (report,) = run_gym(gym)
    assert [f.verdict for f in report.findings] == [CONTAINED, CONTAINED], report.findings
    assert report.controls == ()
