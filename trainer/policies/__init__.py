"""Policy backends, found by name (trainer/policies/registry.py): `replay` (emulated
accelerator), `tiny` (torch, CPU), `hf:PATH` (transformers) and `vllm:PATH` (a vLLM engine with
a transformers learner), and any a plugin registers. A real model's policy is a `Learner` and an
`Engine` composed (`ModelPolicy`, model_policy.py)."""

from __future__ import annotations

from trainer.policies.base import Policy
from trainer.policies.registry import make_policy

__all__ = ["Policy", "make_policy"]
