"""The Lean gym on the real wasm Lean: references, the checker's own refusal of everything but a
proof term, the reply channel, multi-turn feedback, timeouts, cold checks and the conformance
check.

The wasm Lean is installed by scripts/install-lean-wasm.sh if missing (a ~121 MB download
from npm, once). One warm checker (~1.4 GB, ~20-40 s to start) serves the whole module.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import harness, reply_shapes

from gyms.base import Outcome
from gyms.lean import LeanGym
from gyms.lean.acceptance import judge
from gyms.lean.backends import WasmBackend
from gyms.lean.checker import CheckerPool, ColdChecker
from gyms.lean.episode import client
from gyms.lean.location import WasmLean, default_dir
from gyms.lean.protocol import ProofJob
from gyms.lean.tasks import core_tasks
from gyms.sandbox import Limits, Sandbox
from gyms.warm import WALL_PER_CPU
from tools.lean_wasm.glue import REPLY_DEVICE

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wasm_lean() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        why = "node and npm are needed for the wasm Lean (Debian: apt-get install nodejs npm)"
        if os.environ.get("CI"):  # scripts/setup.sh installs them: missing is a failure there
            pytest.fail(why)
        pytest.skip(why)
    if not WasmBackend().lean.installed():
        script = ROOT / "scripts" / "install-lean-wasm.sh"
        subprocess.run(["bash", str(script)], check=True, timeout=1200, env={**os.environ, "PYTHON": sys.executable})
    return default_dir()


@pytest.fixture(scope="module")
def gym(wasm_lean: Path) -> LeanGym:
    return LeanGym()


@pytest.fixture(scope="module")
def pool(gym: LeanGym) -> CheckerPool:
    """The warm checker that every episode of this process uses."""
    made = client(gym.settings, "")
    assert isinstance(made, CheckerPool)
    made.warm_up()
    return made


STATEMENT = "theorem t (a b : Nat) : a + b = b + a"


def _check(pool: CheckerPool, proof: str, statement: str = STATEMENT, name: str = "t"):
    checked = pool.check(ProofJob("", statement, name, proof), 60)
    return checked, judge(checked.messages, checked.axioms, checked.axioms_required, checked.refused)


def test_every_reference_passes_and_every_wrong_proof_fails(gym: LeanGym, pool: CheckerPool) -> None:
    for task in core_tasks():
        assert _check(pool, task.reference, task.statement, task.name)[1].accepted, task.id
        for wrong in task.wrong:
            assert not _check(pool, wrong, task.statement, task.name)[1].accepted, (task.id, wrong)


# Proofs that the checker itself must refuse before elaborating anything: the gym's text screen
# is not in this path, so each of these shows that the guarantee does not rest on it.
REFUSED_BY_THE_CHECKER = [
    ("by omega\n#eval IO.println 1", "more after it"),
    ("by omega\n#eval! IO.println 1", "more after it"),
    ("Nat.add_comm a b\ntheorem u : True := trivial", "more after it"),
    ("by\n  have : '\"' = '\"' := rfl\n  omega\n#eval (IO.println 1)", "more after it"),
    ("by sorry", "`sorry`"),
    ("by native_decide", "`native_decide`"),
    ("by\n  have : 2 < 3 := by decide +native\n  omega", "`native`"),
    ("by\n  run_tac pure ()", "`run_tac`"),
    ("by\n  set_option debug.skipKernelTC true in omega", "debug.skipKernelTC"),
    ("by\n  simp (config := { maxSteps := 10 }) [Nat.add_comm]", "literal"),
    ("by\n  simp (maxSteps := Nat.succ 10) [Nat.add_comm]", "literal"),
    ("by\n  have := (IO.println \"x\" ()).fst\n  omega", "IO"),
    ("by\n  have := «IO».println\n  omega", "IO"),
    ("by exact Lean.ofReduceBool _ _ rfl", "ofReduceBool"),
    ("by\n  have := include_str \"/etc/passwd\"\n  omega", "include_str"),
    ("by omega\nwhere helper : Nat := 1", "where"),
    ("unsafe (Nat.add_comm a b)", "`unsafe`"),
]


@pytest.mark.parametrize(("proof", "why"), REFUSED_BY_THE_CHECKER)
def test_the_checker_refuses_what_a_proof_does_not_need(pool: CheckerPool, proof: str, why: str) -> None:
    checked, verdict = _check(pool, proof)
    assert checked.refused and why in checked.refused, checked
    assert not verdict.accepted and checked.messages == ()


def test_what_a_proof_may_use_still_passes(pool: CheckerPool) -> None:
    for proof in [
        "by\n  set_option maxRecDepth 1000 in omega",
        "by\n  have h : 2 < 3 := by decide\n  omega",
        "by\n  simp +arith [Nat.add_comm]",
        "by\n  open Nat in omega",
        "by\n  have : «Nat».add a b = a + b := rfl\n  omega -- #eval sorry",
        "by\n  have : '\"'.toNat = 34 := rfl\n  exact Nat.add_comm a b",
    ]:
        checked, verdict = _check(pool, proof)
        assert verdict.accepted, (proof, checked)


def test_a_proof_of_another_name_is_not_accepted(pool: CheckerPool) -> None:
    _, verdict = _check(pool, "rfl", "theorem other : 1 = 1", "t")
    assert not verdict.accepted and "not declared" in verdict.problems[0]


PROBE = """
def tryWrite (path : String) : IO Unit := do
  try
    let h ← IO.FS.Handle.mk path .append
    h.putStr s!"FORGED {path}\\n"
    h.flush
  catch e => IO.eprintln s!"{path}: {e}"

