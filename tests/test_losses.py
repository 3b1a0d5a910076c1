"""GRPO pieces against values computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.losses import aggregate, group_advantages, grpo_loss, kl_k3, ppo_clip, truncated_importance_weights


def test_group_advantages():
    # rewards 1, 0, 0, 1: mean 0.5, population std 0.5
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), eps=0.0)
    assert adv.tolist() == [1.0, -1.0, -1.0, 1.0]
    # equal rewards carry no signal
    assert group_advantages(torch.tensor([1.0, 1.0, 1.0])).abs().max() < 1e-6


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


def test_grpo_loss_with_kl_and_tis():
    logp = torch.log(torch.tensor([[0.5]]))
    behaviour = torch.log(torch.tensor([[0.25]]))  # stale sample: current/behaviour = 2
    ref = torch.log(torch.tensor([[0.25]]))
    loss = grpo_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1), kl_coef=0.1, ref_logp=ref, tis_cap=1.5)
    # TIS: weight 1.5 (truncated from 2), ratio to proximal 1 -> -1.5; KL k3 = 0.5 + ln 0.5... ref/logp = 0.5
    expected = -1.5 + 0.1 * (0.5 - math.log(0.5) - 1)
    assert loss.item() == pytest.approx(expected)
    # without TIS the ratio to behaviour (2) is clipped to 1.2
    assert grpo_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1)).item() == pytest.approx(-1.2)
    with pytest.raises(ValueError, match="needs ref_logp"):
        grpo_loss(logp, behaviour, torch.tensor([1.0]), torch.ones(1, 1), kl_coef=0.1)
