"""The Engine interface: what generates for a real-model policy.

A real-model policy (`ModelPolicy`, model_policy.py) is a `Learner` (learner.py: the torch
model that trains) and an `Engine` composed. The policy owns the versions: it pins them for
rollout groups, publishes the learner's weights as the next version and says which versions
may be freed; the engine generates with a version's weights and holds what it is given. A new
engine is a module with an `Engine` and a factory that composes it (docs/engines.md, "Adding an
engine"); the built-in ones are `TorchEngine` (torch_engine.py) and `VllmEngine` (vllm_engine.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from trainer.policies.base import PolicyEvents
from trainer.types import Generation, Request


class Engine(ABC):
    # False: the engine keeps each version it is given until `free`, so groups pinned to older
    # versions run on beside new ones. True: it holds one set of weights, swapped in place, and
    # the policy drains, then swaps (docs/engines.md): a version is loaded once no group of an
    # older one runs, outside the policy's lock, and new groups wait for the load.
    holds_one_version = False

    @abstractmethod
    def generate(self, requests: Sequence[Request], version: int, events: PolicyEvents | None) -> list[Generation]:
        """One response per request with the weights of `version` (pinned by the caller), each
        stamped with the version that produced it; safe to call from many threads at once.
        Reports the engine's busy time to `events` (`engine_call`) when it is given."""

    @abstractmethod
    def snapshot(self) -> Any:
        """The learner's weights as they are now, in the form `load` takes: a copy, so the
        learner can train on while the engine waits to load it."""

    @abstractmethod
    def load(self, weights: Any, version: int) -> None:
        """Generate with `weights` (from `snapshot`) as `version` from now on."""

    def free(self, keep: set[int]) -> None:
        """Drop the weights of every version not in `keep` (called under the policy's lock).
        Nothing by default: an engine that holds one version swaps it in place."""

    def describe(self) -> dict[str, str]:
        """What the run's summary says of the engine and where it runs."""
        return {}
