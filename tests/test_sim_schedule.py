"""The simulator's tasks, schedule and fates (harness/sim/pipeline.py) and the priority queue
(harness/sim/queue.py)."""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from dataclasses import asdict, replace

import numpy as np
import pytest

from harness.costcard import CostCard, turn_pmf
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig, simulate
from harness.sim.queue import PriorityServers, Servers
from harness.sim.stages import Stages
from trainer.bias import audit
from trainer.metrics import summarize
from trainer.rollout import TaskSampler
from trainer.types import DROPPED_STALE, ERRORED, IN_FLIGHT, TRAINED

# Two task classes: six fast tasks and two five times slower, over up to 3 turns
TWO_CLASSES = {**{f"fast-{i}": 1.0 for i in range(6)}, **{f"slow-{i}": 5.0 for i in range(2)}}


def card(service: Distribution, by_task: dict[str, float] | None = None, turns=(0.5, 0.3, 0.2), error_rate=0.0):
    return CostCard("toy", "test", {}, service, tuple(turns), error_rate, 0.0, workers=1, calls=0,
                    by_task=dict(by_task or {}))  # fmt: skip


def stages(response_s: float, train_s: float, update_s: float) -> Stages:
    return Stages("test", 0.0, Distribution.constant(response_s), Distribution.constant(train_s), 0.0,
                  Distribution.constant(update_s))  # fmt: skip


GYM_BOUND = dict(mode="async", steps=60, batch_groups=4, group_size=4, max_staleness=1, gym_workers=8,
                 placement="disaggregated")  # fmt: skip
ACCEL = stages(0.05, 1.0, 0.2)


def run_schedule(schedule: str, seed: int, **overrides):
    config = SimConfig(**{**GYM_BOUND, "schedule": schedule, "seed": seed, **overrides})
    return simulate(card(Distribution.uniform(0.5, 1.5), TWO_CLASSES), ACCEL, config)


# -- the bias, and what cost-aware does about it ---------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fifo_drops_the_slow_tasks_and_cost_aware_trains_them(seed):
    """At max_staleness 1, fifo trains the groups that complete first: a slow task's group is
    overtaken by the fast ones and goes stale. Cost-aware waits for it at its last step."""
    fifo, aware = audit(run_schedule("fifo", seed).fates), audit(run_schedule("cost-aware", seed).fates)
    assert fifo["slow_fast_acceptance"] < 0.7
    assert fifo["fates"][DROPPED_STALE] > 0 and fifo["gym_s_dropped_share"] > 0.2
    assert aware["slow_fast_acceptance"] == 1.0
    assert aware["fates"][DROPPED_STALE] == 0 and aware["gym_s_dropped_share"] == 0.0
    # what fifo dropped is mostly the slow tasks' (a quarter of the tasks)
    dropped = Counter(f.task_id.split("-")[0] for f in run_schedule("fifo", seed).fates if f.fate == DROPPED_STALE)
    assert dropped["slow"] > 3 * dropped["fast"]


@pytest.mark.parametrize("overrides", [
    {}, {"max_staleness": 2}, {"oversample": 2}, {"mode": "sync"}, {"mode": "sync", "oversample": 1},
    {"gym_workers": 3, "max_staleness": 3, "batch_groups": 2},
])  # fmt: skip
def test_cost_aware_never_trains_past_the_bound_and_keeps_the_books(overrides):
    noisy = card(Distribution.uniform(0.0, 3.0), TWO_CLASSES, turns=turn_pmf(0.5, 3), error_rate=0.05)
    config = SimConfig(**{**GYM_BOUND, **overrides, "schedule": "cost-aware", "seed": 4})
    result = simulate(noisy, ACCEL, config)
    bound = config.run_config(config.steps).staleness
    assert max(result.staleness) <= bound
    assert all(f.step - f.version <= bound for f in result.fates if f.fate == TRAINED)
    books = summarize(result)["accounting"]
    assert books["balanced"] and books["errored"] > 0
    # a fate for every trajectory generated, counted as the books count them
    fates = Counter(f.fate for f in result.fates)
    assert len(result.fates) == books["generated"]
    assert (fates[TRAINED], fates[DROPPED_STALE], fates[ERRORED], fates[IN_FLIGHT]) == (
        books["trained"], books["dropped_stale"], books["errored"], books["in_flight"])
    if not config.oversample:  # deadline batching is feasible without over-sampling: nothing expires
        assert books["dropped_stale"] == 0


def test_a_fate_carries_its_tasks_gym_time_and_turns():
    """Constant 0.5 s steps: task a's are 0.5 x 1/2 = 0.25 s, task b's 0.5 x 3/2 = 0.75 s (by_task over
    its mean, 2 s); the gym-wide mean step stays 0.5 s."""
    result = simulate(card(Distribution.constant(0.5), {"a": 1.0, "b": 3.0}), ACCEL, SimConfig(**GYM_BOUND))
    decided = [f for f in result.fates if f.fate in (TRAINED, DROPPED_STALE)]
    assert decided and {f.task_id for f in decided} == {"a", "b"}
    for f in decided:
        assert f.gym_s == pytest.approx(f.turns * (0.25 if f.task_id == "a" else 0.75))
        assert f.predicted_gym_s == pytest.approx({"a": 1.0, "b": 3.0}[f.task_id] * 1.7)  # x the mean turns
        assert 1 <= f.turns <= 3 and f.reward == 0.0
    in_flight = [f for f in result.fates if f.fate == IN_FLIGHT]
    assert all(f.gym_s == pytest.approx(f.turns * (0.25 if f.task_id == "a" else 0.75)) for f in in_flight)
    # the trained step is the trainer's version at the take
    assert all(0 <= f.step - f.version <= 1 for f in decided if f.fate == TRAINED)


