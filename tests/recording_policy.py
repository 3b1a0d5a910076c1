"""A replay policy that keeps every group it trains on, so tests can inspect versions."""

from __future__ import annotations

from collections.abc import Sequence

from trainer.policies.replay import ReplayPolicy
from trainer.types import Group


class RecordingReplay(ReplayPolicy):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.trained: list[tuple[int, Group]] = []  # (trainer version at the time, group)

    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        self.trained += [(self.version, g) for g in groups]
        return super().train_step(groups)
