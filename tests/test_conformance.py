from __future__ import annotations

import json

from conftest import harness, with_path
from toy_gyms import LyingGym, StagedGym, ToyGym

from gyms.base import Candidate
from gyms.conformance import GARBAGE_ACTIONS, HANG_FINISHED, check_gym


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
    assert problems["gym-bug"].startswith("the gym raised on it: RuntimeError: a bug in the gym")


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


# -- known-bad candidates must exercise what they claim --------------------------------------


def _checks(report, label):
    return [c for c in report.checks if c.label == label]


def test_a_hang_refused_before_it_runs_is_not_applicable():
    report = check_gym(StagedGym("timeout:run:refused"), workers=1)
    (check,) = _checks(report, "timeout:refused")
    assert check.status == "not applicable" and check.ok and check not in report.violations
    assert "never reached stage 'run'" in check.not_applicable and "the screen refused" in check.not_applicable
    assert report.ok and report.not_applicable == [check]
    assert any("the timeout was not exercised" in n for n in report.notes)


def test_a_hang_stopped_by_the_time_limit_passes_and_the_rest_use_the_short_limits():
    report = check_gym(StagedGym("timeout:run:loop;timeout:run:loop", limit_s=1.0, short_limit_s=0.2), workers=2)
    first, second = _checks(report, "timeout:loop")
    assert first.status == second.status == "ok", (first, second)
    # The first hang waits out the gym's own limit; the others run under its short limits.
    assert first.observation == "stopped by the 1 s limit" and second.observation == "stopped by the 0.2 s limit"
    assert report.ok and not report.not_applicable
    assert any("short time limits" in n for n in report.notes)


def test_a_hang_that_finishes_is_a_violation_of_the_candidate():
    report = check_gym(StagedGym("timeout:run:finishes"), workers=1)
    (check,) = _checks(report, "timeout:finishes")
    assert check.status == "violation" and check.problem.startswith(HANG_FINISHED)
    assert "does not hang" in check.problem and "the answer ran and is wrong" in check.problem and not report.ok


def test_a_hang_stopped_without_info_timed_out_names_the_missing_key():
    report = check_gym(StagedGym("timeout:run:unmarked", limit_s=0.5), workers=1)
    (check,) = _checks(report, "timeout:unmarked")
    assert check.status == "violation" and not report.ok
    # the gym stopped it (its feedback says so) and forgot the flag: the message says which flag
    assert check.problem.startswith("the non-terminating candidate ended without info['timed_out'] = True")
    assert "must set info['timed_out'] = True" in check.problem and "stopped by the 0.5 s limit" in check.problem


def test_a_bad_answer_must_fail_at_the_stage_it_claims():
    report = check_gym(StagedGym("fail:compile:broken;fail:compile:runs"), workers=1)
    (broken,) = _checks(report, "fail:broken")
    (runs,) = _checks(report, "fail:runs")
    assert broken.status == "ok"
    assert runs.status == "violation" and "should fail at stage 'compile' but ended at 'run'" in runs.problem


def test_a_stage_claim_the_gym_cannot_answer_is_a_violation():
    # ToyGym reports no info["stage"]: a candidate that claims one cannot be checked.
    class Claiming(ToyGym):
        def candidates(self, task, rng):
            return [*super().candidates(task, rng), Candidate("nope", "fail", "claims", stage="compile")]

    report = check_gym(Claiming(tasks=1), workers=1)
    (check,) = _checks(report, "claims")
    assert "reports no info['stage']" in check.problem


def test_cli_counts_and_lists_not_applicable_checks():
    options = ["-o", "candidates=timeout:run:refused;timeout:run:loop", "-o", "limit_s=0.5"]
    shown = harness("gyms", "check", "toy_gyms:StagedGym", *options, env=with_path())
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "0 violations, 1 not applicable" in shown.stdout
    assert "not applicable: toy/0 / timeout:refused: it never reached stage 'run'" in shown.stdout
    as_json = harness("gyms", "check", "toy_gyms:StagedGym", *options, "--json", env=with_path())
    report = json.loads(as_json.stdout)
    assert report["ok"] is True and report["not_applicable"] == 1 and report["violations"] == 0
    (check,) = [c for c in report["checks"] if c["not_applicable"]]
    assert check["label"] == "timeout:refused" and "the screen refused" in check["not_applicable"]
