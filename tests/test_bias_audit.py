"""Every trajectory's fate and gym latency (the slow-sample bias audit), and over-sampling: a
step trains on the first groups to complete, so one slow group no longer holds it up."""

from __future__ import annotations

import csv
import random
from dataclasses import replace
from pathlib import Path

import pytest
from toy_gyms import GATE_S, GateGym, ToyGym

from gyms import Candidate, Outcome, Task
from gyms.pool import GymPool
from harness.record import TRAJECTORY_COLUMNS, write_mode
from trainer.bias import audit
from trainer.metrics import summarize
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import ZERO, HardwareProfile
from trainer.policies.replay import ReplayPolicy
from trainer.types import DROPPED_STALE, ERRORED, IN_FLIGHT, TRAINED, Fate

@pytest.fixture(scope="module")
def pool():
    with GymPool(workers=2, step_timeout_s=GATE_S) as p:
        yield p


def fate(gym_s: float, kind: str, reward: float = 0.0) -> Fate:
    return Fate(0, 0, "t", 0, 1, gym_s, reward, "fail", kind)


def test_the_audit_by_hand():
    # 8 decided trajectories, fastest first: quartiles of two. The fastest are both trained, the
    # slowest both dropped but one: acceptance 1, 1, 1/2, 1/2.
    fates = [fate(1, TRAINED, 1.0), fate(2, TRAINED, 1.0), fate(3, TRAINED, 0.5), fate(4, TRAINED, 0.5),
             fate(5, TRAINED), fate(6, DROPPED_STALE, 1.0), fate(7, TRAINED), fate(8, DROPPED_STALE),
             fate(100, ERRORED), fate(50, IN_FLIGHT)]  # fmt: skip
    b = audit(fates)
    assert b["fates"] == {TRAINED: 6, DROPPED_STALE: 2, ERRORED: 1, IN_FLIGHT: 1}
    assert [q["acceptance"] for q in b["quartiles"]] == [1.0, 1.0, 0.5, 0.5]
    assert [(q["gym_s_min"], q["gym_s_max"], q["decided"]) for q in b["quartiles"]] == [
        (1, 2, 2), (3, 4, 2), (5, 6, 2), (7, 8, 2)]  # fmt: skip
    assert b["slow_fast_acceptance"] == 0.5
    assert b["reward_trained"] == pytest.approx(3.0 / 6)
    assert b["reward_dropped"] == pytest.approx(0.5)
    assert b["gym_s_dropped_share"] == pytest.approx(14 / 186)  # errored and in-flight gym work counts too


def test_the_audit_with_too_few_trajectories_says_so():
    b = audit([fate(1, TRAINED), fate(2, DROPPED_STALE), fate(3, ERRORED)])
    assert b["quartiles"] == [] and b["slow_fast_acceptance"] is None
    assert audit([fate(i, DROPPED_STALE) for i in range(4)])["slow_fast_acceptance"] is None  # fastest: none trained


class SlowWrongGym(ToyGym):
    """Wrong answers take the gym 20 ms: multi-turn episodes whose latencies differ."""

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [Candidate("pass", "pass", "reference"), Candidate("sleep:0.02", "fail", "slow-wrong")]


FAST = HardwareProfile("test-fast", "test", 1e-5, 1e-5, 0.01, response_tokens=100, prompt_tokens=10)


def test_every_trajectory_has_one_fate_and_its_gym_latency(pool, tmp_path):
    gym = SlowWrongGym(max_turns=3, tasks=4)
    config = RunConfig(mode="async", steps=5, batch_groups=2, group_size=4, max_staleness=1)
    result = run(gym, ReplayPolicy(gym, FAST, skill=0.3, seed=1), pool, config)
    acc = result.accounting
    assert acc.balanced(), acc
    kinds = [f.fate for f in result.fates]
    assert len(kinds) == acc.generated
    assert (kinds.count(TRAINED), kinds.count(DROPPED_STALE), kinds.count(ERRORED), kinds.count(IN_FLIGHT)) == (
        acc.trained, acc.dropped_stale, acc.errored, acc.in_flight)  # fmt: skip
    assert len({(f.group, f.sample) for f in result.fates}) == len(result.fates)  # one fate each

    gym_s: dict[tuple[int, int], float] = {}
    for s in result.timeline.spans:
        if s.kind == "gym_step":
            gym_s[(s.group, s.sample)] = gym_s.get((s.group, s.sample), 0.0) + s.duration
    for f in result.fates:
        assert f.gym_s == pytest.approx(gym_s.get((f.group, f.sample), 0.0), abs=1e-6), f
        assert (f.step is not None) == (f.fate in (TRAINED, DROPPED_STALE)), f
    assert {f.turns for f in result.fates if f.fate == TRAINED} > {1}, "the test needs multi-turn episodes"
    assert summarize(result)["bias"] == audit(result.fates)

    write_mode(tmp_path, "async", result)
    with (tmp_path / "trajectories.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["mode", *TRAJECTORY_COLUMNS]
    assert sorted((int(r["group"]), int(r["sample"]), r["fate"]) for r in rows) == sorted(
        (f.group, f.sample, f.fate) for f in result.fates)  # fmt: skip


class SlowFirstGroup(ReplayPolicy):
    """Group 0's first sample waits at the gate; every other answer passes at once. Only one
    sample waits, so the pool's other worker stays free for group 1 (two waiting samples would
    hold both workers, and group 1 could not finish before the gate opens)."""

    def generate(self, requests, version):
        return [replace(g, text="gate" if (r.group, r.sample) == (0, 0) else "pass")
                for r, g in zip(requests, super().generate(requests, version))]  # fmt: skip


def test_over_sampling_trains_on_the_first_groups_to_complete(pool, tmp_path):
    gym = GateGym(tmp_path / "open", Outcome.PASS, max_turns=1)
    config = RunConfig(mode="sync", steps=2, batch_groups=1, group_size=2, oversample=1)

    def open_the_gate(record) -> None:  # after step 0 has trained
        Path(gym.gate).touch()

    result = run(gym, SlowFirstGroup(gym, ZERO), pool, config, on_step=open_the_gate)

    by_group = {f.group: f for f in result.fates if f.sample == 0}
    # Step 0 trained group 1, which completed while group 0 was still at the gate; without
    # over-sampling it would have waited for group 0.
    assert (by_group[1].fate, by_group[1].step) == (TRAINED, 0)
    # Group 0 ended with step 0's weights, too stale for sync's step 1: dropped, or still
    # waiting in the buffer when the run stopped.
    assert by_group[0].fate in (DROPPED_STALE, IN_FLIGHT) and by_group[0].version == 0
    assert result.accounting.balanced(), result.accounting
    assert all(s == 0 for s in result.staleness)  # sync trains on fresh groups only
