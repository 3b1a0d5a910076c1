"""Continuous batching: the rule of the replay policy's emulated engine (trainer/policies/batching.py,
on threads) and of the simulator's engines (harness/sim/engine.py, on its clock).

A call takes every request waiting when it starts (`next_call`); requests that arrive while it
runs wait and share the next call, which starts as soon as this one ends, unless the call is
latency-bound when they arrive (`joins`): then the engine has room, admits them into the running
decode, and the call ends when its last request is done. A request that finds the engine idle
starts a call at once, alone. A call lasts a fixed cost, whatever its size, plus
the larger of two times (`work_seconds`, `call_seconds`):

* throughput-bound: its requests' response times summed, each at the profile's per-token cost of
  an engine busy with a full batch;
* latency-bound: its longest request decoding alone, at the profile's per-sequence rate
  (`HardwareProfile.decode_s_per_token`): a sequence decodes one token at a time however empty
  the engine is, so a small batch is as slow as its longest response.

A profile without a per-sequence rate has every request's decode time 0: throughput-bound only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

R = TypeVar("R")  # a request, whatever the engine answers


def next_call(waiting: list[R]) -> tuple[list[R], list[R]]:
    """The requests the next call takes, and those left to wait for the one after it: every
    request waiting when the call starts, and none."""
    return waiting, []


def work_seconds(requests: Iterable[tuple[float, float]]) -> float:
    """The decoding time of a call's requests, each (its response time in a full batch, its decode
    time alone): the sum of the first, or the longest of the second where that is longer."""
    total = longest = 0.0
    for response_s, decode_s in requests:
        total += response_s
        longest = max(longest, decode_s)
    return max(total, longest)


def joins(start: float, now: float, call_s: float, response_s: float, decode_end: float) -> bool:
    """Whether a request arriving at `now` joins the call that started at `start`, whose requests
    take `response_s` in a full batch and whose latest decode (each request's arrival plus its
    decode time alone) ends at `decode_end`: yes while the call is latency-bound (the engine is
    not full, so continuous batching admits it at the next decode step). Never without a
    per-sequence rate (decode times 0): a throughput-bound call is a full engine."""
    return decode_end > start + call_s + response_s and now < decode_end


def call_seconds(call_s: float, response_s: float) -> float:
    """How long a call lasts whose requests take `response_s` (`work_seconds`). The profiles'
    throughput figures are those of an engine busy with a full batch (trainer/policies/profiles.py),
    so a token costs what it does in any batch large enough to be throughput-bound, and batching
    saves only the per-call cost."""
    return call_s + response_s
