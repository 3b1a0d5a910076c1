"""Spans on one monotonic clock: every metric of a run is computed from these."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Span:
    resource: str  # "trainer", "rollout", "gym-0", ...
    kind: str  # "train_wait", "actor_train", "update_weights", "generate", "gym_step", ...
    start: float  # seconds since the run's origin
    end: float
    step: int  # the trainer step (policy version) the span belongs to

    @property
    def duration(self) -> float:
        return self.end - self.start


class Timeline:
    def __init__(self) -> None:
        self.origin = time.monotonic()
        self.spans: list[Span] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.origin

    def at(self, monotonic: float) -> float:
        """A time.monotonic() reading on this timeline's scale."""
        return monotonic - self.origin

    def add(self, resource: str, kind: str, start: float, end: float, step: int) -> None:
        with self._lock:
            self.spans.append(Span(resource, kind, start, end, step))

    @contextmanager
    def span(self, resource: str, kind: str, step: int) -> Iterator[None]:
        start = self.now()
        try:
            yield
        finally:
            self.add(resource, kind, start, self.now(), step)

    def select(self, resource: str | None = None, kind: str | None = None) -> list[Span]:
        with self._lock:
            return [
                s for s in self.spans if (resource is None or s.resource == resource) and (kind is None or s.kind == kind)
            ]

    def write_jsonl(self, path: Path, mode: str) -> None:
        with path.open("a") as f:
            for s in sorted(self.spans, key=lambda s: s.start):
                f.write(json.dumps({"mode": mode, **asdict(s)}) + "\n")
