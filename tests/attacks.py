"""Run reward-hacking answers through a real `GymPool`, the path a model's answer takes.

Each gym's adversarial test (tests/test_attacks_<gym>.py) runs the suites the gym declares
(`Gym.attack_suites()`, gyms/attacks.py) or a list of its own through `assert_suite_holds`. For
every attack it asserts:

* it is contained (gyms/attacks.py `judge`): the outcome is `fail` (never `pass`, never `error`)
  within the gym's step timeout plus slack, the gym refused it by its own checks (no
  `info["gym_exception"]`: its code did not raise), and its feedback is readable and names the
  reason where the attack gives one (`Attack.reason`);
* a canary directory outside every work directory is unchanged;

and after all of them, in the same worker (`GymPool(1)`): a normal good answer still passes
and a normal bad answer still fails (no state left behind that corrupts later verdicts), and
once the pool has closed no work directory under /dev/shm and no sandbox process survives.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path

from gyms.attacks import CONTAINED, Attack, AttackSuite, run_suite
from gyms.base import Gym, Task
from gyms.pool import GymPool
from gyms.sandbox import alive, shm_root, uids_of

# Attacks try to write or link here; nothing may ever change in it.
CANARY = Path("/tmp/heavygym-canary")


def _snapshot(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every entry under `path`: (mode, uid, size, mtime_ns), links not followed."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames]:
            st = os.lstat(os.path.join(dirpath, name))
            found[os.path.join(dirpath, name)] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    st = os.lstat(path)
    found[str(path)] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    return found


def prepare_canary() -> dict[str, tuple[int, int, int, int]]:
    """Made once and never rewritten, so tests running side by side do not disturb each other."""
    CANARY.mkdir(mode=0o755, exist_ok=True)
    victim = CANARY / "victim.txt"
    if not victim.exists():
        victim.write_text("untouched\n")
    return _snapshot(CANARY)


def _workdirs_of(workers: set[int]) -> set[str]:
    """Work directories made by these worker processes (their names carry the maker's pid)."""
    stamps = tuple(f"pid{pid}." for pid in workers)
    return {name for name in os.listdir(shm_root()) if name.startswith("heavygym") and any(s in name for s in stamps)}


def _sandbox_processes_of(workers: set[int]) -> set[int]:
    """Live (not zombie) processes under a sandbox uid handed out by these worker processes."""
    uid_ranges = [uids_of(pid) for pid in workers]
    pids = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if any(entry.stat().st_uid in ids for ids in uid_ranges) and alive(int(entry.name)):
                pids.add(int(entry.name))
        except FileNotFoundError:
            continue
    return pids


def _children() -> set[int]:
    return {child.pid for child in multiprocessing.active_children() if child.pid is not None}


def assert_attacks_fail(
    gym: Gym,
    task: Task,
    attacks: Sequence[Attack],
    good: str,
    bad: str,
    min_attacks: int = 10,
) -> None:
    """Every attack contained (gyms/attacks.py's judge), the controls unaffected, nothing changed
    outside the sandbox and nothing left behind."""
    assert_suite_holds(gym, AttackSuite("test", task, tuple(attacks), good, bad), min_attacks)


def assert_suite_holds(gym: Gym, suite: AttackSuite, min_attacks: int = 10) -> None:
    assert len(suite.attacks) >= min_attacks, f"at least {min_attacks} attacks per gym, got {len(suite.attacks)}"
    canary = prepare_canary()
    problems = []
    workers = set()  # every worker process the pool ran (a killed one is replaced)

    def after_each(label: str) -> None:
        nonlocal canary
        workers.update(_children())
        if _snapshot(CANARY) != canary:
            problems.append(f"{label}: changed {CANARY} outside the sandbox")
            canary = _snapshot(CANARY)

    with GymPool(1, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:
        workers |= _children()
        report = run_suite(gym, suite, pool, after_each)
        workers |= _children()
    problems += [f"{f.label}: {f.verdict}: {f.detail}" for f in report.findings if f.verdict != CONTAINED]
    problems += list(report.controls)
    leaked = _workdirs_of(workers)
    if leaked:
        problems.append(f"work directories left on {shm_root()}: {sorted(leaked)}")
    survivors = _sandbox_processes_of(workers)
    if survivors:
        problems.append(f"sandbox processes still running: {sorted(survivors)}")
    assert not problems, "\n".join(problems)
