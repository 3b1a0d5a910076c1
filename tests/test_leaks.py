"""Nothing outlives a gym worker: not its episodes' work directories, not its warm checkers'
directories, not a sandboxed process. Real worker processes, real bwrap sandboxes.

Every directory and sandboxed command of a test carries a tag of its own, and the sandbox
uids of a worker derive from its pid, so each test checks exactly what its own pool made
while other work runs on the machine (`FilesGym.directories_left`, `.processes_left`).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from toy_gyms import FilesGym

from gyms import Outcome
from gyms.pool import GymPool
from gyms.sandbox import _OWNER_NAME, Sandbox, remove_workdirs_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids of their own need a root host")


@pytest.fixture
def gym() -> FilesGym:
    return FilesGym(tag=f"{random.randrange(10**9):09d}")


def opened(gym: FilesGym, pool: GymPool, pids: set[int]):
    """An episode after one step (its work directory made, the worker's warm checker started)."""
    call = pool.step(gym.open(gym.tasks()[0]), "wrong")
    assert call.result.outcome is Outcome.FAIL and not call.result.done, call.result
    pids.add(call.result.info["pid"])
    return call


def test_a_worker_killed_mid_step_leaves_nothing_but_what_open_episodes_hold(gym):
    pids: set[int] = set()
    with GymPool(workers=1, step_timeout_s=1.0) as pool:
        kept = opened(gym, pool, pids)
        first_worker = next(iter(pids))
        crashed = pool.step(gym.open(gym.tasks()[1]), "crash")  # dies with a sandbox running
        assert crashed.result.outcome is Outcome.ERROR and "died" in crashed.result.info["error"]
        # The dead worker was cleaned up before the call returned: its warm checker's and the
        # crashed episode's directories are gone, the open episode's stays for its next turn.
        assert gym.directories_left({first_worker}) == [Path(kept.result.info["workdir"]).name]
        assert gym.processes_left({first_worker}) == []
        finished = pool.step(kept.episode, "pass")  # on the replacement worker, files intact
        assert finished.result.outcome is Outcome.PASS, finished.result.observation
        pids.add(finished.result.info["pid"])
        assert len(pids) == 2
        finished.episode.close()
    assert gym.directories_left(pids) == []
    assert gym.processes_left(pids) == []


def test_a_timed_out_worker_leaves_nothing(gym):
    pids: set[int] = set()
    with GymPool(workers=1, step_timeout_s=0.1) as pool:  # the host waits 0.1 * 1.5 + 5 s
        kept = opened(gym, pool, pids)
        hung = pool.step(gym.open(gym.tasks()[0]), "sleep:600")
        assert hung.result.outcome is Outcome.ERROR and "host timeout" in hung.result.info["error"]
        assert gym.processes_left(pids) == []
        assert gym.directories_left(pids) == [Path(kept.result.info["workdir"]).name]  # still open
        opened(gym, pool, pids)  # the replacement serves
    assert gym.directories_left(pids) == []
    assert gym.processes_left(pids) == []


def test_an_episode_the_caller_dropped_loses_its_directory_with_the_worker(gym):
    pids: set[int] = set()
    with GymPool(workers=1, step_timeout_s=1.0) as pool:
        opened(gym, pool, pids)  # dropped at once: nobody can step it again
        pool.step(gym.open(gym.tasks()[0]), "crash")
        assert gym.directories_left(pids) == []
        assert gym.processes_left(pids) == []


def test_closing_the_pool_removes_the_directories_of_open_episodes(gym):
    pids: set[int] = set()
    with GymPool(workers=2, step_timeout_s=1.0) as pool:
        calls = [opened(gym, pool, pids) for _ in range(4)]
        made = gym.directories_left(pids)
        assert {Path(c.result.info["workdir"]).name for c in calls} <= set(made)
        assert len(made) == 4 + len(pids)  # one per episode, one warm checker's per worker
        assert gym.processes_left(pids) != []  # the warm checkers
    assert gym.directories_left(pids) == []
    assert gym.processes_left(pids) == []
    for call in calls:
        call.episode.close()  # after the pool: a no-op, never an error


def test_a_directory_of_a_live_process_that_reuses_the_pid_is_kept(gym, tmp_path):
    mine = Sandbox("bwrap").workdir(prefix=f"heavygym-toy-{gym.tag}-")
    try:
        assert remove_workdirs_of(os.getpid()) == 0  # this process runs: its directory stays
        assert mine.path.is_dir()
        dead_start = mine.path.with_name(_OWNER_NAME.sub(f"pid{os.getpid()}.1-abcdefgh", mine.path.name))
        dead_start.mkdir()  # the same pid, an earlier start: a process that has ended
        assert remove_workdirs_of(os.getpid()) == 1
        assert not dead_start.exists() and mine.path.is_dir()
    finally:
        mine.cleanup()
