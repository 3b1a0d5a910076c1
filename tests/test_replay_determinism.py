"""Replay actions are a function of (run seed, task, group, sample, turn): a sync and an async
run with one seed see the same answers, timeouts included, whatever order their threads ask in."""

from __future__ import annotations

import random

import pytest
from recording_policy import RecordingReplay
from toy_gyms import ToyGym

from gyms import Candidate, Task
from gyms.pool import GymPool
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import HardwareProfile
from trainer.policies.replay import ReplayPolicy
from trainer.types import Request

FAST = HardwareProfile("test-fast", "test", 1e-5, 1e-5, 0.01, response_tokens=100, prompt_tokens=10)


class HangingToyGym(ToyGym):
    """Wrong answers take further turns; the 'timeout' candidate is labelled as a hang (the
    policy picks it as one) but costs the gym only 10 ms."""

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [*super().candidates(task, rng), Candidate("sleep:0.01", "timeout", "hang")]


def test_sync_and_async_runs_get_identical_replay_actions():
    gym = HangingToyGym(max_turns=3, tasks=5)
    actions, outcomes, trained = {}, {}, {}
    with GymPool(workers=2, step_timeout_s=1.0) as pool:
        for mode in ("sync", "async"):
            policy = RecordingReplay(gym, FAST, skill=0.3, timeout_rate=0.2, seed=11)
            config = RunConfig(mode=mode, steps=5, batch_groups=2, group_size=4, max_staleness=1, seed=11)
            run(gym, policy, pool, config)
            actions[mode] = policy.actions
            trained[mode] = {g.id: g for _, g in policy.trained}
            outcomes[mode] = {g.id: sorted((len(t.turns), t.outcome.value) for t in g.trajectories)
                              for g in trained[mode].values()}  # fmt: skip

    both = actions["sync"].keys() & actions["async"].keys()
    differing = {k: (actions["sync"][k], actions["async"][k]) for k in both if actions["sync"][k] != actions["async"][k]}
    assert not differing, differing
    # The comparison covers real work: many groups, later turns and the hangs.
    groups = trained["sync"].keys() & trained["async"].keys()
    assert len(groups) >= 5, (sorted(trained["sync"]), sorted(trained["async"]))
    assert any(turn > 1 for _, _, _, turn in both)
    assert any(action == "sleep:0.01" for action, _ in (actions["sync"][k] for k in both))
    assert len({action for action, _ in actions["sync"].values()}) == 3
    # Same answers give the same episodes: every group both runs trained has the same
    # trajectories (turns and outcomes), and every one of its turns was asked for in both.
    for g in groups:
        assert outcomes["sync"][g] == outcomes["async"][g], g
        keys = {k for k in actions["sync"] if k[1] == g}
        assert keys == {k for k in actions["async"] if k[1] == g}, g


def test_an_action_depends_on_its_request_alone():
    gym = HangingToyGym()
    task = gym.tasks()[0]
    requests = [Request(task, Request.first(task).messages, turn, group, sample) for group in range(3)
                for sample in range(4) for turn in (1, 2)]  # fmt: skip

    def answers(policy: ReplayPolicy, order: list[Request]) -> dict:
        return {(r.group, r.sample, r.turn): (g.text, len(g.response_tokens))
                for r, g in zip(order, policy.generate(order, 0))}  # fmt: skip

    first = answers(ReplayPolicy(gym, FAST, seed=3), requests)
    shuffled = random.Random(0).sample(requests, len(requests))
    again = ReplayPolicy(gym, FAST, seed=3)
    assert answers(again, shuffled) == first
    assert answers(again, requests[:5]) == {k: first[k] for k in list(first)[:5]}  # one at a time, or many
    assert answers(ReplayPolicy(gym, FAST, seed=4), requests) != first
    assert len({text for text, _ in first.values()}) > 1


@pytest.mark.parametrize("field", ["group", "sample", "turn"])
def test_each_coordinate_of_the_request_changes_the_draw(field):
    gym = HangingToyGym()
    task = gym.tasks()[0]
    policy = ReplayPolicy(gym, FAST, seed=3)
    base = {"group": 0, "sample": 0, "turn": 1}

    def lengths(**changed: int) -> list[int]:
        coords = {**base, **changed}
        req = Request(task, Request.first(task).messages, coords["turn"], coords["group"], coords["sample"])
        return [len(g.response_tokens) for g in policy.generate([req], 0)]

    # emulated lengths spread over 100 values: 20 neighbours cannot all draw the base's
    assert {tuple(lengths(**{field: v})) for v in range(1, 21)} != {tuple(lengths())}
