"""The replay policy: real gym work, emulated accelerator time.

Actions come from the gym's candidates (the reference, realistic wrong answers, and rarely a
non-terminating one), so every gym step does its full real work. Generation, training and
weight sync wait the time the hardware profile gives for the emulated token counts.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

from gyms import Candidate, Gym
from trainer.policies.base import Policy
from trainer.policies.profiles import HardwareProfile
from trainer.types import Generation, Group, Request


class ReplayPolicy(Policy):
    name = "replay"
    emulated = True

    def __init__(
        self,
        gym: Gym,
        profile: HardwareProfile,
        *,
        skill: float = 0.5,
        timeout_rate: float = 0.02,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if not 0 <= skill <= 1 or not 0 <= timeout_rate <= 1:
            raise ValueError("skill and timeout_rate are probabilities in [0, 1]")
        self.gym = gym
        self.profile = profile
        self.skill = skill  # chance that an action is a known-good one
        self.timeout_rate = timeout_rate  # chance of a non-terminating action (costly for the gym)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._candidates: dict[str, list[Candidate]] = {}

    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        generations = [self._pick(r) for r in requests]
        time.sleep(self.profile.generate_s(sum(len(g.response_tokens) for g in generations)))
        return generations

    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        tokens = sum(
            len(t.generation.prompt_tokens) + len(t.generation.response_tokens)
            for g in groups
            for traj in g.trajectories
            for t in traj.turns
        )
        time.sleep(self.profile.actor_train_s(tokens))
        return {"tokens": float(tokens)}

    def update_weights(self) -> int:
        time.sleep(self.profile.update_weights_s)
        self.version += 1
        return self.version

    def _pick(self, request: Request) -> Generation:
        with self._lock:
            task = request.task
            if task.id not in self._candidates:
                self._candidates[task.id] = self.gym.candidates(task, random.Random(task.id))
            candidates = self._candidates[task.id]
            good = [c for c in candidates if c.expect == "pass"]
            hangs = [c for c in candidates if c.expect == "timeout"]
            bad = [c for c in candidates if c.expect == "fail"]
            roll = self._rng.random()
            if good and roll < self.skill:
                choice = self._rng.choice(good)
            elif hangs and roll < self.skill + self.timeout_rate:
                choice = self._rng.choice(hangs)
            else:
                choice = self._rng.choice(bad or good or hangs)
            # Emulated token counts: a reasoning model's response, spread +-50 %.
            mean = self.profile.response_tokens
            n_response = max(1, round(mean * self._rng.uniform(0.5, 1.5))) if mean else 1
        return Generation(
            text=choice.action,
            prompt_tokens=[0] * self.profile.prompt_tokens,
            response_tokens=[0] * n_response,
            logprobs=[0.0] * n_response,
        )

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "profile": self.profile.name, "skill": str(self.skill)}
