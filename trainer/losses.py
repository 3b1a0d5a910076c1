"""The GRPO objective, one small function per piece.

Shapes: per-token tensors are [batch, tokens] with a 0/1 `mask` marking the response tokens
that are trained; `advantages` is [batch], one value per sequence.
"""

from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO advantages of one group: (r - mean) / (std + eps), population std."""
    return (rewards - rewards.mean()) / (rewards.std(unbiased=False) + eps)


def ppo_clip(ratio: torch.Tensor, advantages: torch.Tensor, clip_eps: float) -> torch.Tensor:
    """Per-token PPO-clip surrogate to *maximise*: min(r A, clip(r, 1-e, 1+e) A)."""
    adv = advantages.unsqueeze(-1)
    return torch.minimum(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv)


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || ref): exp(ref - logp) - (ref - logp) - 1, always >= 0."""
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1


def truncated_importance_weights(
    proximal_logp: torch.Tensor, behaviour_logp: torch.Tensor, cap: float
) -> torch.Tensor:
    """min(pi_proximal / pi_behaviour, cap): corrects for samples from an older policy version."""
    return torch.exp(proximal_logp - behaviour_logp).clamp(max=cap).detach()


def aggregate(per_token: torch.Tensor, mask: torch.Tensor, level: str = "token") -> torch.Tensor:
    """Token level: every trained token weighs the same. Sequence level: every sequence does."""
    if level == "token":
        return (per_token * mask).sum() / mask.sum().clamp(min=1)
    if level == "sequence":
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        return per_seq.mean()
    raise ValueError(f"unknown aggregation {level!r}; use 'token' or 'sequence'")


def grpo_loss(
    logp: torch.Tensor,
    behaviour_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps: float = 0.2,
    kl_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    level: str = "token",
    tis_cap: float | None = None,
) -> torch.Tensor:
    """The loss to minimise.

    Without `tis_cap`: PPO-clip on the ratio to the behaviour logprobs. With it, the ratio is
    taken to the current policy (the proximal one) and each token is weighted by the
    truncated importance weight pi_current / pi_behaviour, so stale samples neither blow up
    nor vanish from the gradient.
    """
    if tis_cap is None:
        objective = ppo_clip(torch.exp(logp - behaviour_logp), advantages, clip_eps)
    else:
        proximal = logp.detach()
        weights = truncated_importance_weights(proximal, behaviour_logp, tis_cap)
        objective = weights * ppo_clip(torch.exp(logp - proximal), advantages, clip_eps)
    per_token = -objective
    if kl_coef:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp, the reference policy's logprobs")
        per_token = per_token + kl_coef * kl_k3(logp, ref_logp)
    return aggregate(per_token, mask, level)
