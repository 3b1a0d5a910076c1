"""The scheduler (trainer/rules/schedule.py): deadline batching, the deadline-first gym queue and
slow-first starts, by hand and in real runs on a real gym pool, against fifo."""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import pytest
from toy_gyms import GATE_S, GateGym, ToyGym

from gyms import Outcome, Task
from gyms.pool import GymPool, Job, _Jobs
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import ZERO
from trainer.policies.replay import ReplayPolicy
from trainer.rollout import CostPredictor, TaskSampler, slow_first_sampler
from trainer.rules.buffer import BufferRules
from trainer.rules.schedule import choose_batch, keeps_deadlines, slow_first, step_priority
from trainer.types import DROPPED_STALE, IN_FLIGHT, TRAINED

# -- deadline batching, by hand ---------------------------------------------------------------


def test_a_group_about_to_expire_is_waited_for_and_trained_before_fresher_ones():
    # Trainer at version 3, max_staleness 1, 2 groups a step: two fresh groups (version 3) are
    # ready while a version-2 group is still in rollout. It expires after this step: training
    # the two fresh ones now would drop it.
    untrained = {3: 2, 2: 1}
    assert choose_batch([3, 3], untrained, 3, 1, 2) is None
    assert not keeps_deadlines([3, 3], untrained, 3, 1, 2)
    # once it completes, it goes first
    assert choose_batch([3, 3, 2], untrained, 3, 1, 2) == [2, 0]
    # fifo trains the first two to complete, whatever their version
    fifo = BufferRules(2, 4, 1)
    assert fifo.choose([3, 3], untrained, 3) == [0, 1]
    assert BufferRules(2, 4, 1, schedule="cost-aware").choose([3, 3], untrained, 3) is None


def test_groups_due_later_count_against_the_steps_before_their_deadline():
    # max_staleness 2, 2 groups a step, trainer at version 4: one version-2 group (due now) and
    # three version-3 groups (due by step 5) are untrained. A batch of the version-2 group and a
    # fresh one would leave three version-3 groups for step 5's two places.
    untrained = {2: 1, 3: 3, 4: 1}
    assert keeps_deadlines([2, 4], untrained, 4, 2, 2) is False
    assert keeps_deadlines([2, 3], untrained, 4, 2, 2) is True
    assert choose_batch([4, 2], untrained, 4, 2, 2) is None  # wait for a version-3 group
    assert choose_batch([4, 2, 3], untrained, 4, 2, 2) == [1, 2]


def test_sync_batches_are_the_same_under_both_schedules():
    # max_staleness 0: every group is due now, so any batch_groups groups of the version will do
    assert choose_batch([5, 5], {5: 2}, 5, 0, 2) == [0, 1]
    assert choose_batch([5], {5: 2}, 5, 0, 2) is None
    # over-sampling's surplus cannot all be trained: a batch of due groups is the best there is
    assert choose_batch([5, 5], {5: 3}, 5, 0, 2) == [0, 1]


def test_the_rule_refuses_an_unknown_schedule():
    with pytest.raises(ValueError, match="fifo or cost-aware"):
        BufferRules(2, 4, 1, schedule="lifo")
    with pytest.raises(ValueError, match="fifo or cost-aware"):
        RunConfig(schedule="fastest")


# -- slow-first starts -----------------------------------------------------------------------


def test_a_block_starts_predicted_slowest_first_and_keeps_the_rest_in_order():
    costs = {"a": 1.0, "b": 5.0, "c": None, "d": 3.0, "e": None}
    assert slow_first(list("abcde"), costs.get) == list("bdace")


def test_the_cost_aware_sampler_draws_the_same_tasks_block_by_block():
    tasks = [Task(f"t{i}", "") for i in range(6)]
    costs = CostPredictor({f"t{i}": float(i % 3) for i in range(6)})
    fifo, aware = TaskSampler(tasks, seed=3), slow_first_sampler(tasks, 3, 3, costs)
    fifo_ids = [fifo.next()[1].id for _ in range(12)]
    aware_ids = [aware.next()[1].id for _ in range(12)]
    for block in range(4):
        part = slice(3 * block, 3 * block + 3)
        assert sorted(aware_ids[part]) == sorted(fifo_ids[part])  # the same tasks, block by block
        assert [costs.predict(t) for t in aware_ids[part]] == sorted((costs.predict(t) for t in aware_ids[part]),
                                                                     reverse=True)  # fmt: skip
    assert aware_ids != fifo_ids
    assert len(aware.first(4)) == 6  # whole blocks: every task a block may start is prepared


# -- the deadline-first gym queue --------------------------------------------------------------


