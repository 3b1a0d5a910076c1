from __future__ import annotations

import dataclasses
import os
import pickle
import random
import subprocess
import threading
import time

import pytest
from toy_gyms import ToyEpisode, ToyGym

from gyms import EpisodeFinishedError, Outcome, Task
from gyms.base import GYM_EXCEPTION
from gyms.pool import GymPool, default_workers


@pytest.fixture(scope="module")
def gym() -> ToyGym:
    return ToyGym()


@pytest.fixture(scope="module")
def pool():
    with GymPool(workers=2, step_timeout_s=1.0) as p:
        yield p


def test_steps_run_in_worker_processes_and_episodes_come_back(gym, pool):
    episode = gym.open(gym.tasks()[0])
    first = pool.step(episode, "wrong")
    assert first.result.outcome is Outcome.FAIL and not first.result.done
    assert first.episode.turn == 1
    second = pool.step(first.episode, "pass")
    assert second.result.outcome is Outcome.PASS and second.result.reward == 1.0 and second.result.done
    assert second.result.turn == 2
    assert second.result.info["pid"] != __import__("os").getpid()


def test_how_an_episode_ended_comes_back_from_the_worker(gym, pool):
    episode = gym.open(gym.tasks()[0])  # three turns
    for turn in (1, 2):
        call = pool.step(episode, "wrong")
        assert (call.result.turn, call.result.terminated, call.result.truncated) == (turn, False, False)
        episode = call.episode
    last = pool.step(episode, "wrong").result
    assert (last.turn, last.terminated, last.truncated, last.done) == (3, False, True, True)
    passed = pool.step(gym.open(gym.tasks()[0]), "pass").result
    assert (passed.terminated, passed.truncated) == (True, False)
    # errors the pool makes up (a result that cannot come back, a worker that died) end the episode as terminated
    for action in ("unpicklable", "crash"):
        error = pool.step(gym.open(gym.tasks()[0]), action)
        assert error.result.outcome is Outcome.ERROR and error.episode.done
        assert (error.result.terminated, error.result.truncated) == (True, False)


def test_an_episode_is_closed_where_it_lives(gym, pool):
    finished = pool.step(gym.open(gym.tasks()[0]), "pass")
    assert finished.episode.closed_in == finished.result.info["pid"] != os.getpid()  # by its worker
    between = pool.step(gym.open(gym.tasks()[0]), "wrong")  # three turns: not finished
    assert between.episode.closed_in is None
    never_stepped = gym.open(gym.tasks()[0])
    pool.close_episode(never_stepped)
    assert never_stepped.closed_in == os.getpid()  # it holds nothing anywhere else
    pool.close_episode(between.episode)  # closed on its worker, by a job that is no step


def test_queue_wait_and_service_time_are_recorded(gym, pool):
    task = gym.tasks()[0]
    calls = [f.result() for f in [pool.submit(gym.open(task), "sleep:0.3") for _ in range(4)]]
    assert all(c.service_s >= 0.3 for c in calls)
    # two workers, four calls: the last two waited for a free worker
    waits = sorted(c.queue_wait_s for c in calls)
    assert waits[-1] >= 0.25
    assert {c.worker for c in calls} == {0, 1}


def test_a_dying_worker_becomes_an_error_and_is_replaced(gym, pool):
    task = gym.tasks()[0]
    restarts = pool.stats.restarts
    crashed = pool.step(gym.open(task), "crash")
    assert crashed.result.outcome is Outcome.ERROR and crashed.result.done
    assert "died" in crashed.result.info["error"]
    assert pool.stats.restarts == restarts + 1
    # the pool still serves, on both workers
    results = [f.result().result.outcome for f in [pool.submit(gym.open(task), "pass") for _ in range(4)]]
    assert results == [Outcome.PASS] * 4


def test_a_dead_worker_leaves_no_sandboxed_process_behind(gym, pool):
    # The worker dies while its sandbox is still starting; which stage the launch has reached
    # when the pool cleans up varies from round to round, so ten rounds cover more of them.
    for _ in range(10):
        seconds = f"{600 + random.random():.6f}"  # names this round's process among all others
        call = pool.step(gym.open(gym.tasks()[0]), f"orphan:{seconds}")
        assert call.result.outcome is Outcome.ERROR
        left = subprocess.run(["pgrep", "-f", f"sleep {seconds}"], capture_output=True, text=True).stdout.split()
        assert left == [], "the dead worker's sandbox outlived it"


def test_a_hung_step_hits_the_host_timeout(gym):
    with GymPool(workers=1, step_timeout_s=0.1) as pool:  # host allows 0.1 * 1.5 + 5 s
        call = pool.step(gym.open(gym.tasks()[0]), "sleep:30")
        assert call.result.outcome is Outcome.ERROR
        assert "host timeout" in call.result.info["error"]
        assert call.service_s < 10
        assert pool.step(gym.open(gym.tasks()[0]), "pass").result.outcome is Outcome.PASS


