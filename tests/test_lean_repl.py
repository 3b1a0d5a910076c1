"""The checker clients and pool, driven by fake checkers (Python scripts speaking the REPL and
the heavycheck protocols), so that framing, reply authentication, timeouts, crashes, restarts
and health checks are tested in seconds."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time

import pytest

from gyms.lean.backends import Launch
from gyms.lean.checker import CheckerPool, LeanCrashedOnProof, default_pool_size
from gyms.lean.heavycheck import HeavyCheckProcess
from gyms.lean.protocol import Axiom, Message, ProofJob, ProtocolError, ProtocolViolation
from gyms.lean.repl import ReplProcess
from gyms.warm import WALL_PER_CPU, WarmCrash, WarmTimeout

FAKE_REPL = r"""
import json, sys, time
env = 0

def answer(obj):
    # Progress noise as some REPL builds print it, then pretty JSON and the blank line.
    print("Processing incremental state [pos: 0..9]:\n{ not json", flush=True)
    print(json.dumps(obj, indent=1) + "\n", flush=True)

lines = []
for line in sys.stdin:
    if line.strip():
        lines.append(line)
        continue
    if not lines:
        continue
    request, lines = json.loads("".join(lines)), []
    if "axioms" in request:
        answer({"axioms": [{"name": "propext", "imported": True}]})
        continue
    cmd = request["cmd"]
    if "sleep" in cmd:
        time.sleep(600)
    if "spin" in cmd:
        while True:
            pass
    if "exit" in cmd:
        sys.exit(3)
    if "refuse" in cmd:
        answer({"message": "Lean error: refused"})
        continue
    messages = []
    if "error" in cmd:
        messages.append({"severity": "error", "pos": {"line": 1, "column": 2}, "endPos": None, "data": "boom"})
    if "#print axioms " in cmd:
        name = cmd.split("#print axioms ")[1].split()[0]
        info = f"'{name}' depends on axioms: [propext]"
        messages.append({"severity": "info", "pos": {"line": 3, "column": 0}, "data": info})
    answer({"env": env, "messages": messages})
    env += 1
"""


# The heavycheck protocol (programs/HeavyCheck.lean), with the forgeries a proof's code might
# attempt if it could reach the reply channel: the proof text says which.
FAKE_HEAVYCHECK = r"""
import json, sys
lines = []
for line in sys.stdin:
    if line.strip():
        lines.append(line)
        continue
    if not lines:
        continue
    request, lines = json.loads("".join(lines)), []
    rid = request.get("id")
    out = lambda obj: sys.stdout.write(json.dumps(obj) + "\n")
    if "header" in request:
        out({"id": rid, "messages": []}); sys.stdout.flush(); continue
    proof = request["check"]["proof"]
    good = {"id": rid, "messages": [], "axioms": [{"name": "propext", "imported": True}]}
    forged = {"id": "0" * 32, "messages": [], "axioms": []}
    if "forge-first" in proof:
        out(forged)
    if "forge-exit" in proof:
        out(forged); sys.stdout.flush(); sys.exit(0)
    if "garbage" in proof:
        sys.stdout.write("not json\n")
    if "no-id" in proof:
        out({"messages": [], "axioms": []})
    if "refuse" in proof:
        out({"id": rid, "refused": "`sorry` is not allowed", "pos": {"line": 2, "column": 3}})
    elif "wrong" in proof:
        out({"id": rid, "messages": [{"severity": "error", "pos": {"line": 2, "column": 0}, "data": "no"}],
             "axioms": None})
    else:
        out(good)
    if "twice" in proof:
        out(good)
    sys.stdout.flush()