def test_the_queue_serves_by_priority_then_in_order_and_closes_first():
    jobs = _Jobs()

    def job(name: str, priority):  # noqa: ANN001
        return Job(name, "x", Future(), 0.0, priority=priority)  # type: ignore[arg-type]

    for name, priority in [("late", step_priority(2, 1.0)), ("old-fast", step_priority(1, 1.0)),
                           ("old-slow", step_priority(1, 9.0)), ("old-slow-2", step_priority(1, 9.0))]:  # fmt: skip
        jobs.put(job(name, priority))
    jobs.put(job("close", None), first=True)
    assert [jobs.take(None).episode for _ in range(5)] == ["close", "old-slow", "old-slow-2", "old-fast", "late"]


def test_a_pool_runs_queued_steps_by_priority(tmp_path):
    gym = GateGym(tmp_path / "open", Outcome.PASS, max_turns=1)
    task = gym.tasks()[0]
    with GymPool(workers=1, step_timeout_s=GATE_S) as pool:
        blocker = pool.submit(gym.open(task), "gate")  # holds the one worker until the gate opens
        while not pool._jobs._taken:  # noqa: SLF001  (the worker has taken it: the rest queue behind)
            time.sleep(0.01)
        queued = {name: pool.submit(gym.open(task), "pass", priority)
                  for name, priority in [("newer", (2, 0.0)), ("older", (1, 0.0)), ("older-slower", (1, -9.0))]}  # fmt: skip
        (tmp_path / "open").touch()
        blocker.result(GATE_S)
        started = {name: f.result(GATE_S).started_at for name, f in queued.items()}
    assert sorted(started, key=started.get) == ["older-slower", "older", "newer"]


# -- in a run ----------------------------------------------------------------------------------


class GatedFirstGroup(ReplayPolicy):
    """Group 0's one sample waits at the gym's gate; every other answer passes at once. With
    `opens_at_group`, asking for that group's answer opens the gate."""

    def __init__(self, gym: GateGym, opens_at_group: int | None = None) -> None:
        super().__init__(gym, ZERO, skill=1.0, timeout_rate=0.0, seed=0)
        self.gate, self.opens_at_group = Path(gym.gate), opens_at_group

    def generate(self, requests, version):  # noqa: ANN001, ANN201
        if self.opens_at_group is not None and any(r.group == self.opens_at_group for r in requests):
            self.gate.touch()
        return [replace(g, text="gate" if r.group == 0 else "pass")
                for r, g in zip(requests, super().generate(requests, version))]  # fmt: skip


@pytest.fixture(scope="module")
def pool():
    with GymPool(workers=2, step_timeout_s=GATE_S) as p:
        yield p


def test_fifo_drops_the_slow_group_that_cost_aware_trains(pool, tmp_path):
    # Async, max_staleness 1, one group of one sample a step: groups 0 and 1 start at version 0.
    # Group 0 waits at the gate.
    config = RunConfig(mode="async", steps=3, batch_groups=1, group_size=1, max_staleness=1)

    # fifo: step 0 trains group 1, step 1 group 2 (version 1); the gate opens only after step 1,
    # and group 0 (version 0) is too stale for step 2.
    fifo_gym = GateGym(tmp_path / "fifo", Outcome.PASS, max_turns=1)

    def open_after_step_1(record) -> None:  # noqa: ANN001
        if record.step == 1:
            Path(fifo_gym.gate).touch()

    fifo = run(fifo_gym, GatedFirstGroup(fifo_gym), pool, config, on_step=open_after_step_1)
    first = {f.group: f for f in fifo.fates}
    assert first[0].fate in (DROPPED_STALE, IN_FLIGHT) and (first[2].fate, first[2].step) == (TRAINED, 1)

    # cost-aware: step 1 waits for group 0, its last chance, whatever completes first; the
    # gate opens when group 2 (admitted after step 0) asks for its answer.
    aware_gym = GateGym(tmp_path / "aware", Outcome.PASS, max_turns=1)
    aware = run(aware_gym, GatedFirstGroup(aware_gym, opens_at_group=2), pool,
                replace(config, schedule="cost-aware"))  # fmt: skip
    fates = {f.group: f for f in aware.fates}
    assert (fates[0].fate, fates[0].step, fates[0].version) == (TRAINED, 1, 0)  # staleness 1: within the bound
    assert (fates[2].fate, fates[2].step) == (TRAINED, 2)
    assert aware.accounting.dropped_stale == 0 and aware.accounting.balanced(), aware.accounting
    assert max(aware.staleness) <= 1


def test_a_cost_aware_run_never_trains_past_its_bound_and_drops_nothing(pool):
    gym = ToyGym(max_turns=2, tasks=5)
    config = RunConfig(mode="async", steps=8, batch_groups=2, group_size=2, max_staleness=1, schedule="cost-aware")
    result = run(gym, ReplayPolicy(gym, ZERO, skill=0.5, timeout_rate=0.0, seed=2), pool, config)
    assert max(result.staleness) <= 1
    assert result.accounting.dropped_stale == 0 and result.accounting.balanced(), result.accounting
    assert sum(f.fate == TRAINED for f in result.fates) == 8 * 2 * 2

