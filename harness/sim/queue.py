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

Remote workers (a pool that spans nodes): `remote` of the n servers sit on nodes other than the
trainer's, and a job there takes its service plus `dispatch_s`, the Ray round trip. The job still
goes to the server that frees first (FIFO) or that freed (priority), remote or not; among idle
servers, the one idle longest (local first at the start). The dispatch counts as busy time: the
worker's slot is held for the round trip, and the real pool's gym step spans, from which a run's
utilisation is computed, time the call from the driver (gyms/pool.py `SlotPool._serve`).
With no remote server, `servers` gives the plain `Servers`, unchanged, so a pool on one node
costs and computes what it always did.
"""

from __future__ import annotations

import itertools
from collections import deque
from heapq import heappop, heappush, heapreplace
from typing import Any, Generic, TypeVar

J = TypeVar("J")  # a job: whatever the event loop gets back when it starts

# What a gym step costs on a Ray actor beyond a local worker process: the call's round trip
# (pickle the episode, Ray's hop, the reply back). Measured at commit a10586a, clean tree, on the
# 2-core development machine (load average 0.75), Ray 2.60, 2 workers per pool, null gym:
#   .venv/bin/python benchmarks/dispatch_latency.py  ->  1.230 ms [1.192, 1.267] (mean, 95 %, 10 rounds of 200 calls)
# One machine, so no network: a real cluster adds the round trip between its nodes (not measured
# here; `ping` between them gives it), passed as --dispatch-s. A loaded driver pays more: 1.4-2.2 ms
# per call inside a whole pipeline run (docs/ray.md, benchmarks/ray_overhead.py).
DISPATCH_S = 0.00123


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


class MixedServers(Servers):
    """FIFO servers of which `remote` add `dispatch_s` to each job: two heaps of free times, local and
    remote, so a job takes the one that frees first (a local one on a tie) at a comparison's cost."""

    def __init__(self, n: int, remote: int, dispatch_s: float) -> None:
        super().__init__(n)
        if not 0 <= remote <= n:
            raise ValueError(f"remote servers must be between 0 and {n}, got {remote}")
        self.free = [0.0] * (n - remote)  # the local servers' (a heap)
        self.remote_free = [0.0] * remote  # the remote servers'
        self.dispatch_s = dispatch_s

    def serve(self, arrival: float, service: float) -> float:
        local, remote = self.free, self.remote_free
        if not remote or (local and local[0] <= remote[0]):
            return super().serve(arrival, service)
        free = remote[0]
        end = (arrival if arrival > free else free) + service + self.dispatch_s
        heapreplace(remote, end)
        self.busy += service + self.dispatch_s
        return end

    def busy_after(self, t: float) -> float:
        return super().busy_after(t) + sum(f - t for f in self.remote_free if f > t)


def servers(n: int, remote: int = 0, dispatch_s: float = 0.0) -> Servers:
    """A FIFO pool of n servers, `remote` of them paying `dispatch_s` per job."""
    return MixedServers(n, remote, dispatch_s) if remote else Servers(n)


class PriorityServers(Generic[J]):
    """n identical servers taking waiting jobs by priority (lower first), then in arrival order."""

    def __init__(self, n: int, remote: int = 0, dispatch_s: float = 0.0) -> None:
        if n < 1:
            raise ValueError(f"a queue needs at least one server, got {n}")
        if not 0 <= remote <= n:
            raise ValueError(f"remote servers must be between 0 and {n}, got {remote}")
        self.n = n
        # The idle servers, each as whether it is remote, the one idle longest first (local first at the start)
        self.idle_servers: deque[bool] = deque([False] * (n - remote) + [True] * remote)
        self.waiting: list[tuple[Any, int, float, J]] = []  # (priority, arrival number, service, job), a heap
        self.running: list[tuple[float, bool]] = []  # the started jobs' (end, on a remote server), a heap
        self.busy = 0.0  # service seconds of every started job (with the dispatch on a remote server)
        self.dispatch_s = dispatch_s
        self._arrivals = itertools.count()

    def arrive(self, now: float, priority: Any, service: float, job: J) -> float | None:
        """Queue a job at `now`; returns its end if a server was idle and it starts now, else None
        (a later `finish` starts it)."""
        if self.idle_servers:
            return self._start(now, service, self.idle_servers.popleft())
        heappush(self.waiting, (priority, next(self._arrivals), service, job))
        return None

    def finish(self, now: float) -> tuple[float, J] | None:
        """A started job ended at `now` (its end, as `arrive` or `finish` gave it): the job its server
        starts next, with that job's end; None when none waits and the server goes idle."""
        _, remote = heappop(self.running)  # the earliest end: the job ending now (jobs end in time order)
        if self.waiting:
            _, _, service, job = heappop(self.waiting)
            return self._start(now, service, remote), job
        self.idle_servers.append(remote)
        return None

    @property
    def idle(self) -> int:
        """Servers with no job."""
        return len(self.idle_servers)

    def _start(self, now: float, service: float, remote: bool) -> float:
        if remote:
            service += self.dispatch_s
        end = now + service
        heappush(self.running, (end, remote))
        self.busy += service
        return end

    def busy_after(self, t: float) -> float:
        """Service seconds of the started jobs that fall after `t` (those still running at `t`,
        every one started by then)."""
        return sum(end - t for end, _ in self.running if end > t)
