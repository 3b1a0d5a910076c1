"""One continuously batching rollout engine on the simulator's clock.

Which requests share a call and how long it lasts are trainer/rules/batching.py's rules, as the
replay policy's engine follows them; this keeps the engine's time: when its call ends, and the
seconds it was busy. Under colocated placement a call waits for the accelerator, and takes its
batch when it gets it: the event loop decides when `start` may run.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from trainer.rules.batching import call_seconds, next_call

R = TypeVar("R")  # a request: whatever the event loop answers at the call's end


class BatchingEngine(Generic[R]):
    __slots__ = ("call_s", "waiting", "batch", "end", "busy")

    def __init__(self, call_s: float) -> None:
        self.call_s = call_s  # per call, whatever its size
        self.waiting: list[tuple[R, float]] = []  # requests for the next call, with their response times
        self.batch: list[R] | None = None  # the requests of the call in progress; None: idle
        self.end = 0.0  # when the call in progress (or the last one) ends
        self.busy = 0.0  # seconds of every call started so far

    def ask(self, request: R, response_s: float) -> None:
        self.waiting.append((request, response_s))

    def start(self, now: float) -> float:
        """Start a call with the requests the rule gives it (the engine is idle); returns its end."""
        batch, self.waiting = next_call(self.waiting)
        seconds = call_seconds(self.call_s, sum(response_s for _, response_s in batch))
        self.batch = [request for request, _ in batch]
        self.end = now + seconds
        self.busy += seconds
        return self.end

    def finish(self) -> list[R]:
        """The call in progress ended: the requests it answers."""
        batch, self.batch = self.batch, None
        assert batch is not None
        return batch

    def busy_after(self, t: float) -> float:
        """Seconds of the calls started so far that fall after `t` (at most the one in progress)."""
        return self.end - t if self.batch is not None and self.end > t else 0.0
