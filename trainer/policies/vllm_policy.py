"""`vllm:MODEL_DIR[@ENGINE_DEVICE[,LEARNER_DEVICE]]`: a transformers `Learner` of the model and a
`VllmEngine` (vllm_engine.py) of the same directory, composed; `ModelPolicy` drains, then swaps,
since the engine holds one set of weights (docs/engines.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from trainer.policies import options
from trainer.policies.learner import Learner
from trainer.policies.model_policy import ModelPolicy
from trainer.policies.torch_lm import hf_logits, transformers_model
from trainer.policies.vllm_engine import EngineSettings, VllmEngine, check_device

if TYPE_CHECKING:
    from trainer.policies.registry import PolicyContext


class VllmPolicy(ModelPolicy):
    """Only composes: builds the learner and the engine, and is a `ModelPolicy` otherwise."""

    def __init__(
        self, path: str, *, engine_device: str = "cpu", learner_device: str | None = None, seed: int = 0,
        top_p: float = 1.0, stop: Sequence[str] = (), ignore_eos: bool = False, dtype: str = "float32",
        kv_cache_mb: int = 256, max_model_len: int | None = None, **learner_options: Any,
    ) -> None:  # fmt: skip
        options.checked(
            top_p=top_p, stop=tuple(stop), ignore_eos=ignore_eos, dtype=dtype, kv_cache_mb=kv_cache_mb,
            **({"max_model_len": max_model_len} if max_model_len is not None else {}),
        )  # fmt: skip
        check_device(engine_device)  # before the learner takes memory
        learner_device = learner_device or engine_device
        model, tokenizer, context = transformers_model(path, learner_device, seed, dtype=torch.float32)
        limit = max_model_len or context
        learner = Learner(model, tokenizer, logits=hf_logits, max_len=limit, device=learner_device, seed=seed,
                          **learner_options)  # fmt: skip
        settings = EngineSettings(path, engine_device, dtype, limit, kv_cache_mb, seed)
        super().__init__("vllm", learner, VllmEngine(learner, settings, top_p=top_p, stop=stop, ignore_eos=ignore_eos))


def from_spec(rest: str, context: PolicyContext) -> VllmPolicy:
    """`vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]][:OPTIONS]` (registry.py); one device (default
    cpu) puts engine and learner together."""
    context.on_real_hardware("vllm")
    path, devices, text = options.location(rest, "vllm")
    engine, _, learner = (devices or "cpu").partition(",")
    return VllmPolicy(path, engine_device=engine, learner_device=learner or engine, seed=context.seed,
                      **options.engine_only(context.options(text)))  # fmt: skip
