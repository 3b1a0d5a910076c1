"""GRPO pieces against values computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from gyms import Task
from trainer.advantages import group_advantages
from trainer.losses import (
    aggregate,
    clip_binds,
    clip_stats,
    grpo_loss,
    kl_k3,
    ppo_clip,
    truncated_importance_weights,
)
from trainer.policies import learner as learner_module
from trainer.policies.model_policy import ModelPolicy
from trainer.policies.torch_lm import tiny_policy
from trainer.types import Group, Request, Trajectory, Turn


def test_group_advantages():
    # rewards 1, 0, 0, 1: mean 0.5, population std 0.5
    assert group_advantages([1.0, 0.0, 0.0, 1.0], eps=0.0) == [1.0, -1.0, -1.0, 1.0]
    # equal rewards carry no signal, exactly: the float mean of eight 0.3s misses 0.3 by an ulp,
    # which (r - mean) / (0 + eps) would blow up to 0.03
    assert group_advantages([0.3] * 8) == [0.0] * 8
    # the same as torch's population formula, in float64
    rewards = [0.25, 1.0, 0.0, 0.5, 0.75]
    as_tensor = torch.tensor(rewards, dtype=torch.float64)
    expected = (as_tensor - as_tensor.mean()) / (as_tensor.std(unbiased=False) + 1e-6)
    assert group_advantages(rewards) == pytest.approx(expected.tolist(), abs=1e-12)


def test_the_simulator_and_the_planner_import_without_torch():
    """They run the rollout's rules (its task sampler, the group advantages) on a machine without torch."""
    import subprocess
    import sys

    code = "import sys, harness.predict, harness.plan, harness.sim.pipeline; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_ppo_clip_takes_the_pessimistic_side():
    ratio = torch.tensor([[1.5, 0.5, 1.1]])
    # positive advantage: 1.5 clipped to 1.2; 0.5 is below the clip, min keeps 0.5
    assert torch.allclose(ppo_clip(ratio, torch.tensor([2.0]), 0.2), torch.tensor([[2.4, 1.0, 2.2]]))
    # negative advantage: 1.5 stays (more negative), 0.5 is clipped to 0.8
    assert torch.allclose(ppo_clip(ratio, torch.tensor([-1.0]), 0.2), torch.tensor([[-1.5, -0.8, -1.1]]))


def test_kl_k3_by_hand():
    logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    # exp(ref-logp) - (ref-logp) - 1 = 0.5 - ln(0.5) - 1
    assert kl_k3(logp, ref).item() == pytest.approx(0.5 + math.log(2) - 1)
    assert kl_k3(ref, ref).item() == 0.0


def test_truncated_importance_weights():
    prox = torch.log(torch.tensor([0.9, 0.3]))
    behav = torch.log(torch.tensor([0.3, 0.6]))
    w = truncated_importance_weights(prox, behav, cap=2.0)
    assert w.tolist() == pytest.approx([2.0, 0.5])  # 3.0 truncated to 2.0


def test_token_and_sequence_aggregation_differ_by_length():
    per_token = torch.tensor([[1.0, 1.0, 1.0, 1.0], [4.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    assert aggregate(per_token, mask, "token").item() == pytest.approx(8 / 5)
    assert aggregate(per_token, mask, "sequence").item() == pytest.approx((1 + 4) / 2)
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate(per_token, mask, "batch")


def test_grpo_loss_on_policy_value_and_gradient():
    # On-policy (logp == behaviour): ratio 1, loss = -mean(A) over tokens, d loss / d logp = -A / n
    logp = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.25]])).requires_grad_()
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss = grpo_loss(logp, logp.detach(), adv, mask)
    assert loss.item() == pytest.approx(-(1 + 1 - 1) / 3)
    loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-1 / 3, -1 / 3], [1 / 3, 0.0]]))


