from __future__ import annotations

import sys

import pytest

from gyms.warm import WALL_PER_CPU, WarmCrash, WarmProcess, WarmTimeout

ECHO = """
import json, subprocess, sys, time
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if "sleep" in req: time.sleep(req["sleep"])
    if "spin" in req:  # burn this many seconds of CPU time, then answer
        end = time.process_time() + req["spin"]
        while time.process_time() < end: pass
    if "child_spins" in req: subprocess.run([sys.executable, "-c", "while True: pass"])
    if "exit" in req: sys.exit(req["exit"])
    if "junk" in req: print("not json", flush=True); continue
    if "plant" in req:  # swap the stderr file for a link to a host file, then crash
        import os
        print("the real error", file=sys.stderr, flush=True)
        os.remove(".stderr"); os.symlink(req["plant"], ".stderr"); sys.exit(1)
    print(json.dumps({"echo": req}), flush=True)
"""


@pytest.fixture
def checker():
    proc = WarmProcess([sys.executable, "-c", ECHO], "echo", memory_mb=512)
    yield proc
    proc.close()


def test_answers_requests_on_one_warm_process(checker):
    for i in range(20):
        assert checker.request({"i": i}, timeout_s=5) == {"echo": {"i": i}}
    assert checker.starts == 1


def test_a_stuck_checker_is_killed_and_restarted(checker):
    with pytest.raises(WarmTimeout):
        checker.request({"sleep": 30}, timeout_s=0.5)
    assert checker.request({"i": 1}, timeout_s=5) == {"echo": {"i": 1}}
    assert checker.starts == 2


@pytest.mark.parametrize("request_", [{"spin": 600}, {"child_spins": True}], ids=["itself", "in-a-child"])
def test_a_request_is_killed_at_its_cpu_budget_long_before_its_wall_clock_limit(checker, request_):
    with pytest.raises(WarmTimeout, match="more than 0.5 s of CPU time"):
        checker.request(request_, timeout_s=600, cpu_s=0.5)
    assert checker.request({"i": 1}, timeout_s=5) == {"echo": {"i": 1}}
    assert checker.starts == 2


def test_waiting_costs_no_cpu_time_and_the_cpu_a_request_took_is_reported(checker):
    # Sleeping past the CPU budget is fine: the wall-clock backstop is three times as long.
    assert checker.request({"sleep": 1.5, "i": 1}, timeout_s=1.0 * WALL_PER_CPU, cpu_s=1.0) == {
        "echo": {"sleep": 1.5, "i": 1}
    }
    assert checker.last_cpu_s is not None and checker.last_cpu_s < 1.0
    checker.request({"spin": 0.4}, timeout_s=60, cpu_s=30)
    assert 0.35 <= checker.last_cpu_s < 30
    checker.request({"i": 2}, timeout_s=5)
    assert checker.last_cpu_s is None  # no CPU budget, no figure


@pytest.mark.parametrize("request_", [{"exit": 3}, {"junk": 1}])
def test_a_crash_or_garbage_is_reported_and_restarted(checker, request_):
    with pytest.raises(WarmCrash, match="echo checker failed"):
        checker.request(request_, timeout_s=5)
    assert checker.request({"i": 2}, timeout_s=5) == {"echo": {"i": 2}}


@pytest.mark.parametrize(("first_line", "problem"), [("hello", "unreadable reply"), ('{"x": 1}', "expected")])
def test_a_program_that_never_gets_ready_is_a_crash(first_line, problem):
    proc = WarmProcess([sys.executable, "-c", f"print({first_line!r})"], "bad")
    with pytest.raises(WarmCrash, match=problem):
        proc.request({}, timeout_s=5)


def test_a_crash_report_never_reads_what_the_sandbox_put_in_place_of_its_stderr(checker, tmp_path):
    secret = tmp_path / "host-secret"
    secret.write_text("HOST SECRET\n")
    secret.chmod(0o644)
    tmp_path.chmod(0o755)
    with pytest.raises(WarmCrash) as crash:
        checker.request({"plant": str(secret)}, timeout_s=5)
    assert "the real error" in str(crash.value) and "HOST SECRET" not in str(crash.value)
