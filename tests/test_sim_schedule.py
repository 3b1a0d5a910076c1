"""The simulator's tasks, schedule and fates (harness/sim/pipeline.py), the priority queue
(harness/sim/queue.py), and what `harness simulate` and `harness plan` make of them."""

from __future__ import annotations

import csv
import heapq
import itertools
import json
import shutil
from collections import Counter
from dataclasses import asdict, replace

import numpy as np
import pytest
from conftest import ROOT
from in_process import harness_here

from harness.benchmark import BenchmarkSpec, run_benchmark
from harness.costcard import CostCard, from_run, load, run_card, save, task_order, turn_pmf
from harness.plan import Cluster, details, plan
from harness.rundir import load_run
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig, simulate
from harness.sim.queue import PriorityServers, Servers
from harness.sim.stages import Stages
from harness.simulate import MARKDOWN_HEADER, fidelity_line, fidelity_row, resimulate
from trainer.bias import audit
from trainer.metrics import summarize
from trainer.policies.profiles import HardwareProfile
from trainer.rollout import TaskSampler
from trainer.types import DROPPED_STALE, ERRORED, FATES, IN_FLIGHT, TRAINED

RESULTS = ROOT / "tests" / "fixtures" / "results"
VERILOG_RUN = "20261130T125643Z-verilog"

# Two task classes: six fast tasks and two five times slower, over up to 3 turns
TWO_CLASSES = {**{f"fast-{i}": 1.0 for i in range(6)}, **{f"slow-{i}": 5.0 for i in range(2)}}


def card(service: Distribution, by_task: dict[str, float] | None = None, turns=(0.5, 0.3, 0.2), error_rate=0.0,
         turns_by_task=None):  # fmt: skip
    return CostCard("toy", "test", {}, service, tuple(turns), error_rate, 0.0, workers=1, calls=0,
                    by_task=dict(by_task or {}), turns_by_task=dict(turns_by_task or {}))  # fmt: skip


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


def test_a_task_with_turns_of_its_own_takes_them_and_its_prediction_counts_them():
    """Task a's episodes end after one turn, b's after three; c has none of its own: the card's."""
    own = {"a": (1.0,), "b": (0.0, 0.0, 1.0)}
    toy = card(Distribution.constant(0.5), {"a": 1.0, "b": 1.0, "c": 1.0}, turns=(0.5, 0.5), turns_by_task=own)
    result = simulate(toy, ACCEL, SimConfig(**GYM_BOUND))
    decided = [f for f in result.fates if f.fate in (TRAINED, DROPPED_STALE)]
    turns = {task: {f.turns for f in decided if f.task_id == task} for task in "abc"}
    assert turns == {"a": {1}, "b": {3}, "c": {1, 2}}
    assert toy.task_costs() == pytest.approx({"a": 1.0, "b": 3.0, "c": 1.5})  # mean step x its own mean turns
    assert CostCard.from_json(json.loads(json.dumps(toy.to_json()))) == toy


def test_a_recorded_task_order_is_replayed_whatever_the_seed():
    tasks = {f"t{i}": float(i + 1) for i in range(8)}
    order = ("t5", "t2", "t7", "t0", "t1", "t6", "t3", "t4")

    def by_group(seed):
        config = SimConfig(**{**GYM_BOUND, "seed": seed, "task_order": order[:6]})  # t3, t4 follow, sorted
        return [task for _, task in sorted({(f.group, f.task_id) for f in simulate(card(
            Distribution.uniform(0.5, 1.5), tasks), ACCEL, config).fates})]  # fmt: skip

    for seed in (0, 1):
        drawn = by_group(seed)
        assert len(drawn) > 8 and drawn == [order[i % 8] for i in range(len(drawn))]
    sampler = TaskSampler(list(order), None)  # seed None: the tasks' own order
    assert [sampler.next()[1] for _ in range(10)] == [*order, *order[:2]]


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


# -- runs: a run's card has its tasks, a re-simulation its schedule --------------------------------


