from __future__ import annotations

import json

from conftest import harness, with_path
from toy_gyms import LyingGym, ToyGym

from gyms.conformance import GARBAGE_ACTIONS, check_gym


def test_a_conforming_gym_passes():
    report = check_gym(ToyGym(tasks=2), workers=2)
    assert report.ok, report.violations
    assert report.tasks == 2
    assert len(report.checks) == 2 * (2 + len(GARBAGE_ACTIONS))
    assert any("no non-terminating candidate" in n for n in report.notes)


def test_every_broken_promise_is_reported():
    report = check_gym(LyingGym(tasks=1), workers=2)
    assert not report.ok
    problems = {v.label: v.problem for v in report.violations}
    assert "expected a pass with reward 1" in problems["reference"]
    assert problems["bad-but-passes"] == "a known-bad action passed"
    assert "host timeout" in problems["hang"]
    assert "a bug in the gym" in problems["gym-bug"]


def test_limit_checks_only_the_first_tasks():
    assert check_gym(ToyGym(tasks=3), limit=1, workers=1).tasks == 1


def test_cli_exit_code_and_report(example_plugin):
    good = harness("gyms", "check", "reverse", "--limit", "2", env=with_path(example_plugin))
    assert good.returncode == 0, good.stdout + good.stderr
    assert "PASS gym reverse" in good.stdout
    bad = harness("gyms", "check", "toy_gyms:LyingGym", "-o", "tasks=1", "--json", env=with_path())
    assert bad.returncode == 1
    report = json.loads(bad.stdout)
    assert report["ok"] is False and len([c for c in report["checks"] if c["problem"]]) == 4
