"""The gym pool's queue: n identical servers, fed FIFO (`Servers`) or by priority (`PriorityServers`).

FIFO means jobs start in arrival order, each on the server that frees first, so a job's start
and end are known the moment it arrives (the Kiefer-Wolfowitz recursion): no start or finish
events are needed, only a heap of the times the servers become free. Jobs must arrive in time
order, which an event loop gives.

A priority queue (the cost-aware schedule's deadline-first gym queue, trainer/rules/schedule.py
`step_priority`) cannot know a job's start on arrival: a job that arrives later with a lower
priority goes before it. So it starts jobs when the event loop tells it a server freed: `arrive`
starts a job at once when a server is idle, and `finish`, called at each job's end, starts the
first waiting job (lowest priority, then the earliest arrival) on the server that freed.
Both keep `busy` (service seconds of every started job) and `busy_after(t)` (the part of the
started jobs' service that falls after `t`) with the same meaning.
"""

from __future__ import annotations

import itertools
from heapq import heappop, heappush, heapreplace
from typing import Any, Generic, TypeVar

J = TypeVar("J")  # a job: whatever the event loop gets back when it starts


class Servers:
    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"a queue needs at least one server, got {n}")
        self.n = n
        self.free = [0.0] * n  # when each server is next free (a heap)
        self.busy = 0.0  # service seconds of every job so far

    def serve(self, arrival: float, service: float) -> float:
        """Queue one job; returns when it ends."""
        free = self.free[0]
        end = (arrival if arrival > free else free) + service
        heapreplace(self.free, end)
        self.busy += service
        return end

    def busy_after(self, t: float) -> float:
        """Service seconds of the jobs so far that fall after `t`. Every job arrived by `t`, so
        each server is busy without a gap from `t` until it is next free."""
        return sum(f - t for f in self.free if f > t)


class PriorityServers(Generic[J]):
    """n identical servers taking waiting jobs by priority (lower first), then in arrival order."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"a queue needs at least one server, got {n}")
        self.n = n
        self.idle = n  # servers with no job
        self.waiting: list[tuple[Any, int, float, J]] = []  # (priority, arrival number, service, job), a heap
        self.running: list[float] = []  # the started jobs' ends, a heap
        self.busy = 0.0  # service seconds of every started job
        self._arrivals = itertools.count()

    def arrive(self, now: float, priority: Any, service: float, job: J) -> float | None:
        """Queue a job at `now`; returns its end if a server was idle and it starts now, else None
        (a later `finish` starts it)."""
        if self.idle:
            self.idle -= 1
            return self._start(now, service)
        heappush(self.waiting, (priority, next(self._arrivals), service, job))
        return None

    def finish(self, now: float) -> tuple[float, J] | None:
        """A started job ended at `now` (its end, as `arrive` or `finish` gave it): the job its server
        starts next, with that job's end; None when none waits and the server goes idle."""
        heappop(self.running)  # the earliest end: the job ending now (jobs end in time order)
        if self.waiting:
            _, _, service, job = heappop(self.waiting)
            return self._start(now, service), job
        self.idle += 1
        return None

    def _start(self, now: float, service: float) -> float:
        end = now + service
        heappush(self.running, end)
        self.busy += service
        return end

    def busy_after(self, t: float) -> float:
        """Service seconds of the started jobs that fall after `t` (those still running at `t`,
        every one started by then)."""
        return sum(end - t for end in self.running if end > t)
