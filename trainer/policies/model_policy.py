"""`ModelPolicy`: a real model's policy, a `Learner` (learner.py) and an `Engine` (engine.py)
composed. The learner trains; `update_weights` publishes a copy of its weights as the next
version; the engine generates with pinned versions. The policy holds the one-version rule.

An engine that keeps each version it is given (`TorchEngine`) gets the copy at once, and
versions neither newest nor pinned are freed. An engine that holds one set of weights
(`VllmEngine`) drains, then swaps: `update_weights` publishes version v+1 at once, but the
engine keeps serving v while any group pinned to an older version is still running; new groups
wait in `acquire` meanwhile (they would need v+1), so the old groups drain and the engine swaps
when the last of them releases its pin (in `release`, on that rollout thread; in
`update_weights` itself when nothing is pinned, as under sync). The drain is reported as a
`drain` span and the load as `weight_load`. If the trainer publishes again during a drain, the
engine skips to the newest weights. Either way every generation carries the version that made
it, which the trainer's one-version check (`Trajectory.check_one_version`) holds the engine to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from trainer.policies.base import Policy
from trainer.policies.engine import Engine
from trainer.policies.learner import Learner
from trainer.types import Generation, Group, Request


class ModelPolicy(Policy):
    def __init__(self, name: str, learner: Learner, engine: Engine) -> None:
        super().__init__()
        self.name = name
        self.learner = learner
        self.engine = engine
        self._swapped = threading.Condition(self._lock)  # notified when a pending load is done
        self._pending: tuple[int, float, Any] | None = None  # (version, when published, its weights), to load once drained
        self._swapping = False
        engine.load(engine.snapshot(), 0)  # this policy's initial weights (an engine may be shared per process)

    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        return self.engine.generate(requests, version, self.events)

    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        return self.learner.train_step(groups)

    def supervised_warmup(self, pairs: Sequence[tuple[str, str]], steps: int, batch: int = 32) -> float:
        """Teach the learner a format by cross-entropy on (prompt, response) pairs, then give the
        engine its weights as the current version (before any rollout); returns the last loss."""
        loss = self.learner.supervised_warmup(pairs, steps, batch)
        with self._lock:
            if self._pins:
                raise RuntimeError("the engine's weights can change in place only while no episode is running")
            self.engine.load(self.engine.snapshot(), self.version)
        return loss

    # -- versions ------------------------------------------------------------------------------

    def acquire(self) -> int:
        with self._swapped:
            while self._pending is not None:  # a new group would need the weights being swapped in
                self._swapped.wait()
            return super().acquire()

    def release(self, version: int) -> None:
        super().release(version)
        self._swap_if_drained()

    def update_weights(self) -> int:
        weights = self.engine.snapshot()  # taken now: the learner trains on while an engine drains
        with self._lock:
            version = self.version + 1
            if self.engine.holds_one_version:
                self._pending = (version, time.monotonic(), weights)
            else:  # the load and the bump are one step: drop_unused sees both or neither
                self.engine.load(weights, version)
            self.version = version
            self.drop_unused()
        self._swap_if_drained()
        return version

    def drop_unused(self) -> None:
        with self._lock:
            self.engine.free(set(self._pins) | {self.version})

    def _swap_if_drained(self) -> None:
        """Load the published weights once no group pinned to an older version is running."""
        with self._lock:
            if self._pending is None or self._swapping or self._pins:
                return
            self._swapping = True
        try:
            while True:
                with self._lock:
                    version, published, weights = self._pending
                drained = time.monotonic()
                self.engine.load(weights, version)
                loaded = time.monotonic()
                if self.events is not None:
                    self.events.weight_sync("drain", published, drained, version)
                    self.events.weight_sync("weight_load", drained, loaded, version)
                with self._lock:
                    if self._pending[0] == version:  # else the trainer published again meanwhile
                        self._pending = None
                        self._swapped.notify_all()
                        return
        finally:
            with self._lock:
                self._swapping = False

    def describe(self) -> dict[str, str]:
        dtype = str(next(self.learner.model.parameters()).dtype).removeprefix("torch.")
        return {**super().describe(), "parameters": str(self.learner.parameter_count()), "dtype": dtype,
                **self.engine.describe()}