def test_resimulating_a_run_takes_its_schedule(tmp_path):
    assert resimulate(VERILOG_RUN, RESULTS, repeats=1).config.schedule == "fifo"  # recorded before schedules
    run_dir = tmp_path / "runs" / VERILOG_RUN
    shutil.copytree(RESULTS / "runs" / VERILOG_RUN, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["spec"]["schedule"] = "cost-aware"
    (run_dir / "summary.json").write_text(json.dumps(summary))
    fid = resimulate(VERILOG_RUN, tmp_path, repeats=1)
    assert fid.config.schedule == "cost-aware"
    assert fid.predicted[0]["modes"]["async"]["config"]["schedule"] == "cost-aware"


@pytest.fixture(scope="module")
def cost_aware_run(tmp_path_factory):
    """A short real benchmark under cost-aware (math: light, real checks), with fast emulated stages."""
    root = tmp_path_factory.mktemp("results")
    profile = root / "fast.json"
    HardwareProfile("fast", "fast stages", generate_s_per_token=0.02 / 512, train_s_per_token=1e-6,
                    update_weights_s=0.01, response_tokens=512).save(profile)  # fmt: skip
    spec = BenchmarkSpec(gym="math", gym_options={}, steps=4, batch_groups=2, group_size=2, profile=str(profile),
                         gym_workers=2, schedule="cost-aware")  # fmt: skip
    _, run_dir = run_benchmark(spec, root)
    return root, run_dir


def test_a_run_card_has_each_tasks_step_time_from_its_own_steps(cost_aware_run):
    _, run_dir = cost_aware_run
    card_ = run_card(run_dir)  # card.json, written at the run's end
    assert card_.by_task and all(s > 0 for s in card_.by_task.values())
    with (run_dir / "trajectories.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    task_of = {(r["mode"], int(r["group"])): r["task_id"] for r in rows}
    assert set(card_.by_task) <= {r["task_id"] for r in rows}
    # by hand: the gym_step spans outside the first mode's warm-up step, by their group's task
    run = load_run(run_dir)
    first, warm_from = run.modes[0], run.steps[run.modes[0]][0].end
    seconds: dict[str, list[float]] = {}
    for mode in run.modes:
        for span in run.spans[mode]:
            if span.kind == "gym_step" and not (mode == first and span.start < warm_from):
                seconds.setdefault(task_of[mode, span.group], []).append(span.duration)
    assert card_.by_task == pytest.approx({t: sum(s) / len(s) for t, s in seconds.items()})
    assert from_run(run).by_task == card_.by_task  # derived again, the same


def test_a_run_card_has_each_tasks_turns_and_a_resimulation_its_task_order(cost_aware_run):
    root, run_dir = cost_aware_run
    with (run_dir / "trajectories.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    turns: dict[str, Counter[int]] = {}
    for r in rows:
        if r["fate"] in (TRAINED, DROPPED_STALE):
            turns.setdefault(r["task_id"], Counter())[int(r["turns"])] += 1
    card_ = load(run_dir / "card.json")
    assert card_.turns_by_task and set(card_.turns_by_task) == set(turns)
    for task, counts in turns.items():
        pmf = card_.turns_by_task[task]
        assert len(pmf) == max(counts)
        assert pmf == pytest.approx([counts[t] / sum(counts.values()) for t in range(1, len(pmf) + 1)])
    # the order the run drew its tasks in: its groups' tasks by group number, each once
    drawn = {mode: sorted({(int(r["group"]), r["task_id"]) for r in rows if r["mode"] == mode}) for mode in ("sync", "async")}
    longest = max(drawn.values(), key=len)  # the mode that drew the most
    assert task_order(run_dir) == tuple(dict.fromkeys(task for _, task in longest))
    assert resimulate(run_dir.name, root, repeats=1).config.task_order == task_order(run_dir)


def test_a_card_json_from_before_per_task_figures_gets_them_from_the_runs_records(cost_aware_run, tmp_path):
    _, run_dir = cost_aware_run
    old = tmp_path / run_dir.name
    shutil.copytree(run_dir, old)
    save(replace(run_card(run_dir), by_task={}, turns_by_task={}), old / "card.json")
    assert run_card(old).by_task == run_card(run_dir).by_task
    assert run_card(old).turns_by_task == run_card(run_dir).turns_by_task
    (old / "trajectories.csv").unlink()  # a run recorded before trajectories.csv: none to find
    assert run_card(old).by_task == {}


def test_resimulating_a_cost_aware_run_predicts_its_bias(cost_aware_run, monkeypatch, capsys):
    root, run_dir = cost_aware_run
    fid = resimulate(run_dir.name, root, repeats=3)
    assert fid.config.schedule == "cost-aware"
    predicted, measured = fid.acceptance("async")
    assert measured == fid.measured.bias["async"]["slow_fast_acceptance"]
    assert all(p["modes"]["async"]["bias"] is not None for p in fid.predicted)  # the card has tasks: fates
    # cost-aware at max_staleness 1 without over-sampling drops nothing: 1.0 measured, and simulated
    assert measured == 1.0 and predicted == (1.0, 0.0)
    assert "async slow/fast acceptance 1.00 vs 1.00" in fidelity_line(fid)
    assert fidelity_row(fid).split("|")[-2].strip() == "1.00 / 1.00 (p50)"  # measured at the simulated median
    assert fid.acceptance_rank("async") == 50.0
    assert fidelity_row(fid).count("|") == MARKDOWN_HEADER.splitlines()[0].count("|")
    code, out, err = harness_here(monkeypatch, capsys, "simulate", "--run", run_dir.name, "--repeats", "2",
                                  "--results", str(root), "--json")  # fmt: skip
    assert code == 0, err
    assert set(json.loads(out)["modes"]["async"]["slow_fast_acceptance"]) == {"measured", "predicted", "predicted_sd"}


# -- the command line, and the planner ----------------------------------------------------------


def test_simulate_prints_each_modes_bias_where_the_card_has_tasks(tmp_path, monkeypatch, capsys):
    path = tmp_path / "two-classes.json"
    save(card(Distribution.uniform(0.5, 1.5), TWO_CLASSES), path)
    common = ("simulate", "--card", str(path), "--gym-workers", "8", "--steps", "40", "--placement",
              "disaggregated", "--profile", "h100-qwen3-4b")  # fmt: skip
    code, out, err = harness_here(monkeypatch, capsys, *common, "--schedule", "cost-aware")
    assert code == 0, err
    assert "schedule cost-aware" in out
    row = next(line for line in out.splitlines() if "slow/fast acceptance" in line)
    assert [cell.strip() for cell in row.split("│") if cell.strip()][1:] == ["1.00", "1.00"]  # nothing dropped
    assert "gym time dropped stale" in out
    code, out, _ = harness_here(monkeypatch, capsys, *common, "--json")
    figures = json.loads(out)
    assert figures["modes"]["async"]["bias"]["slow_fast_acceptance"] < 1
    assert set(figures["modes"]["async"]["bias"]["fates"]) == set(FATES)
    code, _, err = harness_here(monkeypatch, capsys, *common, "--schedule", "lifo")
    assert code == 2 and "use fifo or cost-aware" in err and len(err.strip().splitlines()) == 1


def test_the_plan_recommends_cost_aware_where_it_holds_the_target_and_drops_less():
    """A light gym: both schedules keep the trainer busy; fifo drops slow tasks' groups, cost-aware none."""
    light = card(Distribution.uniform(0.05, 0.15), TWO_CLASSES)
    accel = stages(0.02, 1.0, 0.2)
    cluster = Cluster(nodes=1, accelerators_per_node=2, cores_per_node=32, placement="disaggregated")
    p = plan(light, accel, cluster, target_idle=0.1)
    fifo, aware = p.schedules["fifo"], p.schedules["cost-aware"]
    assert p.schedule == "fifo" and fifo["dropped_of"] == aware["dropped_of"] == "gym time"
    assert aware["idle"] <= max(p.target_idle, fifo["idle"]) and aware["dropped"] < fifo["dropped"]
    assert p.recommended_schedule == "cost-aware"
    line = next(line for line in details(p) if line.startswith("schedule:"))
    assert line.startswith("schedule: cost-aware recommended") and f"{fifo['dropped']:.1%}" in line
    # the search under cost-aware compares fifo at its own point
    other = plan(light, accel, cluster, target_idle=0.1, schedule="cost-aware")
    assert other.schedule == "cost-aware" and set(other.schedules) == {"fifo", "cost-aware"}
    assert other.summary.modes["async"].config["schedule"] == "cost-aware"


def test_the_plan_keeps_fifo_where_cost_aware_idles_more():
    """A heavier gym: fifo keeps the trainer busier by dropping the slow groups cost-aware waits for."""
    heavier = card(Distribution.uniform(0.15, 0.45), TWO_CLASSES)
    p = plan(heavier, stages(0.02, 1.0, 0.2), Cluster(1, 2, 32, "disaggregated"), target_idle=0.1)
    fifo, aware = p.schedules["fifo"], p.schedules["cost-aware"]
    assert aware["idle"] > max(p.target_idle, fifo["idle"]) and p.recommended_schedule == "fifo"
    assert any(line.startswith("schedule: fifo (") for line in details(p))


# -- what a published system does that a user states (SimConfig) ------------------------------


def _one_turn_card():
    from harness.costcard import CostCard
    from harness.sim.distribution import Distribution

    return CostCard("toy", "test", {}, Distribution.constant(0.0), (1.0,), 0.0, 0.0, workers=1, calls=0)


def _slow_update_stages():
    from harness.sim.distribution import Distribution
    from harness.sim.stages import Stages

    # a response of 4 s, training 1 s then 3 s of update_weights: generation outlasts training
    return Stages("test", 0.0, Distribution.constant(4.0), Distribution.constant(1.0), 0.0, Distribution.constant(3.0))


def test_engines_that_pause_for_the_weight_load_generate_that_much_slower():
    """Async, rollout-bound: a step's generation is 4 s; training (1 s, then 3 s of update) runs
    beside it. The engines paused for the 3 s load add those seconds to the call in progress."""
    from harness.sim.pipeline import SimConfig, simulate

    base = SimConfig(mode="async", steps=12, batch_groups=1, group_size=1, gym_workers=1,
                     placement="disaggregated", rollout_threads=1)  # fmt: skip
    steps = {}
    for pause in (False, True):
        result = simulate(_one_turn_card(), _slow_update_stages(), replace(base, pause_engines_on_update=pause))
        steps[pause] = [s.step_time for s in result.steps[2:]]
    assert steps[False] == pytest.approx([4.0] * len(steps[False]))  # generation back to back, no pause
    # one call a step, started at the previous call's end: 1 s of training, then the 3 s load holds it
    assert steps[True] == pytest.approx([7.0] * len(steps[True]))
    with pytest.raises(ValueError, match="disaggregated"):
        replace(base, placement="colocated", pause_engines_on_update=True)


def test_a_rollout_worker_starts_at_most_one_group_per_interval():
    from harness.sim.pipeline import SimConfig, _Simulation

    config = SimConfig(mode="sync", steps=2, batch_groups=4, group_size=1, gym_workers=4,
                       placement="disaggregated", group_start_interval_s=1.0)  # fmt: skip
    sim = _Simulation(_one_turn_card(), _slow_update_stages(), config)
    starts = []
    ask = sim._ask
    sim._ask = lambda now, episode: (starts.append(now), ask(now, episode))
    sim.run()
    assert starts[:4] == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="group-start-interval-s"):
        replace(config, group_start_interval_s=-1.0)
