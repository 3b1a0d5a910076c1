"""One continuously batching rollout engine, by the rule of trainer/policies/batching.py.

A call takes every request waiting when it starts; requests that arrive while it runs wait
and share the next call, which starts as soon as this one ends. A request that finds the
engine idle starts a call at once, alone (in the replay policy, the caller that finds the
engine idle runs the call). A call lasts a fixed cost plus its requests' response times (the
profile's generate_s of the batch's total tokens), and every request it took is answered at
its end. Under colocated placement a call waits for the accelerator, and takes its batch
when it gets it: the event loop decides when `start` may run.
"""

from __future__ import annotations

from typing import Generic, TypeVar

R = TypeVar("R")  # a request: whatever the event loop answers at the call's end


class BatchingEngine(Generic[R]):
    __slots__ = ("call_s", "waiting", "waiting_s", "batch", "end", "busy")

    def __init__(self, call_s: float) -> None:
        self.call_s = call_s  # per call, whatever its size
        self.waiting: list[R] = []  # requests for the next call
        self.waiting_s = 0.0  # their response times
        self.batch: list[R] | None = None  # the requests of the call in progress; None: idle
        self.end = 0.0  # when the call in progress (or the last one) ends
        self.busy = 0.0  # seconds of every call started so far

    def ask(self, request: R, response_s: float) -> None:
        self.waiting.append(request)
        self.waiting_s += response_s

    def start(self, now: float) -> float:
        """Start a call with every waiting request (the engine is idle); returns its end."""
        seconds = self.call_s + self.waiting_s
        self.batch, self.waiting, self.waiting_s = self.waiting, [], 0.0
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
