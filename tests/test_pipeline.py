"""The pipeline's promises: accounting, one policy version per episode, staleness bounds."""

from __future__ import annotations

import random
import threading
import time

import pytest
from recording_policy import RecordingReplay
from toy_gyms import ToyGym

from gyms import Candidate, Task
from gyms.pool import GymPool
from harness import catalogue
from trainer.buffer import PipelineFailure, ReadyBuffer, Stopped
from trainer.metrics import lag1_autocorrelation, summarize
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import ZERO, HardwareProfile
from trainer.policies.replay import ReplayPolicy
from trainer.types import Group, Trajectory


class MultiTurnGym(ToyGym):
    """Wrong first answers, slow steps: episodes span several turns while weights move on."""

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [Candidate("pass", "pass", "reference"), Candidate("sleep:0.02", "fail", "slow-wrong")]




# Small but non-zero stage times, so rollout and training overlap in async mode.
FAST = HardwareProfile("test-fast", "test", 1e-5, 1e-5, 0.01, response_tokens=100, prompt_tokens=10)


@pytest.fixture(scope="module")
def pool():
    with GymPool(workers=2, step_timeout_s=1.0) as p:
        yield p


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_multi_turn_runs_keep_one_version_per_episode_and_balance_the_books(pool, mode):
    gym = MultiTurnGym(max_turns=3, tasks=4)
    policy = RecordingReplay(gym, FAST, skill=0.3, seed=1)
    config = RunConfig(mode=mode, steps=6, batch_groups=2, group_size=4, max_staleness=1)
    result = run(gym, policy, pool, config)
    summary = summarize(result)

    multi_turn = [t for _, g in policy.trained for t in g.trajectories if len(t.turns) > 1]
    assert multi_turn, "the test needs episodes that span several turns"
    for trainer_version, group in policy.trained:
        for traj in group.trajectories:
            # the version each turn's engine reports having used
            assert {turn.generation.version for turn in traj.turns} == {traj.version} == {group.version}
            assert 0 <= trainer_version - traj.version <= config.staleness

    acc = result.accounting
    assert acc.balanced(), acc
    assert acc.trained == sum(len(g.trajectories) for _, g in policy.trained)
    assert summary["accounting"]["balanced"] is True
    staleness = {int(k) for k in summary["staleness_histogram"]}
    assert staleness == ({0} if mode == "sync" else {0, 1})


class ServesOtherWeightsOnce(ReplayPolicy):
    """A broken engine: it answers one later turn with the weights of a version other than the
    one the episode pinned, and says so in the generation, as a real engine would."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._broken = threading.Lock()
        self.served_wrong = 0

    def generate(self, requests, version):
        with self._broken:
            wrong = self.served_wrong == 0 and requests[0].turn > 1
            self.served_wrong += wrong
        return super().generate(requests, version + 1 if wrong else version)


def test_a_turn_generated_with_other_weights_fails_the_one_version_check(pool):
    gym = ToyGym(max_turns=3, tasks=2)  # skill 0: every episode takes three turns
    policy = ServesOtherWeightsOnce(gym, ZERO, skill=0.0)
    config = RunConfig(mode="sync", steps=1, batch_groups=1, group_size=2)  # the wrong turn is in group 0
    with pytest.raises(AssertionError, match=r"pinned version 0 but its turns were generated with versions \[0, 1\]"):
        run(gym, policy, pool, config)
    assert policy.served_wrong == 1


def test_sync_is_a_barrier_no_generation_during_training(pool):
    gym = ToyGym(tasks=3)
    result = run(gym, ReplayPolicy(gym, FAST, seed=0), pool, RunConfig(mode="sync", steps=4, batch_groups=2))
    trains = result.timeline.select("trainer", "actor_train") + result.timeline.select("trainer", "update_weights")
    for gen in result.timeline.select("rollout", "generate"):
        for t in trains:
            assert gen.end <= t.start + 1e-6 or gen.start >= t.end - 1e-6, (gen, t)


def test_stale_groups_are_dropped_and_counted():
    buffer = ReadyBuffer(batch_groups=1, group_size=2, max_staleness=1)
    for _ in range(2):
        buffer.admit()
    fresh = [Trajectory("t", 0, 2)]
    buffer.put(Group(0, "t", version=0, trajectories=[Trajectory("t", 0, 0)] * 2, advantages=[0, 0]))
    buffer.put(Group(1, "t", version=2, trajectories=fresh * 2, advantages=[0, 0]))
    batch = buffer.take_batch(version=2)  # version 0 is 2 steps behind: dropped
    assert [g.version for g in batch] == [2]
    assert buffer.accounting.dropped_stale == 2 and buffer.accounting.trained == 2


def test_admission_control_bounds_groups_in_flight():
    buffer = ReadyBuffer(batch_groups=2, group_size=1, max_staleness=1)
    for _ in range(4):  # (version 0 + staleness 1 + 1) * 2 groups
        buffer.admit()
    buffer.stop()
    with pytest.raises(Stopped):
        buffer.admit()


class SlowCandidatesGym(ToyGym):
    """Its candidates take seconds, as the verilog gym's do where it simulates mutant designs."""

    seconds = 2.0

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        time.sleep(self.seconds)
        return super().candidates(task, rng)