def test_tasks_come_in_the_samplers_seeded_order_and_cost_aware_starts_each_block_slowest_first():
    tasks = {f"t{i}": float(i + 1) for i in range(8)}
    config = SimConfig(**{**GYM_BOUND, "seed": 7})

    def by_group(result):
        return [task for _, task in sorted({(f.group, f.task_id) for f in result.fates})]

    fifo = by_group(simulate(card(Distribution.constant(0.5), tasks), ACCEL, config))
    sampler = TaskSampler(sorted(tasks), 7)
    assert fifo == [sampler.next()[1] for _ in fifo]
    aware = by_group(simulate(card(Distribution.constant(0.5), tasks), ACCEL, replace(config, schedule="cost-aware")))
    for block in range(len(aware) // 4):
        fifo_block, aware_block = fifo[4 * block : 4 * block + 4], aware[4 * block : 4 * block + 4]
        assert aware_block == sorted(fifo_block, key=lambda t: -tasks[t])


# -- a card without tasks, fifo: as before ------------------------------------------------------


# Figures of the simulator before tasks and schedules (git f09d541), for this card and these seeds
BEFORE = {
    ("sync", 0, 1): (492.72280999999964, {"generated": 480, "trained": 444, "dropped_stale": 0, "errored": 36,
                                          "abandoned": 0, "buffered": 0}, {0: 444}),
    ("async", 0, 1): (457.2904999999999, {"generated": 536, "trained": 445, "dropped_stale": 34, "errored": 41,
                                          "abandoned": 16, "buffered": 0}, {0: 90, 1: 355}),
    ("async", 2, 2): (549.3866200000002, {"generated": 656, "trained": 438, "dropped_stale": 123, "errored": 55,
                                          "abandoned": 40, "buffered": 0}, {0: 52, 1: 114, 2: 272}),
}  # fmt: skip


@pytest.mark.parametrize("mode,oversample,staleness", list(BEFORE))
def test_a_card_without_tasks_simulates_exactly_as_before(mode, oversample, staleness):
    plain = card(Distribution.uniform(0.0, 3.0), turns=turn_pmf(0.5, 3), error_rate=0.05)
    accel = Stages("test", 0.0, Distribution.uniform(0.02, 0.08), Distribution.constant(1.0), 0.0,
                   Distribution.constant(0.2))  # fmt: skip
    config = SimConfig(mode=mode, steps=30, batch_groups=4, group_size=4, gym_workers=3, seed=3,
                       oversample=oversample, max_staleness=staleness)  # fmt: skip
    result = simulate(plain, accel, config)
    assert (result.wall, asdict(result.accounting), result.staleness) == BEFORE[mode, oversample, staleness]
    assert result.fates == [] and summarize(result)["bias"] is None
    # tasks of one cost scale every step by 1: the same draws, the same run, now with fates
    flat = simulate(replace(plain, by_task={"a": 2.0, "b": 2.0, "c": 2.0}), accel, config)
    assert [asdict(s) for s in flat.steps] == [asdict(s) for s in result.steps]
    assert len(flat.fates) == flat.accounting.generated


# -- the priority queue -------------------------------------------------------------------------


def test_the_priority_queue_serves_by_priority_then_in_arrival_order():
    queue = PriorityServers[str](1)
    assert queue.arrive(0.0, (5, 0.0), 1.0, "a") == 1.0  # an idle server: starts at once
    for job, priority in (("b", (2, 0.0)), ("c", (1, 0.0)), ("d", (2, 0.0)), ("e", (1, -3.0))):
        assert queue.arrive(0.5, priority, 1.0, job) is None
    order, now = [], 1.0
    while (started := queue.finish(now)) is not None:
        now, job = started
        order.append(job)
    assert order == ["e", "c", "b", "d"]  # lowest first; b before d, equal, by arrival
    assert now == 5.0 and queue.idle == 1
    assert queue.busy == 5.0 and queue.busy_after(4.5) == 0.0


def test_the_priority_queue_with_equal_priorities_is_the_fifo_queue():
    """Driven by an event loop (starts at finish events), equal priorities end every job where
    `Servers` (no events) ends it."""
    rng = np.random.default_rng(3)
    arrivals = np.cumsum(rng.exponential(0.3, 2000)).tolist()
    services = rng.exponential(1.0, 2000).tolist()
    fifo = Servers(3)
    expected = [fifo.serve(t, s) for t, s in zip(arrivals, services)]
    queue, ends, events = PriorityServers[int](3), [0.0] * len(arrivals), []
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
    assert queue.busy == pytest.approx(fifo.busy) and queue.busy_after(arrivals[-1] + 100) == 0.0
