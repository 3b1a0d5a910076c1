"""The engine of the `tiny` and `hf` policies: torch sampling on frozen copies of the learner's
model, one per live version (at most max_staleness + 1 are pinned at once).

Sampling recomputes the full sequence each token (no KV cache): simple, and fast enough for the
small models these policies run on CPU; large-model rollouts belong to a serving engine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import torch

from trainer.policies.base import PolicyEvents
from trainer.policies.engine import Engine
from trainer.policies.learner import Learner
from trainer.types import Generation, Request


class TorchEngine(Engine):
    def __init__(self, learner: Learner, seed: int = 0) -> None:
        self.learner = learner
        # version -> rollout weights; changed only under the policy's lock (load, free), and
        # never a version that is pinned or newest, so a call's weights stay while it runs
        self.versions: dict[int, torch.nn.Module] = {}
        self._turn = threading.Lock()  # one engine: concurrent callers take turns
        self._generator = torch.Generator(device=learner.device).manual_seed(seed)

    @torch.no_grad()
    def generate(self, requests: Sequence[Request], version: int, events: PolicyEvents | None) -> list[Generation]:
        with self._turn:  # one call each, not batched together
            start = time.monotonic()
            model = self.versions[version]
            results: dict[int, Generation] = {}
            # Requests with the same prompt ids (a GRPO group's first turn) are sampled as one batch.
            by_prompt: dict[tuple[int, ...], list[int]] = {}
            for i, r in enumerate(requests):
                ids = self.learner.prompt_ids(r)
                if ids is None:
                    results[i] = Generation.context_full_at(version)
                else:
                    by_prompt.setdefault(tuple(ids), []).append(i)
            for ids, indices in by_prompt.items():
                for i, gen in zip(indices, self._sample(model, version, list(ids), len(indices))):
                    results[i] = gen
            if events is not None:
                events.engine_call(start, time.monotonic(), version)
            return [results[i] for i in range(len(requests))]

    def _sample(self, model: torch.nn.Module, version: int, prompt_tokens: list[int], n: int) -> list[Generation]:
        learner, device = self.learner, self.learner.device
        ids = torch.tensor([prompt_tokens] * n, device=device)
        tokens: list[list[int]] = [[] for _ in range(n)]
        logprobs: list[list[float]] = [[] for _ in range(n)]
        alive = torch.ones(n, dtype=torch.bool, device=device)
        for _ in range(learner.max_new_tokens):
            logp = learner.next_token_logprobs(model, ids)
            nxt = torch.multinomial(logp.exp(), 1, generator=self._generator).squeeze(1)
            for row in alive.nonzero().flatten().tolist():
                tokens[row].append(int(nxt[row]))
                logprobs[row].append(float(logp[row, nxt[row]]))
            alive &= nxt != learner.tokenizer.eos_id
            if not alive.any():
                break
            ids = torch.cat([ids, nxt.unsqueeze(1)], dim=1)
        decode = learner.tokenizer.decode
        return [Generation(decode(t), prompt_tokens, t, lp, version) for t, lp in zip(tokens, logprobs)]

    def snapshot(self) -> torch.nn.Module:
        return self.learner.frozen_copy()

    def load(self, weights: torch.nn.Module, version: int) -> None:
        self.versions[version] = weights

    def free(self, keep: set[int]) -> None:
        for version in [v for v in self.versions if v not in keep]:
            del self.versions[version]

    def describe(self) -> dict[str, str]:
        return {"device": str(self.learner.device)}  # the learner's: the engine samples beside it
