"""A gym pool that spans nodes, in the simulator: remote workers pay a dispatch per step
(harness/sim/queue.py `MixedServers`, `PriorityServers`; `SimConfig.remote_gym_workers`, `dispatch_s`)."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import asdict

import numpy as np
import pytest
from conftest import ROOT, harness

from harness.costcard import CostCard
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig, simulate
from harness.sim.queue import DISPATCH_S, MixedServers, PriorityServers, Servers, servers
from harness.sim.stages import Stages
from trainer.metrics import summarize

RESULTS = ROOT / "tests" / "fixtures" / "results"
TASKS = {**{f"fast-{i}": 1.0 for i in range(6)}, **{f"slow-{i}": 5.0 for i in range(2)}}


def card(service: Distribution, by_task: dict[str, float] | None = None) -> CostCard:
    return CostCard("toy", "test", {}, service, (0.5, 0.3, 0.2), 0.0, 0.0, workers=1, calls=0,
                    by_task=dict(by_task or {}))  # fmt: skip


ACCEL = Stages("test", 0.0, Distribution.constant(0.05), Distribution.constant(1.0), 0.0, Distribution.constant(0.2))
GYM_BOUND = dict(mode="async", steps=60, batch_groups=4, group_size=4, max_staleness=1, gym_workers=8,
                 placement="disaggregated")  # fmt: skip
SERVICE = Distribution.uniform(0.5, 1.5)


def run(service=SERVICE, by_task=None, **overrides):
    return simulate(card(service, by_task), ACCEL, SimConfig(**{**GYM_BOUND, **overrides}))


def steps(result) -> list[dict]:
    return [asdict(s) for s in result.steps]


# -- the queue ----------------------------------------------------------------------------------


def test_a_fifo_job_takes_the_server_that_frees_first_and_pays_the_dispatch_there():
    queue = MixedServers(2, remote=1, dispatch_s=0.5)
    assert queue.serve(0.0, 1.0) == 1.0  # both idle: the local one
    assert queue.serve(0.0, 1.0) == 1.5  # the remote one: service + dispatch
    assert queue.serve(0.0, 1.0) == 2.0  # the local one frees first (1.0 < 1.5)
    assert queue.serve(0.0, 1.0) == 3.0  # then the remote one, free at 1.5: 1.5 + 1 + 0.5
    assert queue.busy == pytest.approx(5.0)  # 4 services and 2 dispatches: the dispatch is busy time
    assert queue.busy_after(1.0) == pytest.approx(1.0 + 2.0)


def test_no_remote_server_is_the_plain_queue():
    assert type(servers(4)) is Servers and type(servers(4, 0, 1.0)) is Servers
    with pytest.raises(ValueError, match="between 0 and 4"):
        servers(4, 5, 0.0)


def test_the_priority_queue_pays_the_dispatch_on_a_remote_server():
    queue = PriorityServers[str](2, remote=1, dispatch_s=0.5)
    assert queue.arrive(0.0, 0, 1.0, "a") == 1.0  # local first
    assert queue.arrive(0.0, 0, 1.0, "b") == 1.5  # then the remote one
    assert queue.arrive(0.2, 1, 1.0, "c") is None and queue.arrive(0.2, 0, 1.0, "d") is None
    assert queue.finish(1.0) == (2.0, "d")  # the local server freed: d (priority 0) starts there
    assert queue.finish(1.5) == (3.0, "c")  # the remote one: c, with the dispatch
    assert queue.finish(2.0) is None and queue.finish(3.0) is None and queue.idle == 2
    assert queue.busy == pytest.approx(5.0)


@pytest.mark.parametrize("remote", [1, 3])
def test_remote_servers_in_the_priority_queue_end_jobs_where_the_fifo_queue_does(remote):
    """Equal priorities: the priority queue driven by events is the FIFO queue, remote servers included."""
    rng = np.random.default_rng(5)
    arrivals = np.cumsum(rng.exponential(0.3, 2000)).tolist()
    services = rng.exponential(1.0, 2000).tolist()
    fifo = MixedServers(4, remote, 0.25)
    expected = [fifo.serve(t, s) for t, s in zip(arrivals, services)]
    queue, ends, events = PriorityServers[int](4, remote, 0.25), [0.0] * len(arrivals), []
    pending = list(zip(arrivals, services, itertools.count()))
    while pending or events:
        if pending and (not events or pending[0][0] <= events[0][0]):
            t, s, job = pending.pop(0)
            if (end := queue.arrive(t, 0, s, job)) is not None:
                heapq.heappush(events, (end, job))
        else:
            end, job = heapq.heappop(events)
            ends[job] = end
            if (started := queue.finish(end)) is not None:
                heapq.heappush(events, started)
    assert ends == pytest.approx(expected)
    assert queue.busy == pytest.approx(fifo.busy)


# -- the pipeline ---------------------------------------------------------------------------------


@pytest.mark.parametrize("schedule,by_task", [("fifo", None), ("fifo", TASKS), ("cost-aware", TASKS)])
def test_remote_workers_with_no_dispatch_change_nothing(schedule, by_task):
    """Which worker a step takes changes nothing while they cost the same: every figure is the
    plain run's, to the bit, however many are remote."""
    plain = run(by_task=by_task, schedule=schedule)
    for remote in (0, 3, 8):
        same = run(by_task=by_task, schedule=schedule, remote_gym_workers=remote, dispatch_s=0.0)
        assert steps(same) == steps(plain)
        assert summarize(same).gym_utilisation == summarize(plain).gym_utilisation