public def main : IO Unit := do
  let reply ← IO.FS.Handle.mk "REPLY_DEVICE" .append
  reply.putStr "REPLY\\n"
  reply.flush
  tryWrite "REPLY_DEVICE"
  tryWrite "/proc/self/fd/3"
  tryWrite "/proc/self/fd/1"
  tryWrite "/dev/fd/1"
  tryWrite "/dev/stdout"
  tryWrite "/dev/stderr"
  tryWrite "/dev/tty"
  tryWrite "/dev/tty1"
  IO.println "FORGED println"
  (← IO.getStdout).putStrLn "FORGED stdout stream"
""".replace("REPLY_DEVICE", REPLY_DEVICE)


def test_only_the_reply_device_reaches_the_hosts_stdout_and_it_opens_once(wasm_lean: Path) -> None:
    """Whatever Lean code writes to the devices the wasm file system has, the host's stdout
    (the checker's reply channel) gets only the one write through the reply device."""
    sandbox = Sandbox()
    lean = WasmLean(wasm_lean)
    with sandbox.workdir(prefix="heavygym-lean-probe-") as workdir:
        (workdir.path / "Probe.lean").write_text(PROBE)
        (workdir.path / "Probe.lean").chmod(0o644)
        argv = ["node", "--no-wasm-tier-up", str(lean.lean_js), "--run", "Probe.lean"]
        limits = Limits(wall_s=300, cpu_s=600, memory_mb=None, processes=512, open_files=4096)
        run = sandbox.run(argv, workdir, limits=limits, env={"LEAN_PATH": str(lean.lib)})
    assert run.stdout == "REPLY\n", (run.stdout, run.stderr[-2000:])
    assert "FORGED println" in run.stderr  # what Lean prints goes to stderr, not lost silently
    assert f"{REPLY_DEVICE}: " in run.stderr and "/proc/self/fd/3: " in run.stderr  # refused: opened once


def test_multi_turn_feedback_points_into_the_proof(gym: LeanGym, pool: CheckerPool) -> None:
    task = next(t for t in gym.tasks() if t.id == "core/nat_gap_two")
    episode = gym.open(task)
    first = episode.step("```lean\nby\n  intro x\n  exact Nat.lt_trans h₁ h₂\n```")
    assert first.outcome is Outcome.FAIL and not first.done
    assert "line 2, column" in first.observation and "You may try again" in first.observation
    second = episode.step(task.reference)
    assert second.outcome is Outcome.PASS and second.reward == 1.0 and second.done and second.turn == 2


def test_candidates_keep_their_promises(gym: LeanGym, pool: CheckerPool) -> None:
    task = gym.tasks()[1]
    for candidate in gym.candidates(task, random.Random(0)):
        if candidate.expect == "timeout":
            continue
        result = gym.open(task).step(candidate.action)
        assert (result.outcome is Outcome.PASS) == (candidate.expect == "pass"), (candidate.label, result.observation)
        assert result.outcome is not Outcome.ERROR


@pytest.mark.parametrize("shape", reply_shapes("x", "lean"))
def test_a_correct_proof_passes_in_every_shape_of_reply(gym: LeanGym, pool: CheckerPool, shape: str) -> None:
    task = next(t for t in gym.tasks() if "\n" in (t.reference or ""))  # line endings inside the proof too
    for proof in (task.reference or "", f"{task.metadata['statement']} := {task.reference}"):
        result = gym.open(task).step(reply_shapes(proof, "lean")[shape])
        assert result.outcome is Outcome.PASS, (proof, result.observation[:300])


def test_a_looping_proof_times_out_as_a_fail_and_the_checker_comes_back(gym: LeanGym, pool: CheckerPool) -> None:
    task = gym.tasks()[0]
    loop = next(c for c in gym.candidates(task, random.Random(0)) if c.expect == "timeout")
    starts = pool.starts
    started = time.monotonic()
    result = gym.open(task).step(loop.action)
    assert result.outcome is Outcome.FAIL and result.info["timed_out"]
    assert time.monotonic() - started < gym.settings.check_timeout_s * WALL_PER_CPU + 5  # the wall-clock backstop
    assert gym.open(task).step(task.reference).outcome is Outcome.PASS
    assert pool.starts == starts + 1
    assert all(report.ok for report in pool.health())


def test_a_cold_checker_is_a_lean_process_per_check(wasm_lean: Path) -> None:
    cold = LeanGym(checker="cold")
    assert isinstance(client(cold.settings, ""), ColdChecker)
    task = cold.tasks()[0]
    assert cold.open(task).step(task.reference).outcome is Outcome.PASS
    wrong = cold.open(task).step(task.metadata["wrong"][0])
    assert wrong.outcome is Outcome.FAIL and "line 1, column" in wrong.observation


def test_harness_gyms_check_lean(wasm_lean: Path) -> None:
    """The conformance check as a user runs it: a gym pool worker with its own warm checker.
    The first task carries the looping candidate, so a timeout is among the checks."""
    done = harness("gyms", "check", "lean", "--limit", "2", "--gym-workers", "1", "--json", timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] and report["tasks"] == 2, [c for c in report["checks"] if c["problem"]]
    assert any(check["expect"] == "timeout" for check in report["checks"])
