"""One continuously batching rollout engine on the simulator's clock.

Which requests share a call and how long it lasts are trainer/rules/batching.py's rules, as the
replay policy's engine follows them; this keeps the engine's time: when its call ends, and the
seconds it was busy. A request may join the call in progress while that call is latency-bound
(`ask` then returns True and `end` moves later). Under colocated placement a call waits for the
accelerator, and takes its batch when it gets it: the event loop decides when `start` may run.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from trainer.rules.batching import call_seconds, joins, next_call, work_seconds

R = TypeVar("R")  # a request: whatever the event loop answers at the call's end


class BatchingEngine(Generic[R]):
    __slots__ = ("call_s", "waiting", "batch", "end", "busy", "start_at", "response_s", "decode_end")

    def __init__(self, call_s: float) -> None:
        self.call_s = call_s  # per call, whatever its size
        # requests for the next call, each with its response time in a full batch and its decode time alone
        self.waiting: list[tuple[R, float, float]] = []
        self.batch: list[R] | None = None  # the requests of the call in progress; None: idle
        self.end = 0.0  # when the call in progress (or the last one) ends
        self.busy = 0.0  # seconds of every call started so far
        self.start_at = 0.0  # the call in progress: its start, its requests' summed response times,
        self.response_s = 0.0  # and when its latest decode alone ends
        self.decode_end = 0.0

    def ask(self, request: R, response_s: float, decode_s: float = 0.0, now: float | None = None,
            may_join: bool = True) -> bool:  # fmt: skip
        """A request arrives at `now`: True where it joined the call in progress (whose `end` may
        have moved later), else it waits for the next call."""
        if (may_join and self.batch is not None and now is not None
                and joins(self.start_at, now, self.call_s, self.response_s, self.decode_end)):  # fmt: skip
            self.batch.append(request)
            self.response_s += response_s
            self.decode_end = max(self.decode_end, now + decode_s)
            end = max(self.start_at + call_seconds(self.call_s, self.response_s), self.decode_end)
            self.busy += end - self.end
            self.end = end
            return True
        self.waiting.append((request, response_s, decode_s))
        return False

    def start(self, now: float) -> float:
        """Start a call with the requests the rule gives it (the engine is idle); returns its end."""
        batch, self.waiting = next_call(self.waiting)
        seconds = call_seconds(self.call_s, work_seconds((r, d) for _, r, d in batch))
        self.batch = [request for request, _, _ in batch]
        self.start_at, self.response_s = now, sum(r for _, r, _ in batch)
        self.decode_end = now + self.call_s + max((d for _, _, d in batch), default=0.0)
        self.end = now + seconds
        self.busy += seconds
        return self.end

    def hold(self, seconds: float) -> None:
        """The call in progress stops decoding for `seconds` (the engine loads new weights): it
        ends that much later, and so does its requests' decoding; the pause is not busy time."""
        self.end += seconds
        self.decode_end += seconds
        self.start_at += seconds  # its throughput-bound end moves with it

    def finish(self) -> list[R]:
        """The call in progress ended: the requests it answers."""
        batch, self.batch = self.batch, None
        assert batch is not None
        return batch

    def busy_after(self, t: float) -> float:
        """Seconds of the calls started so far that fall after `t` (at most the one in progress)."""
        return self.end - t if self.batch is not None and self.end > t else 0.0