def test_a_gym_that_raises_on_an_answer_fails_it_and_records_the_exception(gym, pool):
    # Only the infrastructure makes an error: an answer that makes the checker raise must not
    # leave the loss, and the exception stays on record for the gym's author.
    call = pool.step(gym.open(gym.tasks()[0]), "raise")
    assert call.result.outcome is Outcome.FAIL and not call.result.done  # a fail like any other: turns are left
    assert call.result.info[GYM_EXCEPTION].startswith("RuntimeError: a bug in the gym (at ")
    assert "could not be checked" in call.result.observation and "RuntimeError" in call.result.observation
    assert "Traceback" not in call.result.observation  # the model sees one readable line


def test_an_infrastructure_error_or_a_result_that_cannot_travel_is_an_error(gym, pool):
    infra = pool.step(gym.open(gym.tasks()[0]), "infra").result
    assert infra.outcome is Outcome.ERROR and infra.info["error"] == "the checker's tool is missing"
    assert GYM_EXCEPTION not in infra.info
    stuck = pool.step(gym.open(gym.tasks()[0]), "unpicklable").result
    assert stuck.outcome is Outcome.ERROR and "the gym raised during the step" in stuck.info["error"]
    assert "Traceback" not in stuck.observation


def test_stats_count_calls_errors_gym_exceptions_and_busy_time(gym):
    with GymPool(workers=2, step_timeout_s=1.0) as pool:
        for action in ["pass", "wrong", "raise", "infra"]:
            pool.step(gym.open(gym.tasks()[0]), action)
        assert pool.stats.calls == 4 and pool.stats.errors == 1 and pool.stats.gym_exceptions == 1
        assert sum(pool.stats.busy_s) > 0


@dataclasses.dataclass  # eq=True: unhashable, so the pool could not remember it between turns
class ValueEpisode(ToyEpisode):
    task: Task
    max_turns: int = 3

    def __post_init__(self) -> None:
        super().__init__(self.task, self.max_turns)


def test_an_episode_the_pool_cannot_remember_is_refused_naming_the_fix(pool):
    with pytest.raises(TypeError, match=r"ValueEpisode cannot be stepped by a gym pool.*@dataclass\(eq=False\)"):
        pool.submit(ValueEpisode(Task("t", "p")), "pass")


def test_episode_rules():
    gym = ToyGym(max_turns=2)
    episode = gym.open(gym.tasks()[0])
    episode = pickle.loads(pickle.dumps(episode))
    assert episode.step("no").done is False
    assert episode.step("no").done is True  # turns exhausted
    with pytest.raises(EpisodeFinishedError, match="open a new one"):
        episode.step("pass")
    with pytest.raises(TypeError, match="an action is a str"):
        gym.open(Task("t", "p")).step(b"bytes")  # type: ignore[arg-type]


def test_default_size_is_the_core_count():
    assert default_workers() >= 1
    with pytest.raises(ValueError, match="at least one worker"):
        GymPool(workers=-1)


def test_an_episode_that_stays_on_its_worker_runs_every_turn_there():
    from toy_gyms import StickyGym

    gym = StickyGym(max_turns=10)
    with GymPool(workers=2, step_timeout_s=2.0) as pool:
        # Two episodes, one per worker: both workers are up (under load the second one's start
        # took longer than the first steps, which then both ran on the first), and each first step
        # keeps its worker busy while the other's slot takes the next.
        pool.wait_started(60)
        calls = [f.result() for f in [pool.submit(gym.open(task), "sleep:0.5") for task in gym.tasks()[:2]]]
        assert calls[0].worker != calls[1].worker
        for _ in range(6):  # both turns queued at once: each must wait for its own worker
            calls = [f.result() for f in [pool.submit(call.episode, "sleep:0.05") for call in calls]]
            assert [c.result.outcome for c in calls] == [Outcome.FAIL, Outcome.FAIL], [c.result for c in calls]


def test_close_episode_empties_the_worker_that_held_it():
    from toy_gyms import StickyGym

    gym = StickyGym(max_turns=10)
    with GymPool(workers=1, step_timeout_s=1.0) as pool:
        opened = [pool.step(gym.open(task), "wrong") for task in gym.tasks()[:3]]
        assert pool.step(opened[0].episode, "held").result.info["held"] == sorted(c.episode.key for c in opened)
        pool.close_episode(opened[1].episode)
        held = pool.step(opened[0].episode, "held").result.info["held"]
        assert held == sorted([opened[0].episode.key, opened[2].episode.key])
        assert pool.stats.calls == 5  # the close was no step


def test_wait_started_returns_once_every_worker_is_up(gym):
    with GymPool(workers=2, step_timeout_s=1.0) as pool:
        pool.wait_started(60)
        assert sorted({w.slot for w in pool.worker_nodes}) == [0, 1]


def test_workers_start_at_most_one_per_core_at_a_time():
    """A pool larger than the machine (160 emulated workers on 2 cores) starts its workers a core's
    worth at a time: all at once, the last would still be importing when their start timed out."""
    starting, most = 0, 0
    lock = threading.Lock()

    class Counted(GymPool):
        def _start_one(self):
            nonlocal starting, most
            with lock:
                starting += 1
                most = max(most, starting)
            time.sleep(0.2)  # every start overlaps the others, unless something makes them wait
            try:
                return super()._start_one()
            finally:
                with lock:
                    starting -= 1

    with Counted(workers=3 * default_workers(), step_timeout_s=1.0) as pool:
        pool.wait_started(120)
    assert most == default_workers()
