"""The learning check: the tiny policy gets better at one-digit addition, sync and async alike.

The policy starts from a format warm-up (it answers in \\boxed{} with a random digit), as RL
starts from a model that knows the answer format but not the answers.
"""

from __future__ import annotations

import random
import statistics

import pytest
import torch

from gyms import make
from gyms.pool import GymPool
from trainer.pipeline import RunConfig, run
from trainer.policies.torch_lm import tiny_policy

STEPS = 60


def reward_curve(mode: str, pool: GymPool) -> list[float]:
    gym = make("math", source="addition", max_turns=1)
    # lr 1e-3: each step makes 4 optimizer steps (minibatches), about one old step at 3e-3
    policy = tiny_policy(seed=0, lr=1e-3, max_new_tokens=12)
    rng = random.Random(0)
    policy.supervised_warmup([(t.prompt, f"\\boxed{{{rng.randint(0, 4)}}}") for t in gym.tasks() for _ in range(20)], 200)
    config = RunConfig(mode=mode, steps=STEPS, batch_groups=8, group_size=8, max_staleness=1)
    return [s.reward_mean for s in run(gym, policy, pool, config).steps]


@pytest.mark.slow
def test_tiny_policy_learns_addition_sync_and_async():
    torch.set_num_threads(1)
    with GymPool(workers=2, step_timeout_s=10) as pool:
        curves = {mode: reward_curve(mode, pool) for mode in ("sync", "async")}
    for mode, curve in curves.items():
        start, end = statistics.fmean(curve[:5]), statistics.fmean(curve[-10:])
        assert end >= start + 0.1 and end >= 1.5 * start, (mode, start, end, curve)
    # async (max_staleness 1) learns about as well per step as sync
    late = {mode: statistics.fmean(curve[-10:]) for mode, curve in curves.items()}
    assert abs(late["async"] - late["sync"]) <= 0.1, curves