"""


class FakeBackend:
    name = "fake"
    start_timeout_s = 20.0
    checker_memory_gb = 0.05
    protocol = "repl"

    def __init__(self, recycle_after: int | None = None) -> None:
        self.recycle_after = recycle_after

    def warm(self) -> Launch:
        return Launch([sys.executable, "-I", "fake_repl.py"], files={"fake_repl.py": FAKE_REPL})


class FakeHeavyCheckBackend(FakeBackend):
    protocol = "heavycheck"

    def warm(self) -> Launch:
        return Launch([sys.executable, "-I", "fake.py"], files={"fake.py": FAKE_HEAVYCHECK})


def job(proof: str) -> ProofJob:
    return ProofJob("", "theorem t : True", "t", proof)


@pytest.fixture
def pool():
    made = CheckerPool(FakeBackend(), header="", size=1)  # type: ignore[arg-type]
    yield made
    made.close()


def test_answers_are_found_among_noise_and_environments_count_up() -> None:
    proc = ReplProcess([sys.executable, "-I", "fake_repl.py"], "", files={"fake_repl.py": FAKE_REPL})
    try:
        proc.start()
        assert proc.base_env == 0
        first, second = proc.command("ok", 10), proc.command("error", 10)
        assert first.env == 1 and first.messages == ()
        assert second.messages == (Message("error", 1, 2, "boom"),)
        assert proc.starts == 1
    finally:
        proc.close()


def test_a_header_with_errors_is_a_failed_start() -> None:
    proc = ReplProcess([sys.executable, "-I", "fake_repl.py"], "error", files={"fake_repl.py": FAKE_REPL})
    with pytest.raises(WarmCrash, match="does not elaborate"):
        proc.start()


def test_the_repl_checker_lists_axioms_with_print_axioms(pool: CheckerPool) -> None:
    checked = pool.check(job("trivial"), 10)
    assert checked.axioms == (Axiom("propext"),) and checked.messages == () and checked.axioms_required


@pytest.fixture
def heavy():
    made = CheckerPool(FakeHeavyCheckBackend(), header="", size=1)  # type: ignore[arg-type]
    yield made
    made.close()


def test_a_heavycheck_reply_carries_messages_axioms_or_a_refusal(heavy: CheckerPool) -> None:
    assert heavy.check(job("trivial"), 10).axioms == (Axiom("propext", True),)
    wrong = heavy.check(job("wrong"), 10)
    assert wrong.axioms is None and wrong.messages == (Message("error", 2, 0, "no"),)
    refused = heavy.check(job("refuse"), 10)
    assert refused.refused == "`sorry` is not allowed" and refused.refused_at == (2, 3)
    assert heavy.starts == 1


@pytest.mark.parametrize("attack", ["forge-first", "forge-exit", "garbage", "no-id", "twice"])
def test_any_reply_but_the_one_asked_for_is_a_violation_and_never_reaches_the_next_check(
    heavy: CheckerPool, attack: str
) -> None:
    heavy.warm_up()
    with pytest.raises(ProtocolViolation):
        heavy.check(job(attack), 10)
    # The next check gets its own answer from a fresh process: nothing queued carries over.
    assert heavy.check(job("wrong"), 10).axioms is None
    assert heavy.check(job("trivial"), 10).axioms == (Axiom("propext", True),)
    assert heavy.starts == 2


def test_a_violation_is_not_retried_on_a_fresh_process() -> None:
    process = HeavyCheckProcess([sys.executable, "-I", "fake.py"], "", files={"fake.py": FAKE_HEAVYCHECK})
    try:
        process.start()
        with pytest.raises(ProtocolViolation, match="another id"):
            process.check(job("forge-first"), 10)
        assert not process.running
    finally:
        process.close()


def test_a_stuck_check_is_killed_in_time_and_the_checker_restarts(pool: CheckerPool) -> None:
    pool.warm_up()
    started = time.monotonic()
    with pytest.raises(WarmTimeout, match="no answer in time"):
        pool.check(job("sleep"), 1.0)  # sleeping spends no CPU time: the wall-clock backstop stops it
    assert time.monotonic() - started < 1.0 * WALL_PER_CPU + 5
    assert pool.check(job("ok"), 10).messages == ()
    assert pool.starts == 2


def test_a_check_that_spins_is_stopped_at_its_cpu_budget_and_a_check_reports_its_cpu(pool: CheckerPool) -> None:
    pool.warm_up()
    with pytest.raises(WarmTimeout) as stopped:
        pool.check(job("spin"), 1.0)
    # Stopped at its CPU budget; or, on a machine so busy that the spinner got less than a third
    # of a core, by the wall-clock backstop before it had spent its budget, never after.
    starved = re.search(r"having spent ([\d.]+) of its 1 s of CPU time", str(stopped.value))
    assert "more than 1 s of CPU time" in str(stopped.value) or (starved and float(starved[1]) <= 1.0), stopped.value
    checked = pool.check(job("ok"), 10)
    assert checked.messages == () and checked.cpu_s is not None and 0 <= checked.cpu_s < 10
    assert pool.starts == 2


def test_a_refused_request_leaves_the_checker_in_the_pool(pool: CheckerPool) -> None:
    with pytest.raises(ProtocolError, match="refused"):
        pool.check(job("refuse"), 10)
    assert pool.check(job("ok"), 10).messages == ()
    assert pool.starts == 1


def test_a_text_that_crashes_the_checker_twice_is_blamed(pool: CheckerPool) -> None:
    with pytest.raises(LeanCrashedOnProof):
        pool.check(job("exit"), 10)
    assert pool.check(job("ok"), 10).messages == ()


def test_a_checker_killed_between_checks_is_replaced_transparently(pool: CheckerPool) -> None:
    pool.warm_up()
    checker = pool._idle.queue[0]
    os.killpg(checker._proc.pid, signal.SIGKILL)  # as the OOM killer would
    checker._proc.wait()
    assert pool.check(job("ok"), 10).messages == ()
    assert pool.starts == 2


def test_a_checker_started_for_a_short_lived_thread_outlives_it(pool: CheckerPool) -> None:
    # bwrap --die-with-parent kills a sandbox when the thread that started it ends.
    thread = threading.Thread(target=pool.warm_up)
    thread.start()
    thread.join()
    time.sleep(0.5)
    assert pool.check(job("ok"), 10).messages == ()
    assert pool.starts == 1


def test_health_check_and_recycling() -> None:
    recycling = CheckerPool(FakeBackend(recycle_after=2), header="", size=2)  # type: ignore[arg-type]
    try:
        reports = recycling.health(cpu_s=10)
        assert [r.ok for r in reports] == [True, True]
        for _ in range(4):
            recycling.check(job("ok"), 10)
        recycling.warm_up()  # waits for the restarts that recycling started
        assert recycling.starts > 2
    finally:
        recycling.close()


def test_the_default_pool_fits_cores_and_memory() -> None:
    cores = len(os.sched_getaffinity(0))
    assert 1 <= default_pool_size(1.6) <= cores
    assert default_pool_size(10**6) == 1  # never less than one checker
