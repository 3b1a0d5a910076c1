"""Policy backends: `replay` (emulated accelerator), `tiny` (torch, CPU) and `hf:PATH` (transformers)."""

from __future__ import annotations

from gyms import Gym
from trainer.policies import options
from trainer.policies.base import Policy
from trainer.policies.profiles import HardwareProfile


def make_policy(
    spec: str, gym: Gym, profile: HardwareProfile, seed: int = 0, placement: str | None = None
) -> Policy:
    """`replay`, `tiny[:OPTIONS]`, or `hf:PATH[@DEVICE][:OPTIONS]` (the device defaults to cpu).

    OPTIONS are the torch policies' training options as KEY=VALUE,... (`trainer/policies/options.py`),
    e.g. `tiny:minibatches=8,epochs=2`. `placement` (replay only): `colocated` or
    `disaggregated`; None takes the replay default."""
    if spec == "replay":
        from trainer.policies.replay import DEFAULT_PLACEMENT, ReplayPolicy

        return ReplayPolicy(gym, profile, seed=seed, placement=placement or DEFAULT_PLACEMENT)
    if placement is not None:
        raise ValueError(
            f"placement is an option of the replay policy: {spec!r} runs its stages on real hardware"
        )
    name, _, rest = spec.partition(":")
    if name == "tiny":
        from trainer.policies.torch_lm import tiny_policy

        return tiny_policy(seed=seed, **(options.parse(rest) if rest else {}))
    if name == "hf" and rest:
        from trainer.policies.torch_lm import hf_policy

        # options follow the last colon only if they read KEY=VALUE: a path may hold a colon
        where, sep, text = rest.rpartition(":")
        if not (sep and "=" in text):
            where, text = rest, ""
        path, _, device = where.partition("@")
        return hf_policy(path, device=device or "cpu", seed=seed, **(options.parse(text) if text else {}))
    raise ValueError(
        f"unknown policy {spec!r}: use 'replay', 'tiny' or 'hf:PATH[@DEVICE]', "
        "options after a colon as in tiny:minibatches=8,epochs=2"
    )


__all__ = ["Policy", "make_policy"]