def test_reading_the_candidates_is_no_generation_in_either_mode(pool):
    gym = SlowCandidatesGym(tasks=1)
    for mode in ("sync", "async"):
        result = run(gym, ReplayPolicy(gym, ZERO), pool, RunConfig(mode=mode, steps=2, batch_groups=1))
        asked = [s.end - s.start for s in result.timeline.spans if s.kind == "generate_request"]
        assert max(asked) < gym.seconds / 2, f"{mode}: generation took the candidates' {max(asked):.1f} s"


class BrokenEpisodeGym(ToyGym):
    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [Candidate("infra", "pass", "reference")]


def test_a_gym_that_always_errors_fails_the_run_instead_of_hanging(pool):
    gym = BrokenEpisodeGym(tasks=2)
    with pytest.raises(PipelineFailure, match="infrastructure errors.*the checker's tool is missing"):
        run(gym, ReplayPolicy(gym, ZERO, skill=1.0), pool, RunConfig(mode="async", steps=3, batch_groups=1))


class CrashingPolicy(ReplayPolicy):
    def generate(self, requests, version):
        raise RuntimeError("engine on fire")


def test_a_crashed_rollout_thread_fails_the_run(pool):
    gym = ToyGym()
    with pytest.raises(PipelineFailure, match="engine on fire"):
        run(gym, CrashingPolicy(gym, ZERO), pool, RunConfig(steps=2))


def test_lag1_autocorrelation_of_an_alternating_series():
    assert lag1_autocorrelation([1, 3, 1, 3, 1, 3]) == pytest.approx(-5 / 6)
    assert lag1_autocorrelation([2, 2]) is None


def test_oscillation_verdicts():
    from trainer.metrics import oscillation_verdict

    assert oscillation_verdict("async", 2.0, -0.8).startswith("oscillating")
    assert oscillation_verdict("async", 2.0, 0.1).startswith("rollout-bound")
    assert oscillation_verdict("async", 0.5, -0.8).startswith("training-bound")
    assert oscillation_verdict("sync", 2.0, -0.8).startswith("synchronous")


def test_gym_time_per_trained_sample_is_the_pools_busy_time_over_what_it_trained(pool):
    gym = ToyGym(tasks=3)
    result = run(gym, ReplayPolicy(gym, FAST, seed=0), pool, RunConfig(mode="async", steps=4, batch_groups=2))
    s = summarize(result)
    # busy worker-seconds / trained = (busy / (workers x window)) x workers / (trained / window)
    assert s["gym_s_per_trained_sample"] > 0
    assert s["gym_s_per_trained_sample"] == pytest.approx(s["gym_utilisation"] * result.pool_workers / s["samples_per_s"])
    metric = catalogue.BY_KEY["gym_s_per_trained_sample"]  # shown beside the other figures of a mode
    assert {catalogue.CONSOLE, catalogue.REPORT} <= metric.views and metric.text(0.5) == "0.50 s"


def test_slow_generation_is_diagnosed_as_rollout_bound(pool):
    gym = ToyGym(tasks=3)
    slow_generation = HardwareProfile("slow-gen", "test", 1e-3, 1e-6, 0.0, response_tokens=100, prompt_tokens=10)
    result = run(gym, ReplayPolicy(gym, slow_generation, seed=0), pool, RunConfig(steps=4, batch_groups=2))
    summary = summarize(result)
    assert summary["rollout_train_rate_ratio"] > 1
    assert summary["oscillation"].startswith(("rollout-bound", "oscillating"))
    assert summary["trainer_idle_ratio"] > 0.5
