"""gyms/limited.py: a function run in a forked child under CPU-time and memory limits."""

from __future__ import annotations

import resource
import time

import pytest

from gyms.limited import ChildRaised, LimitExceeded, call_limited


def _spin() -> None:
    while True:
        pass


def _allocate(mb: int) -> int:
    block = bytearray(mb * 2**20)  # touched: zero-filled
    return len(block)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def _fail() -> None:
    raise KeyError("no such port")


def test_the_result_comes_back() -> None:
    assert call_limited(sorted, [3, 1, 2], cpu_s=1, memory_mb=64, wall_s=10) == [1, 2, 3]


def test_a_loop_ends_at_its_cpu_limit() -> None:
    with pytest.raises(LimitExceeded) as raised:
        call_limited(_spin, cpu_s=1, memory_mb=64, wall_s=30)
    assert raised.value.kind == "cpu" and "1 s of CPU time" in str(raised.value)


def test_memory_beyond_the_limit_is_refused_and_the_caller_does_not_grow() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert call_limited(_allocate, 100, cpu_s=5, memory_mb=300, wall_s=30) == 100 * 2**20  # within the limit
    with pytest.raises(LimitExceeded) as raised:
        call_limited(_allocate, 1000, cpu_s=5, memory_mb=300, wall_s=30)
    assert raised.value.kind == "memory"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 50, f"the caller grew by {grown_mb:.0f} MB"


def test_a_child_that_uses_no_cpu_is_stopped_by_the_wall_clock_backstop() -> None:
    with pytest.raises(LimitExceeded, match="wall-clock backstop") as raised:
        call_limited(_sleep, 60, cpu_s=1, memory_mb=64, wall_s=0.5)
    assert raised.value.kind == "cpu"


def test_an_exception_in_the_child_is_raised_with_its_type_and_place() -> None:
    with pytest.raises(ChildRaised, match=r"KeyError: 'no such port' \(at .*test_limited.py:\d+\)"):
        call_limited(_fail, cpu_s=1, memory_mb=64, wall_s=10)