def test_the_clip_binds_beyond_one_plus_or_minus_eps_and_stops_the_gradient():
    # ratios 1.5, 0.7, 1.1 to the proximal policy; first sequence A = +1, second A = -1
    proximal = torch.log(torch.tensor([[0.2, 0.5, 0.4], [0.2, 0.5, 0.4]]))
    logp = (proximal + torch.log(torch.tensor([1.5, 0.7, 1.1]))).requires_grad_()
    adv, mask = torch.tensor([1.0, -1.0]), torch.ones(2, 3)
    # on-policy samples (behaviour = proximal): every importance weight is 1
    loss = grpo_loss(logp, proximal, adv, mask, proximal_logp=proximal, tis_cap=2.0)
    # A = +1: min(1.5, 1.2) = 1.2 (binds), 0.7, 1.1;  A = -1: -1.5, min(-0.7, -0.8) = -0.8 (binds), -1.1
    assert loss.item() == pytest.approx(-(1.2 + 0.7 + 1.1 - 1.5 - 0.8 - 1.1) / 6)
    loss.backward()
    # d/dlogp of r A is r A; a clipped token gives none
    assert torch.allclose(logp.grad, torch.tensor([[0.0, -0.7, -1.1], [1.5, 0.0, 1.1]]) / 6)
    ratio = torch.exp(logp.detach() - proximal)
    assert clip_binds(ratio, adv, 0.2).tolist() == [[True, False, False], [False, True, False]]
    stats = clip_stats(ratio, adv, mask, 0.2)
    assert stats["clip_fraction"] == pytest.approx(2 / 6)
    assert stats["ratio_deviation_mean"] == pytest.approx((0.5 + 0.3 + 0.1) / 3)
    assert stats["ratio_deviation_max"] == pytest.approx(0.5)
    k3 = [r - 1 - math.log(r) for r in (1.5, 0.7, 1.1)]
    assert stats["approx_kl"] == pytest.approx(sum(k3) / 3)


def test_clip_stats_count_trained_tokens_only():
    ratio = torch.tensor([[1.5, 3.0]])
    stats = clip_stats(ratio, torch.tensor([1.0]), torch.tensor([[1.0, 0.0]]), 0.2)
    assert (stats["clip_fraction"], stats["ratio_deviation_max"]) == (1.0, pytest.approx(0.5))
    assert clip_stats(ratio, torch.tensor([1.0]), torch.zeros(1, 2), 0.2)["clip_fraction"] == 0.0


def test_decoupled_loss_weights_tokens_by_the_truncated_importance_weight():
    # proximal / behaviour = 3 (truncated to 2) and 0.5; the ratio to the proximal policy is 1
    proximal = torch.log(torch.tensor([[0.9, 0.3]]))
    behaviour = torch.log(torch.tensor([[0.3, 0.6]]))
    logp = proximal.clone().requires_grad_()
    loss = grpo_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 2), proximal_logp=proximal, tis_cap=2.0)
    assert loss.item() == pytest.approx(-(2.0 + 0.5) / 2)
    loss.backward()
    assert logp.grad.tolist() == [pytest.approx([-1.0, -0.25])]
    # the same samples under plain PPO: ratios to behaviour 3 and 0.5, clipped to 1.2 and min(0.5, 0.8)
    plain = grpo_loss(proximal, behaviour, torch.tensor([1.0]), torch.ones(1, 2), tis_cap=None)
    assert plain.item() == pytest.approx(-(1.2 + 0.5) / 2)


def test_grpo_loss_with_kl_and_tis():
    logp = torch.log(torch.tensor([[0.5]]))
    behaviour = torch.log(torch.tensor([[0.25]]))  # stale sample: proximal/behaviour = 2
    ref = torch.log(torch.tensor([[0.25]]))
    loss = grpo_loss(
        logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1),
        proximal_logp=logp, kl_coef=0.1, ref_logp=ref, tis_cap=1.5,
    )  # fmt: skip
    # TIS: weight 1.5 (truncated from 2), ratio to proximal 1 -> -1.5; k3 with ref/pi = 0.5
    expected = -1.5 + 0.1 * (0.5 - math.log(0.5) - 1)
    assert loss.item() == pytest.approx(expected)
    # without TIS the ratio to behaviour (2) is clipped to 1.2
    assert grpo_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1)).item() == pytest.approx(-1.2)
    with pytest.raises(ValueError, match="needs ref_logp"):
        grpo_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1), kl_coef=0.1)
    with pytest.raises(ValueError, match="tis_cap needs proximal_logp"):
        grpo_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1), tis_cap=2.0)


# -- the loss inside a real train step of the tiny model --------------------------------------


def sampled_group(policy: ModelPolicy, advantages: list[float], prompt: str = "2 + 2 = ") -> Group:
    """Samples of the policy's version 0 for one prompt, with the given advantages."""
    task = Task(f"t/{prompt}", prompt, reference="4")
    gens = policy.generate([Request.first(task)] * len(advantages), 0)
    trajs = [Trajectory(task.id, 0, 0, [Turn(g)]) for g in gens]
    return Group(0, task.id, 0, trajs, advantages)


