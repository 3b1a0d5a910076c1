"""Policy backends: `replay` (emulated accelerator), `tiny` (torch, CPU) and `hf:PATH` (transformers)."""

from __future__ import annotations

from gyms import Gym
from trainer.policies.base import Policy
from trainer.policies.profiles import HardwareProfile


def make_policy(
    spec: str, gym: Gym, profile: HardwareProfile, seed: int = 0, placement: str | None = None
) -> Policy:
    """`replay`, `tiny`, or `hf:PATH` (optionally `hf:PATH@cuda` to pick the device).

    `placement` (replay only): `colocated` or `disaggregated`; None takes the replay default."""
    if spec == "replay":
        from trainer.policies.replay import DEFAULT_PLACEMENT, ReplayPolicy

        return ReplayPolicy(gym, profile, seed=seed, placement=placement or DEFAULT_PLACEMENT)
    if placement is not None:
        raise ValueError(
            f"placement is an option of the replay policy: {spec!r} runs its stages on real hardware"
        )
    if spec == "tiny":
        from trainer.policies.torch_lm import tiny_policy

        return tiny_policy(seed=seed)
    if spec.startswith("hf:"):
        from trainer.policies.torch_lm import hf_policy

        path, _, device = spec[3:].partition("@")
        return hf_policy(path, device=device or "cpu", seed=seed)
    raise ValueError(f"unknown policy {spec!r}: use 'replay', 'tiny' or 'hf:PATH[@DEVICE]'")


__all__ = ["Policy", "make_policy"]
