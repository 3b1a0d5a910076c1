"""Spans on one monotonic clock: every metric of a run is computed from these.

Rollout spans also name what they belong to (`group`, `sample`, `turn`; None where a field does
not apply), which the wait attribution (trainer/attribution.py) follows: `generate_request` (an
episode's request, from asking to its answer), `gym_queue` (an answer waiting for a free gym
worker, from submit to start) and `gym_step` name group, sample and turn, and `group` runs from
a group's start to its put into the ready buffer. `generate` is one engine call, which may
serve requests of several groups, so it names none. timeline.jsonl leaves out the fields that are None, so spans without them
read as before, and files written before these fields existed read the same way.
"""

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
    group: int | None = None  # the rollout group (its id in the run)
    sample: int | None = None  # the sample within the group
    turn: int | None = None  # the episode turn, from 1

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

    def add(
        self, resource: str, kind: str, start: float, end: float, step: int,
        *, group: int | None = None, sample: int | None = None, turn: int | None = None,
    ) -> None:  # fmt: skip
        with self._lock:
            self.spans.append(Span(resource, kind, start, end, step, group, sample, turn))

    @contextmanager
    def span(
        self, resource: str, kind: str, step: int, *, group: int | None = None, turn: int | None = None
    ) -> Iterator[None]:
        start = self.now()
        try:
            yield
        finally:
            self.add(resource, kind, start, self.now(), step, group=group, turn=turn)

    def select(self, resource: str | None = None, kind: str | None = None) -> list[Span]:
        with self._lock:
            return [
                s for s in self.spans if (resource is None or s.resource == resource) and (kind is None or s.kind == kind)
            ]

    def write_jsonl(self, path: Path, mode: str) -> None:
        with path.open("a") as f:
            for s in sorted(self.spans, key=lambda s: s.start):
                fields = {k: v for k, v in asdict(s).items() if v is not None}
                f.write(json.dumps({"mode": mode, **fields}) + "\n")
