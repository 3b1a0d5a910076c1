"""Policy backends: `replay` (emulated accelerator), `tiny` (torch, CPU), `hf:PATH` (transformers) and
`vllm:PATH` (a vLLM engine with a transformers learner)."""

from __future__ import annotations

from gyms import Gym
from trainer.policies import options
from trainer.policies.base import Policy
from trainer.policies.profiles import HardwareProfile


def make_policy(
    spec: str, gym: Gym, profile: HardwareProfile, seed: int = 0, placement: str | None = None,
    overrides: dict[str, object] | None = None,
) -> Policy:  # fmt: skip
    """`replay`, `tiny[:OPTIONS]`, `hf:PATH[@DEVICE][:OPTIONS]` or
    `vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]][:OPTIONS]` (devices default to cpu; one device
    for the vllm policy puts engine and learner together).

    OPTIONS are the torch policies' training options as KEY=VALUE,... (`trainer/policies/options.py`),
    e.g. `tiny:minibatches=8,epochs=2`; `overrides` (from Python) replace the spec's.
    `placement` (replay only): `colocated` or `disaggregated`; None takes the replay default."""
    if spec == "replay":
        from trainer.policies.replay import DEFAULT_PLACEMENT, ReplayPolicy

        return ReplayPolicy(gym, profile, seed=seed, placement=placement or DEFAULT_PLACEMENT)
    if placement is not None:
        raise ValueError(
            f"placement is an option of the replay policy: {spec!r} runs its stages on real hardware"
        )
    name, _, rest = spec.partition(":")

    def chosen(text: str) -> dict[str, object]:
        return {**(options.parse(text) if text else {}), **(overrides or {})}

    if name == "tiny":
        from trainer.policies.torch_lm import tiny_policy

        return tiny_policy(seed=seed, **options.torch_only(chosen(rest)))
    if name in ("hf", "vllm") and rest:
        # options follow the last colon only if they read KEY=VALUE: a path may hold a colon
        where, sep, text = rest.rpartition(":")
        if not (sep and "=" in text):
            where, text = rest, ""
        path, _, devices = where.partition("@")
        if name == "hf":
            from trainer.policies.torch_lm import hf_policy

            return hf_policy(path, device=devices or "cpu", seed=seed, **options.torch_only(chosen(text)))
        from trainer.policies.vllm_policy import VllmPolicy

        engine, _, learner = (devices or "cpu").partition(",")  # one device: colocated
        return VllmPolicy(path, engine_device=engine, learner_device=learner or engine, seed=seed, **chosen(text))
    raise ValueError(
        f"unknown policy {spec!r}: use 'replay', 'tiny', 'hf:PATH[@DEVICE]' or "
        "'vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]]', options after a colon as in tiny:minibatches=8,epochs=2"
    )


__all__ = ["Policy", "make_policy"]
