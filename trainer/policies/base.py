"""The policy interface shared by the replay, tiny and hf backends.

A policy has two sides, as a real RL system does: a rollout engine that generates with a
pinned weight version, and a learner that takes GRPO steps. `update_weights` publishes the
learner's weights to the rollout engine as the next version. Rollout workers `acquire` the
latest version at the start of an episode group and `release` it at its end, so every turn
of an episode uses one version even while newer ones are published.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence

from trainer.types import Generation, Group, Request


class Policy(ABC):
    name: str
    emulated = False  # True where accelerator stages only take a profile's time

    def __init__(self) -> None:
        self.version = 0  # the newest published version
        self._pins: Counter[int] = Counter()
        self._pin_lock = threading.Lock()

    @abstractmethod
    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        """Generate one response per request with the weights of `version`."""

    @abstractmethod
    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        """One optimizer step on a batch of groups; returns loss statistics."""

    @abstractmethod
    def update_weights(self) -> int:
        """Publish the learner's weights to the rollout engine; returns the new version."""

    def acquire(self) -> int:
        with self._pin_lock:
            version = self.version
            self._pins[version] += 1
            return version

    def release(self, version: int) -> None:
        with self._pin_lock:
            self._pins[version] -= 1
            if self._pins[version] <= 0:
                del self._pins[version]
        self.drop_unused()

    def pinned(self) -> set[int]:
        with self._pin_lock:
            return set(self._pins)

    def drop_unused(self) -> None:
        """Free rollout weights of versions that are neither newest nor pinned."""

    def describe(self) -> dict[str, str]:
        return {"policy": self.name, "emulated": str(self.emulated).lower()}
