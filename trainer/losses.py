"""The GRPO objective, one small function per piece.

Three policies meet in the loss (decoupled PPO, as in AReaL):

- behaviour pi_b: the version that generated the tokens (`Generation.logprobs`);
- proximal pi_prox: the learner as it was at the start of the train step, its logprobs computed
  once, without gradient;
- current pi: the learner as the step's minibatch updates move it.

Per trained token t of a sequence with advantage A, the objective to maximise is

    w_t * min(r_t A, clip(r_t, 1 - eps, 1 + eps) A),   r_t = pi / pi_prox,   w_t = min(pi_prox / pi_b, cap)

minus `kl_coef` times the k3 estimate of KL(pi || pi_ref), averaged over tokens (`level="token"`)
or over each sequence and then over sequences (`level="sequence"`), within one minibatch.
r_t is 1 (up to rounding) on the step's first minibatch, so the clip binds from the second minibatch or
epoch on: it is the trust region around pi_prox for the step's whole sequence of updates. w_t
corrects for samples an older version generated (async training); it is truncated at `cap`
(TIS), which bounds its variance at the cost of a bias (AReaL instead drops tokens above the cap).
With `tis_cap=None` it is plain PPO: r_t = pi / pi_b and no weight.

Shapes: per-token tensors are [batch, tokens] with a 0/1 `mask` marking the response tokens
that are trained; `advantages` is [batch], one value per sequence.
"""

from __future__ import annotations

import torch


def ppo_clip(ratio: torch.Tensor, advantages: torch.Tensor, clip_eps: float) -> torch.Tensor:
    """Per-token PPO-clip surrogate to *maximise*: min(r A, clip(r, 1-e, 1+e) A)."""
    adv = advantages.unsqueeze(-1)
    return torch.minimum(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv)


def clip_binds(ratio: torch.Tensor, advantages: torch.Tensor, clip_eps: float) -> torch.Tensor:
    """Where `ppo_clip` takes the clipped side, so the token gives no gradient: r > 1+e with
    A > 0, r < 1-e with A < 0."""
    adv = advantages.unsqueeze(-1)
    return ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv < ratio * adv


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || ref): exp(ref - logp) - (ref - logp) - 1, always >= 0."""
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1


def truncated_importance_weights(
    proximal_logp: torch.Tensor, behaviour_logp: torch.Tensor, cap: float
) -> torch.Tensor:
    """min(pi_proximal / pi_behaviour, cap): corrects for samples from an older policy version."""
    return torch.exp(proximal_logp - behaviour_logp).clamp(max=cap).detach()


def ratio_and_weights(
    logp: torch.Tensor, behaviour_logp: torch.Tensor, proximal_logp: torch.Tensor | None, tis_cap: float | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ratio the clip acts on and each token's weight: pi / pi_prox and the truncated
    importance weight (decoupled), or pi / pi_b and 1 (plain PPO, `tis_cap=None`)."""
    if tis_cap is None:
        return torch.exp(logp - behaviour_logp), torch.ones_like(logp)
    if proximal_logp is None:
        raise ValueError("tis_cap needs proximal_logp, the learner's logprobs at the start of the train step")
    return torch.exp(logp - proximal_logp), truncated_importance_weights(proximal_logp, behaviour_logp, tis_cap)


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
    proximal_logp: torch.Tensor | None = None,
    clip_eps: float = 0.2,
    kl_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    level: str = "token",
    tis_cap: float | None = None,
) -> torch.Tensor:
    """The loss to minimise: minus the objective in the module docstring."""
    ratio, weights = ratio_and_weights(logp, behaviour_logp, proximal_logp, tis_cap)
    per_token = -weights * ppo_clip(ratio, advantages, clip_eps)
    if kl_coef:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp, the reference policy's logprobs")
        per_token = per_token + kl_coef * kl_k3(logp, ref_logp)
    return aggregate(per_token, mask, level)


def clip_stats(ratio: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, clip_eps: float) -> dict[str, float]:
    """How hard the trust region worked, over the trained tokens: the share where the clip
    bound, mean and max |r - 1|, and the k3 estimate of KL(pi_old || pi) (pi_old: the ratio's
    denominator), as in cleanrl's approx_kl."""
    trained = mask.bool()
    r = ratio.detach()[trained]
    if r.numel() == 0:
        return {"clip_fraction": 0.0, "ratio_deviation_mean": 0.0, "ratio_deviation_max": 0.0, "approx_kl": 0.0}
    deviation = (r - 1).abs()
    return {
        "clip_fraction": float(clip_binds(ratio.detach(), advantages, clip_eps)[trained].float().mean()),
        "ratio_deviation_mean": float(deviation.mean()),
        "ratio_deviation_max": float(deviation.max()),
        "approx_kl": float((r - 1 - r.log()).mean()),
    }
