"""Run reward-hacking answers through a real `GymPool`, the path a model's answer takes.

Each gym's adversarial test (tests/test_attacks_<gym>.py) lists answers written as a reward
hacker would and calls `assert_attacks_fail`. For every attack it asserts:

* the outcome is `fail` (never `pass`, never `error`) within the gym's step timeout plus slack,
  and the gym refused it by its own checks (no `info["gym_exception"]`: its code did not raise);
* the feedback is non-empty, readable and holds no Python traceback, and names the reason
  where the attack gives one (`Attack.reason`);
* a canary directory outside every work directory is unchanged;

and after all of them, in the same worker (`GymPool(1)`): a normal good answer still passes
and a normal bad answer still fails (no state left behind that corrupts later verdicts), and
once the pool has closed no work directory under /dev/shm and no sandbox process survives.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gyms.base import GYM_EXCEPTION, Gym, Outcome, Task
from gyms.conformance import TIMEOUT_SLACK_S
from gyms.pool import GymPool
from gyms.sandbox import alive, shm_root, uids_of

# Attacks try to write or link here; nothing may ever change in it.
CANARY = Path("/tmp/heavygym-canary")


@dataclass(frozen=True)
class Attack:
    label: str  # what it tries, e.g. "forged verdict in an ifdef __ICARUS__ branch"
    answer: str
    task: Task | None = None  # None: the task passed to assert_attacks_fail
    reason: str | None = None  # a regular expression the feedback must match: it says why


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
    assert len(attacks) >= min_attacks, f"at least {min_attacks} attacks per gym, got {len(attacks)}"
    canary = prepare_canary()
    problems = []
    workers = set()  # every worker process the pool ran (a killed one is replaced)
    with GymPool(1, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:
        for attack in attacks:
            workers |= _children()
            target = attack.task or task
            episode = gym.open(target)
            call = pool.step(episode, attack.answer)
            call.episode.close()
            res = call.result
            what = f"{attack.label}: {res.outcome.value} (reward {res.reward:g}) in {call.service_s:.1f} s"
            if res.outcome is not Outcome.FAIL:
                problems.append(f"{what}; feedback: {res.observation[:300]!r}; info: {str(res.info)[:300]}")
            elif GYM_EXCEPTION in res.info:  # a fail, but by accident: the gym's own code raised on it
                problems.append(f"{what}: the gym raised on it: {res.info[GYM_EXCEPTION]}")
            elif call.service_s > gym.step_timeout_s + TIMEOUT_SLACK_S:
                problems.append(f"{what}: slower than the step timeout {gym.step_timeout_s:g} s")
            elif not res.observation.strip() or "Traceback (most recent call last)" in res.observation:
                problems.append(f"{what}: unreadable feedback {res.observation[:300]!r}")
            elif attack.reason and not re.search(attack.reason, res.observation):
                problems.append(f"{what}: the feedback does not say why ({attack.reason!r}): {res.observation[:300]!r}")
            if _snapshot(CANARY) != canary:
                problems.append(f"{attack.label}: changed {CANARY} outside the sandbox")
                canary = _snapshot(CANARY)
        # The same worker, after every attack: verdicts are unaffected.
        for answer, expected in ((good, Outcome.PASS), (bad, Outcome.FAIL), (good, Outcome.PASS)):
            workers |= _children()
            call = pool.step(gym.open(task), answer)
            call.episode.close()
            if call.result.outcome is not expected:
                problems.append(f"after the attacks a normal answer got {call.result.outcome.value}, expected "
                                f"{expected.value}: {call.result.observation[:300]!r}")  # fmt: skip
        workers |= _children()
    leaked = _workdirs_of(workers)
    if leaked:
        problems.append(f"work directories left on {shm_root()}: {sorted(leaked)}")
    survivors = _sandbox_processes_of(workers)
    if survivors:
        problems.append(f"sandbox processes still running: {sorted(survivors)}")
    assert not problems, "\n".join(problems)