def test_every_worker_remote_is_a_gym_that_much_slower():
    """All remote with dispatch d is the one-node pool whose every step takes d more, utilisation included."""
    d = 0.3
    remote = summarize(run(remote_gym_workers=8, dispatch_s=d))
    slower = summarize(run(service=Distribution.uniform(0.5 + d, 1.5 + d)))
    assert remote.step_time_mean == pytest.approx(slower.step_time_mean, rel=1e-9)
    assert remote.trainer_idle_ratio == pytest.approx(slower.trainer_idle_ratio, rel=1e-9)
    assert remote.gym_utilisation == pytest.approx(slower.gym_utilisation, rel=1e-9)


@pytest.mark.parametrize("schedule", ["fifo", "cost-aware"])
def test_a_large_dispatch_slows_the_gym_bound_async_step_the_more_workers_are_remote(schedule):
    by_task = TASKS if schedule == "cost-aware" else None
    step = [summarize(run(by_task=by_task, schedule=schedule, remote_gym_workers=r, dispatch_s=1.0)).step_time_mean
            for r in (0, 4, 8)]  # fmt: skip
    assert step[0] < step[1] < step[2]
    assert step[2] > 1.3 * step[0]  # steps of about 1 s that cost 2 where the pool is the bottleneck


def test_the_default_dispatch_is_the_measured_constant():
    assert DISPATCH_S > 0
    default = run(remote_gym_workers=8)
    assert steps(default) == steps(run(remote_gym_workers=8, dispatch_s=DISPATCH_S))
    assert steps(default) != steps(run())


@pytest.mark.parametrize("overrides,message", [
    ({"remote_gym_workers": 9}, "--remote-gym-workers must be between 0 and --gym-workers (8), got 9"),
    ({"remote_gym_workers": -1}, "--remote-gym-workers must be between 0 and --gym-workers (8), got -1"),
    ({"dispatch_s": -0.1}, "--dispatch-s must be a number of seconds, 0 or more, got -0.1"),
    ({"dispatch_s": float("nan")}, "--dispatch-s must be a number of seconds, 0 or more, got nan"),
    ({"dispatch_s": float("inf")}, "--dispatch-s must be a number of seconds, 0 or more, got inf"),
])  # fmt: skip
def test_bad_remote_settings_are_one_clear_error(overrides, message):
    with pytest.raises(ValueError) as caught:
        SimConfig(**{**GYM_BOUND, **overrides})
    assert str(caught.value) == message


def test_harness_simulate_takes_remote_workers_and_their_dispatch():
    base = ("simulate", "--gym", "verilog", "--results", str(RESULTS), "--gym-workers", "2", "--batch", "4",
            "--steps", "20", "--mode", "async", "--json")  # fmt: skip
    plain, remote = harness(*base), harness(*base, "--remote-gym-workers", "2", "--dispatch-s", "2.0")
    assert plain.returncode == 0 and remote.returncode == 0, plain.stderr + remote.stderr
    assert '"step_time_mean"' in remote.stdout and remote.stdout != plain.stdout
    bad = harness(*base, "--remote-gym-workers", "3")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: --remote-gym-workers must be between 0 and --gym-workers (2), got 3"
