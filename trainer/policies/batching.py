"""One emulated rollout engine with continuous batching, for the replay policy.

Callers on any thread hand in a request's seconds (its response tokens' time and its prompt's
prefill beyond the first turn's, `HardwareProfile.request_s`) and block until the engine call
that served it ends. Which requests share a call is trainer/rules/batching.py's rule, which the
simulator follows too. The caller that finds the engine idle runs the next call for everyone:
it first holds the accelerator (colocated: training may hold it meanwhile, and requests keep
joining), then takes the batch and runs it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainer.rules.batching import next_call, work_seconds

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
        call: Callable[[float, int], None],
    ) -> None:
        self._hold = hold  # what an engine call holds around it: the accelerator
        self._call = call  # runs one engine call: (its requests' seconds, by the rule's work_seconds; its newest version)
        self._cond = threading.Condition()
        self._waiting: list[_Request] = []
        self._busy = False

    def serve(self, seconds: float, version: int, decode_s: float = 0.0) -> None:
        """Return once an engine call has served this request, whose share of a full batch's call is
        `seconds` and which decodes alone in `decode_s`."""
        mine = _Request(seconds, version, decode_s)
        with self._cond:
            self._waiting.append(mine)
            while self._busy and not mine.served:
                self._cond.wait()
            if mine.served:
                if mine.failed is not None:
                    raise mine.failed
                return
            self._busy = True  # this caller runs the next call, for everyone waiting by then
        batch: list[_Request] = []
        failed: BaseException | None = None
        try:
            with self._hold():
                with self._cond:
                    batch, self._waiting = next_call(self._waiting)
                self._call(work_seconds((r.seconds, r.decode_s) for r in batch), max(r.version for r in batch))
        except BaseException as exc:
            failed = exc  # every request of the batch is answered with it, not as if generated
            raise
        finally:
            with self._cond:
                for r in batch:
                    r.served, r.failed = True, failed
                if not mine.served:  # the call failed before it took the batch
                    self._waiting.remove(mine)
                self._busy = False
                self._cond.notify_all()
