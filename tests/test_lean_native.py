"""The Lean gym on a native Lean: your own REPL binary (and, for Mathlib tasks, a Lean project).

Configure with environment variables, or these tests are skipped:
  HEAVYGYM_LEAN_REPL     path to a `repl` binary (https://github.com/leanprover-community/repl,
                         built with `lake build` for your toolchain; `lean` must be on PATH)
  HEAVYGYM_LEAN_PROJECT  a Lean project with Mathlib (for the miniF2F-style tasks)
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from gyms.base import Outcome
from gyms.lean import LeanGym

FIXTURES = Path(__file__).parent / "fixtures" / "lean"
REPL = os.environ.get("HEAVYGYM_LEAN_REPL")
PROJECT = os.environ.get("HEAVYGYM_LEAN_PROJECT")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not REPL or not Path(REPL).is_file(),
        reason="no native Lean REPL: set HEAVYGYM_LEAN_REPL=/path/to/repl (built from leanprover-community/repl)",
    ),
]


def test_core_tasks_on_the_native_repl() -> None:
    gym = LeanGym(backend="native", repl=REPL)
    for task in gym.tasks()[:5]:
        assert gym.open(task).step(task.reference).outcome is Outcome.PASS, task.id
        for candidate in gym.candidates(task, random.Random(0)):
            if candidate.expect == "fail":
                assert gym.open(task).step(candidate.action).outcome is Outcome.FAIL, (task.id, candidate.label)


@pytest.mark.skipif(not PROJECT, reason="no Lean project with Mathlib: set HEAVYGYM_LEAN_PROJECT=/path/to/project")
def test_minif2f_tasks_with_mathlib() -> None:
    gym = LeanGym(source=str(FIXTURES / "minif2f.jsonl"), backend="native", repl=REPL, project=PROJECT)
    task = gym.tasks("test")[0]  # (3 ^ 5 + 4) % 7 = 2
    assert gym.open(task).step("by norm_num").outcome is Outcome.PASS
    assert gym.open(task).step("by sorry").outcome is Outcome.FAIL
    linear = gym.tasks("train")[0]  # 2 * x + 3 = 11 → x = 4, over the reals
    assert gym.open(linear).step("by linarith").outcome is Outcome.PASS
