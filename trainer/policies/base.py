"""The policy interface shared by the replay, tiny, hf and vllm backends.

A policy has two sides, as a real RL system does: a rollout engine that generates with a
pinned weight version, and a learner that takes GRPO steps. `update_weights` publishes the
learner's weights to the rollout engine as the next version. Rollout workers `acquire` the
latest version at the start of an episode group and `release` it at its end, so every turn
of an episode uses one version even while newer ones are published.

Every episode of every rollout thread calls `generate` on its own, concurrently: a policy
serialises (or batches) the calls itself, and stamps each `Generation` with the version whose
weights produced it. One lock (`_lock`) guards the newest version and the pins, and the
versions an engine keeps with them (model_policy.py), so no version can be freed between its
publication and its bump or while it is pinned.
"""

from __future__ import annotations

import contextlib
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from gyms import Task
from trainer.types import Generation, Group, Request


class Accelerator:
    """One accelerator pool that the stages of a colocated policy hold in turn, first come first
    served: a plain lock would let the rollout threads, which call generate back to back, keep
    the trainer waiting. A holder interrupted while it waits gives its turn up."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0  # the next ticket to hand out
        self._serving = 0  # the ticket that holds the accelerator
        self._abandoned: set[int] = set()

    def __enter__(self) -> None:
        with self._cond:
            ticket = self._next
            self._next += 1
            try:
                while ticket != self._serving:
                    self._cond.wait()
            except BaseException:
                self._abandoned.add(ticket)
                self._advance()
                raise

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._serving += 1
            self._advance()

    def claimed(self) -> bool:
        """Whether a stage waits behind the holder (colocated: training has asked for the
        accelerator, so the engine call in progress admits no more requests)."""
        with self._cond:
            return self._next - self._serving > 1

    def _advance(self) -> None:
        while self._serving in self._abandoned:
            self._abandoned.remove(self._serving)
            self._serving += 1
        self._cond.notify_all()


class PolicyEvents(Protocol):
    """What a policy reports while a run records it (`Policy.reporting_to`); times are
    time.monotonic()."""

    def engine_call(self, start: float, end: float, version: int) -> None:
        """One engine call, of one or many requests, with the weights of `version`."""

    def weight_sync(self, kind: str, start: float, end: float, version: int) -> None:
        """An engine that swaps weights in place (vllm policy): `drain`, from publication until
        no older version runs, then `weight_load`."""


class Policy(ABC):
    name: str
    emulated = False  # True where accelerator stages only take a profile's time
    # Where emulated stages run: "colocated" (one accelerator pool time-shares generation and
    # training) or "disaggregated" (rollout and training accelerators of their own). None for a
    # real model, whose stages take whatever the hardware gives them.
    placement: str | None = None

    def __init__(self) -> None:
        self.version = 0  # the newest published version
        self._pins: Counter[int] = Counter()
        self._lock = threading.RLock()  # the version, the pins and the versions an engine keeps
        self.events: PolicyEvents | None = None  # set by `reporting_to`, for the length of a run

    @contextlib.contextmanager
    def reporting_to(self, events: PolicyEvents) -> Iterator[None]:
        """Report engine calls and weight swaps to `events` while the block runs (a run's timeline)."""
        self.events = events
        try:
            yield
        finally:
            self.events = None

    def prepare(self, tasks: Sequence[Task]) -> None:
        """Per-task set-up, done before a run's clock starts, so that it is no stage of the run
        and costs every mode alike (the replay policy reads the gym's candidates, which may
        simulate mutant designs). Nothing by default."""

    @abstractmethod
    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        """Generate one response per request with the weights of `version` (pinned by the
        caller); safe to call from many threads at once."""

    @abstractmethod
    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        """One optimizer step on a batch of groups; returns loss statistics."""

    @abstractmethod
    def update_weights(self) -> int:
        """Publish the learner's weights to the rollout engine; returns the new version."""

    def acquire(self) -> int:
        with self._lock:
            version = self.version
            self._pins[version] += 1
            return version

    def release(self, version: int) -> None:
        with self._lock:
            self._pins[version] -= 1
            if self._pins[version] <= 0:
                del self._pins[version]
            self.drop_unused()

    def pinned(self) -> set[int]:
        with self._lock:
            return set(self._pins)

    def accelerator(self) -> contextlib.AbstractContextManager[Any]:
        """What an accelerator stage's caller holds around it, outside the stage's span: the
        policy's engine around each engine call, the trainer around actor_train together with
        update_weights. A colocated policy's one `Accelerator`; nothing by default."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def _engine_call(self, version: int) -> Iterator[None]:
        """Around one engine call (of one or many requests): reports it to `events`."""
        start = time.monotonic()
        yield
        if self.events is not None:
            self.events.engine_call(start, time.monotonic(), version)

    def drop_unused(self) -> None:
        """Free rollout weights of versions that are neither newest nor pinned (under `_lock`)."""

    def describe(self) -> dict[str, str]:
        described = {"policy": self.name, "emulated": str(self.emulated).lower()}
        return described | ({"placement": self.placement} if self.placement else {})
