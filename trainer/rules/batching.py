"""Continuous batching: the rule of the replay policy's emulated engine (trainer/policies/batching.py,
on threads) and of the simulator's engines (harness/sim/engine.py, on its clock).

A call takes every request waiting when it starts (`next_call`); requests that arrive while it
runs wait and share the next call, which starts as soon as this one ends. A request that finds
the engine idle starts a call at once, alone. A call lasts a fixed cost, whatever its size, plus
its requests' response times (`call_seconds`).
"""

from __future__ import annotations

from typing import TypeVar

R = TypeVar("R")  # a request, whatever the engine answers


def next_call(waiting: list[R]) -> tuple[list[R], list[R]]:
    """The requests the next call takes, and those left to wait for the one after it: every
    request waiting when the call starts, and none."""
    return waiting, []


def call_seconds(call_s: float, response_s: float) -> float:
    """How long a call lasts whose requests' responses take `response_s` in all. The profiles'
    figures are throughputs of an engine busy with a full batch (trainer/policies/profiles.py), so
    a token costs what it does in any batch, and batching saves only the per-call cost."""
    return call_s + response_s
