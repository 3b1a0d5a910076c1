"""Run reward-hacking answers through a real `GymPool`, the path a model's answer takes.

Each gym's adversarial test (tests/test_attacks_<gym>.py) lists answers written as a reward
hacker would and calls `assert_attacks_fail`. For every attack it asserts:

* the outcome is `fail` (never `pass`, never `error`) within the gym's step timeout plus slack;
* the feedback is non-empty, readable and holds no Python traceback;
* a canary directory outside every work directory is unchanged;

and after all of them, in the same worker (`GymPool(1)`): a normal good answer still passes
and a normal bad answer still fails (no state left behind that corrupts later verdicts), and
once the pool has closed no work directory under /dev/shm and no sandbox process survives.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gyms.base import Gym, Outcome, Task
from gyms.conformance import TIMEOUT_SLACK_S
from gyms.pool import GymPool
from gyms.sandbox import shm_root

# Attacks try to write or link here; nothing may ever change in it.
CANARY = Path("/tmp/heavygym-canary")


@dataclass(frozen=True)
class Attack:
    label: str  # what it tries, e.g. "forged verdict in an ifdef __ICARUS__ branch"
    answer: str
    task: Task | None = None  # None: the task passed to assert_attacks_fail


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
    CANARY.mkdir(mode=0o755, exist_ok=True)
    (CANARY / "victim.txt").write_text("untouched\n")
    return _snapshot(CANARY)


def _shm_entries() -> set[str]:
    return {name for name in os.listdir(shm_root()) if name.startswith("heavygym")}


def _sandbox_processes() -> set[int]:
    """Processes running under a sandbox uid (see gyms/sandbox.py: uids from 1,000,000 up)."""
    pids = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid >= 1_000_000:
                    pids.add(int(entry.name))
            except FileNotFoundError:
                continue
    return pids


def assert_attacks_fail(
    gym: Gym,
    task: Task,
    attacks: Sequence[Attack],
    good: str,
    bad: str,
    min_attacks: int = 10,
) -> None:
    assert len(attacks) >= min_attacks, f"at least {min_attacks} attacks per gym, got {len(attacks)}"
    canary = prepare_canary()
    shm_before, procs_before = _shm_entries(), _sandbox_processes()
    problems = []
    with GymPool(1, step_timeout_s=gym.step_timeout_s) as pool:
        for attack in attacks:
            target = attack.task or task
            episode = gym.open(target)
            call = pool.step(episode, attack.answer)
            call.episode.close()
            res = call.result
            what = f"{attack.label}: {res.outcome.value} (reward {res.reward:g}) in {call.service_s:.1f} s"
            if res.outcome is not Outcome.FAIL:
                problems.append(f"{what}; feedback: {res.observation[:300]!r}; info: {str(res.info)[:300]}")
            elif call.service_s > gym.step_timeout_s + TIMEOUT_SLACK_S:
                problems.append(f"{what}: slower than the step timeout {gym.step_timeout_s:g} s")
            elif not res.observation.strip() or "Traceback (most recent call last)" in res.observation:
                problems.append(f"{what}: unreadable feedback {res.observation[:300]!r}")
            if _snapshot(CANARY) != canary:
                problems.append(f"{attack.label}: changed {CANARY} outside the sandbox")
                canary = _snapshot(CANARY)
        # The same worker, after every attack: verdicts are unaffected.
        for answer, expected in ((good, Outcome.PASS), (bad, Outcome.FAIL), (good, Outcome.PASS)):
            call = pool.step(gym.open(task), answer)
            call.episode.close()
            if call.result.outcome is not expected:
                problems.append(f"after the attacks a normal answer got {call.result.outcome.value}, expected "
                                f"{expected.value}: {call.result.observation[:300]!r}")  # fmt: skip
    leaked = _shm_entries() - shm_before
    if leaked:
        problems.append(f"work directories left on {shm_root()}: {sorted(leaked)}")
    survivors = _sandbox_processes() - procs_before
    if survivors:
        problems.append(f"sandbox processes still running: {sorted(survivors)}")
    assert not problems, "\n".join(problems)
