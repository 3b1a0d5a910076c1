"""One emulated rollout engine with continuous batching, for the replay policy.

Callers on any thread hand in a request's seconds (its response tokens' time and its prompt's
prefill beyond the first turn's, `HardwareProfile.request_s`) and its decode time alone, and
block until the engine call that served it ends. Which requests share a call, how long it lasts
and who may join it are trainer/rules/batching.py's rules, which the simulator follows too
(harness/sim/engine.py). The caller that finds the engine idle runs the next call for everyone:
it first holds the accelerator (colocated: training may hold it meanwhile, and requests keep
queueing), then takes the batch and waits until the call's end under the condition variable. A
request that arrives while the call is latency-bound joins it and may push that end out; none
joins once another stage waits for the accelerator (`closed`: colocated training has claimed it
for after this call, as in the simulator). One call, one `record(start, end, version)`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainer.rules.batching import call_seconds, joins, next_call, work_seconds


@dataclass
class _Request:
    seconds: float
    version: int
    decode_s: float = 0.0  # decoding alone, at the profile's per-sequence rate
    served: bool = False
    failed: BaseException | None = None  # what ended the call that took this request, if it raised


class BatchingEngine:
    def __init__(
        self,
        hold: Callable[[], contextlib.AbstractContextManager[Any]],
        record: Callable[[float, float, int], None],
        call_s: float = 0.0,
        *,
        closed: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._hold = hold  # what an engine call holds around it: the accelerator
        self._record = record  # one call ended: (start, end, the newest version it served)
        self._call_s = call_s  # per call, whatever its size
        self._closed = closed  # True: no request may join the call in progress
        self._clock = clock  # injected by tests; the recorded times are its
        self._cond = threading.Condition()
        self._waiting: list[_Request] = []
        self._busy = False
        self._batch: list[_Request] | None = None  # the call in progress, once it has taken its requests
        self._start = self._response_s = self._decode_end = self._end = 0.0

    def serve(self, seconds: float, version: int, decode_s: float = 0.0) -> None:
        """Return once an engine call has served this request, whose share of a full batch's call is
        `seconds` and which decodes alone in `decode_s`."""
        mine = _Request(seconds, version, decode_s)
        with self._cond:
            if not self._join(mine):
                self._waiting.append(mine)
            while self._busy and not mine.served:
                self._cond.wait()
            if mine.served:
                if mine.failed is not None:
                    raise mine.failed
                return
            self._busy = True  # this caller runs the next call, for everyone waiting by then
        self._run(mine)

    def wake(self) -> None:
        """The clock moved (an injected clock's owner says so): the call's runner looks again."""
        with self._cond:
            self._cond.notify_all()

    def _join(self, request: _Request) -> bool:
        """Under the lock: the request joins the call in progress where the rule lets it."""
        now = self._clock()
        if self._batch is None or self._closed():
            return False
        if not joins(self._start, now, self._call_s, self._response_s, self._decode_end):
            return False
        self._batch.append(request)
        self._response_s += request.seconds
        self._decode_end = max(self._decode_end, now + request.decode_s)
        self._end = max(self._start + call_seconds(self._call_s, self._response_s), self._decode_end)
        self._cond.notify_all()  # the runner's deadline may have moved
        return True

    def _run(self, mine: _Request) -> None:
        batch: list[_Request] = []
        failed: BaseException | None = None
        try:
            with self._hold():
                with self._cond:
                    batch, self._waiting = next_call(self._waiting)
                    start = self._start = self._clock()
                    self._response_s = sum(r.seconds for r in batch)
                    self._decode_end = start + self._call_s + max(r.decode_s for r in batch)
                    self._end = start + call_seconds(self._call_s, work_seconds((r.seconds, r.decode_s) for r in batch))
                    self._batch = batch  # requests may join from here
                    while (now := self._clock()) < self._end:
                        self._cond.wait(self._end - now)
                    self._batch = None  # the call is over: none joins it any more
                self._record(start, now, max(r.version for r in batch))
        except BaseException as exc:
            failed = exc  # every request of the batch is answered with it, not as if generated
            raise
        finally:
            with self._cond:
                self._batch = None
                for r in batch:
                    r.served, r.failed = True, failed
                if not mine.served:  # the call failed before it took the batch
                    self._waiting.remove(mine)
                self._busy = False
                self._cond.notify_all()
