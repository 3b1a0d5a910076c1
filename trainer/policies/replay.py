"""The replay policy: real gym work, emulated accelerator time.

Actions come from the gym's candidates (the reference, realistic wrong answers, and rarely a
non-terminating one, in the mix of trainer/rules/answers.py), so every gym step does its full
real work. Generation, training and weight sync wait the time the hardware profile gives for the
emulated token counts.

Each action (and its emulated length) is a pure function of (run seed, task id, group index,
sample index, turn): a `random.Random` seeded from a SHA-256 of those values. Sync and async
runs with one seed therefore get the same answers, timeouts included, whatever order their
threads ask in.

Placement (docs/benchmarks.md): `colocated`, the default, has one emulated accelerator pool
that generation and training/weight sync hold in turn, so they never overlap; only gym work
overlaps them. `disaggregated` gives rollout and training accelerators of their own, so
generation may overlap training.

Generation runs on one emulated rollout engine with continuous batching (policies/batching.py,
by the rule of trainer/rules/batching.py): each episode asks on its own, and requests that
arrive while a call runs share the next one, or join it while it is latency-bound. A call lasts the profile's call cost plus the
per-token cost of the batch's *total* response tokens: the profiles' figures are throughputs of
an engine busy with a full batch (policies/profiles.py), so a token costs what it did when each
group was one call, and the published figures stay comparable; batching saves only the
per-call cost. Where the profile has a per-sequence rate, a call lasts at least its longest
response decoding alone (latency-bound: a small batch). A later turn's request also pays the prefill of its prompt beyond the first
turn's (`HardwareProfile.request_s`).

Multi-turn episodes are one token sequence, as a real model's (trainer/types.py): turn k + 1's
prompt ids are turn k's prompt and response ids, then placeholder ids for the gym's feedback, as
many as trainer/rules/context.py estimates from its text. So the emulated prompt grows by each
turn's response and feedback, and generation (prefill) and training (one sequence per
trajectory, its last turn's prompt and response) grow with the turns as in a real run.

It is not a `Learner` and an `Engine` composed (model_policy.py), as the real models' policies
are: it has no weights, so a version is only a number and there is nothing to snapshot, load,
drain or free; the split would add an empty learner and weight code to what is a timer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gyms import Candidate, Gym, Task
from trainer.policies.base import Accelerator, Policy
from trainer.policies.batching import BatchingEngine
from trainer.policies.profiles import HardwareProfile
from trainer.rules.answers import SKILL, TIMEOUT_RATE, AnswerMix, response_tokens
from trainer.rules.context import feedback_tokens, next_prompt_tokens
from trainer.rules.placement import DEFAULT_PLACEMENT, PLACEMENTS
from trainer.types import Generation, Group, Request

if TYPE_CHECKING:
    from trainer.policies.registry import PolicyContext



class ReplayPolicy(Policy):
    name = "replay"
    emulated = True

    def __init__(
        self,
        gym: Gym,
        profile: HardwareProfile,
        *,
        skill: float = SKILL,
        timeout_rate: float = TIMEOUT_RATE,
        seed: int = 0,
        placement: str = DEFAULT_PLACEMENT,
    ) -> None:
        super().__init__()
        self.mix = AnswerMix(skill, timeout_rate)
        if placement not in PLACEMENTS:
            raise ValueError(f"placement is 'colocated' or 'disaggregated', got {placement!r}")
        self.gym = gym
        self.profile = profile
        self.seed = seed
        self.placement = placement
        self._accelerator = Accelerator() if placement == "colocated" else None
        self._candidates_lock = threading.Lock()
        self._candidates: dict[str, list[Candidate]] = {}
        self._engine = BatchingEngine(self.accelerator, self._record_engine_call, profile.generate_call_s,
                                      closed=self._training_claimed)  # fmt: skip

    def accelerator(self) -> contextlib.AbstractContextManager[Any]:
        return self._accelerator if self._accelerator is not None else contextlib.nullcontext()

    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        generations = [self._pick(r, self._rng(r, position), version) for position, r in enumerate(requests)]
        seconds = sum(self.profile.request_s(len(g.prompt_tokens), len(g.response_tokens)) for g in generations)
        decode_s = max(self.profile.decode_s(len(g.response_tokens)) for g in generations)
        self._engine.serve(seconds, version, decode_s)
        return generations

    def _record_engine_call(self, start: float, end: float, version: int) -> None:
        if self.events is not None:
            self.events.engine_call(start, end, version)

    def _training_claimed(self) -> bool:
        """Colocated: training waits for the accelerator, so the call in progress admits no one."""
        return self._accelerator is not None and self._accelerator.claimed()

    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        """One sequence per trajectory, as the learner trains: its last turn's prompt and response
        (the earlier turns are its prefix, not counted again)."""
        tokens = sum(len(traj.sequence()[0]) for g in groups for traj in g.trajectories)
        time.sleep(self.profile.actor_train_s(tokens))
        return {"tokens": float(tokens)}

    def update_weights(self) -> int:
        time.sleep(self.profile.update_weights_s)
        with self._lock:
            self.version += 1
            return self.version

    def _rng(self, request: Request, position: int) -> random.Random:
        """The draws of one action: seeded by (seed, task, group, sample, turn) alone. A request
        from outside a run (no group or sample) stands at its position in the generate call."""
        group = "-" if request.group is None else request.group
        sample = position if request.sample is None else request.sample
        key = json.dumps([self.seed, request.task.id, group, sample, request.turn])
        return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))

    def prepare(self, tasks: Sequence[Task]) -> None:
        """The candidates of every task the run may draw, read before its clock starts: a gym
        may simulate mutant designs for them, which is no generation, and which a gym that
        caches them per process would otherwise charge to the first mode alone."""
        for task in tasks:
            self._candidates_of(task)

    def _candidates_of(self, task: Task) -> list[Candidate]:
        with self._candidates_lock:
            if task.id not in self._candidates:
                self._candidates[task.id] = self.gym.candidates(task, random.Random(task.id))
            return self._candidates[task.id]

    def _pick(self, request: Request, rng: random.Random, version: int) -> Generation:
        choice = self.mix.pick(self._candidates_of(request.task), rng)
        n_response = response_tokens(self.profile.response_tokens, rng)
        return Generation(
            text=choice.action,
            prompt_tokens=self._prompt_ids(request),
            response_tokens=[0] * n_response,
            logprobs=[0.0] * n_response,
            version=version,
        )

    def _prompt_ids(self, request: Request) -> list[int]:
        """The first turn's: the profile's prompt length. A later turn's: the previous turn's
        prompt and response ids as generated, then placeholders up to the length the rule gives
        (trainer/rules/context.py: the feedback message's estimated tokens)."""
        previous = request.previous
        if previous is None:
            return [0] * self.profile.prompt_tokens
        ids = previous.prompt_tokens + previous.response_tokens
        grown = next_prompt_tokens(len(previous.prompt_tokens), len(previous.response_tokens),
                                   feedback_tokens(request.messages[-1].content))  # fmt: skip
        return ids + [0] * (int(grown) - len(ids))

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "profile": self.profile.name, "skill": str(self.mix.skill)}


def from_spec(rest: str, context: PolicyContext) -> ReplayPolicy:
    """`replay`: the gym's own candidate answers, accelerator stages emulated (registry.py)."""
    if rest:
        raise ValueError(f"the replay policy takes no options (got replay:{rest}); its stage times come from --profile")
    return ReplayPolicy(context.gym, context.profile, seed=context.seed, placement=context.placement or DEFAULT_PLACEMENT)