def response_tokens(group: Group) -> list[int]:
    return [len(t.turns[0].generation.response_tokens) for t in group.trajectories]


def test_the_ratio_is_one_on_the_first_minibatch_and_the_clip_binds_later(monkeypatch):
    ratios = []

    def recording_loss(logp, behaviour_logp, advantages, mask, **kw):
        ratios.append(torch.exp(logp.detach() - kw["proximal_logp"])[mask.bool()])
        return grpo_loss(logp, behaviour_logp, advantages, mask, **kw)

    monkeypatch.setattr(learner_module, "grpo_loss", recording_loss)

    def step() -> dict[str, float]:
        policy = tiny_policy(seed=0, max_new_tokens=8, lr=0.05, minibatches=4, epochs=2)
        groups = [sampled_group(policy, [1.0, -1.0, 1.0, -1.0], p) for p in ("1 + 1 = ", "2 + 2 = ")]
        return policy.train_step(groups)

    stats = step()
    assert len(ratios) == stats["optimizer_steps"] == 8
    # the first minibatch is scored by the weights that made the proximal logprobs
    assert torch.allclose(ratios[0], torch.ones_like(ratios[0]), atol=1e-5)
    assert all((r - 1).abs().max() > 0.2 for r in ratios[1:])
    assert stats["clip_fraction"] > 0 and stats["ratio_deviation_max"] > 0.2 and stats["approx_kl"] > 0
    assert step() == stats  # seeded: the same samples, shuffles and updates


def test_one_minibatch_is_the_on_policy_step_with_ratio_one():
    policy = tiny_policy(seed=0, max_new_tokens=8, lr=0.05, minibatches=1)
    stats = policy.train_step([sampled_group(policy, [1.0, -1.0, 1.0, -1.0])])
    assert stats["optimizer_steps"] == 1
    assert stats["clip_fraction"] == 0.0 and stats["ratio_deviation_max"] < 1e-5


def test_zero_advantage_groups_leave_the_normaliser_when_dropped():
    signal_adv = [1.0, 0.5, 0.25, 0.125]  # one sign: the loss's numerator is never 0, whatever the lengths
    first = tiny_policy(seed=0, max_new_tokens=6, minibatches=1, drop_zero_advantage=True)
    signal = sampled_group(first, signal_adv, "1 + 1 = ")
    flat = sampled_group(first, [0.0] * 4, "2 + 2 = ")
    n_signal, n_flat = sum(response_tokens(signal)), sum(response_tokens(flat))
    # ratio 1 and importance weight 1 (on-policy): loss = -sum_i A_i n_i / (tokens in the normaliser)
    numerator = -sum(a * n for a, n in zip(signal_adv, response_tokens(signal)))
    dropped = first.train_step([signal, flat])
    kept = tiny_policy(seed=0, max_new_tokens=6, minibatches=1, drop_zero_advantage=False).train_step([signal, flat])
    assert dropped["loss"] == pytest.approx(numerator / n_signal, rel=1e-4)
    assert kept["loss"] == pytest.approx(numerator / (n_signal + n_flat), rel=1e-4)
    assert (dropped["tokens"], kept["tokens"]) == (n_signal, n_signal + n_flat)
    assert dropped["groups_zero_advantage"] == kept["groups_zero_advantage"] == 1
    assert dropped["tokens_left_out_fraction"] == pytest.approx(n_flat / (n_signal + n_flat))
    assert kept["tokens_left_out_fraction"] == 0.0


def test_a_batch_of_zero_advantage_groups_takes_no_step():
    policy = tiny_policy(seed=0, max_new_tokens=4)
    before = [p.detach().clone() for p in policy.learner.model.parameters()]
    stats = policy.train_step([sampled_group(policy, [0.0] * 3)])
    assert stats["tokens"] == 0 and stats["groups_zero_advantage"] == 1 and stats["tokens_left_out_fraction"] == 1.0
    assert stats["optimizer_steps"] == 0 and stats["clip_fraction"] == 0.0
    assert all(torch.equal(a, b) for a, b in zip(before, policy.learner.model.parameters()))
    assert set(stats) == set(policy.train_step([sampled_group(policy, [1.0, -1.0])]))  # same columns
