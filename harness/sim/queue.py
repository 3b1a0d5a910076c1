"""n identical servers fed from one FIFO queue: the gym pool.

FIFO means jobs start in arrival order, each on the server that frees first, so a job's start
and end are known the moment it arrives (the Kiefer-Wolfowitz recursion): no start or finish
events are needed, only a heap of the times the servers become free. Jobs must arrive in time
order, which an event loop gives.
"""

from __future__ import annotations

from heapq import heapreplace


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
