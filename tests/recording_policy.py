"""A replay policy that keeps every group it trains on, so tests can inspect versions, and
every action it gives, by (task, group, sample, turn)."""

from __future__ import annotations

from collections.abc import Sequence

from trainer.policies.replay import ReplayPolicy
from trainer.types import Generation, Group, Request


class RecordingReplay(ReplayPolicy):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.trained: list[tuple[int, Group]] = []  # (trainer version at the time, group)
        # (task id, group, sample, turn) -> (action, emulated response tokens)
        self.actions: dict[tuple[str, int | None, int | None, int], tuple[str, int]] = {}

    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        generations = super().generate(requests, version)
        for r, g in zip(requests, generations):
            key = (r.task.id, r.group, r.sample, r.turn)
            assert key not in self.actions, f"{key} was asked for twice"
            self.actions[key] = (g.text, len(g.response_tokens))
        return generations

    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        self.trained += [(self.version, g) for g in groups]
        return super().train_step(groups)
