"""The simulator against closed forms, hand-computed pipelines and the committed runs."""

from __future__ import annotations

import json
import math
import random
import shutil
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from conftest import ROOT, harness
from in_process import harness_here
from toy_gyms import ToyGym

from gyms import Candidate, Task
from harness import costcard
from harness.costcard import CostCard, fit_turns, turn_pmf
from harness.gymprofile import replay_mix
from harness.rundir import load_run
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig, simulate
from harness.sim.queue import Servers
from harness.sim.stages import Stages, from_run
from trainer.buffer import ReadyBuffer, admits
from trainer.metrics import summarize
from trainer.policies.profiles import ZERO
from trainer.policies.replay import ReplayPolicy
from trainer.types import Request

RESULTS = ROOT / "tests" / "fixtures" / "results"  # real run records, kept as fixtures (README there)
VERILOG_RUN = "20261130T125643Z-verilog"
LEAN_RUN = "20261130T142819Z-lean"


def card(service: Distribution, turns=(1.0,), error_rate=0.0) -> CostCard:
    return CostCard("toy", "test", {}, service, tuple(turns), error_rate, 0.0, workers=1, calls=0)


def stages(response_s: float, train_s: float, update_s: float) -> Stages:
    return Stages("test", 0.0, Distribution.constant(response_s), Distribution.constant(train_s), 0.0,
                  Distribution.constant(update_s))  # fmt: skip


# -- the queue: M/M/c against Erlang C -------------------------------------------------------


def erlang_c_wait(arrival: float, service_rate: float, servers: int) -> float:
    """Mean time in queue of an M/M/c queue (Erlang C)."""
    a = arrival / service_rate
    rho = a / servers
    tail = a**servers / math.factorial(servers) / (1 - rho)
    waiting = tail / (sum(a**k / math.factorial(k) for k in range(servers)) + tail)
    return waiting / (servers * service_rate - arrival)


@pytest.mark.parametrize("arrival,servers", [(3.0, 4), (7.0, 8), (0.8, 1)])
def test_fifo_servers_reproduce_m_m_c(arrival, servers):
    rng = np.random.default_rng(7)
    n = 200_000
    arrivals = np.cumsum(rng.exponential(1 / arrival, n)).tolist()
    services = rng.exponential(1.0, n).tolist()  # service rate 1
    queue = Servers(servers)
    waits = [queue.serve(t, s) - s - t for t, s in zip(arrivals, services)]
    end = arrivals[-1]
    utilisation = (queue.busy - queue.busy_after(end)) / (servers * end)
    assert utilisation == pytest.approx(arrival / servers, rel=0.02)
    assert np.mean(waits) == pytest.approx(erlang_c_wait(arrival, 1.0, servers), rel=0.06)


# -- deterministic pipelines, computed by hand ------------------------------------------------

# 2 groups of 4 single-turn episodes; one engine makes a response in 0.1 s, so a group's
# generation call takes 0.4 s; a gym step takes 0.5 s on a free worker; training 2 s + 0.5 s.
HAND = dict(batch_groups=2, group_size=4, gym_workers=8, steps=8)
CONSTANT = card(Distribution.constant(0.5))


def test_sync_step_is_generation_then_gym_then_training():
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="sync", **HAND))
    rollout = 2 * 4 * 0.1 + 0.5  # both groups' generation calls back to back, then the last group's gym steps
    assert [s.step_time for s in result.steps] == pytest.approx([rollout + 2.5] * 8)
    assert [s.train_wait for s in result.steps] == pytest.approx([rollout] * 8)
    figures = summarize(result)
    assert figures["trainer_idle_ratio"] == pytest.approx(rollout / (rollout + 2.5))
    assert figures["gym_utilisation"] == pytest.approx(8 * 0.5 / (8 * (rollout + 2.5)))
    assert figures["staleness_mean"] == 0


def test_async_training_bound_step_is_the_training_time():
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="async", max_staleness=1, **HAND))
    assert result.steps[0].step_time == pytest.approx(2 * 4 * 0.1 + 0.5 + 2.5)  # warm-up: nothing to overlap
    assert [s.step_time for s in result.steps[1:]] == pytest.approx([2.5] * 7)
    figures = summarize(result)
    assert figures["trainer_idle_ratio"] == pytest.approx(0.0, abs=1e-12)
    assert figures["staleness_mean"] == pytest.approx(1.0)
    assert figures["accounting"]["balanced"]


def test_async_rollout_bound_step_is_the_engine_time():
    # generation of a batch takes 2 x 4 x 0.5 = 4 s, training 1 s: the engine sets the pace
    result = simulate(CONSTANT, stages(0.5, 0.5, 0.5), SimConfig(mode="async", max_staleness=3, **HAND))
    assert [s.step_time for s in result.steps[2:]] == pytest.approx([4.0] * 6)
    figures = summarize(result)
    assert figures["rollout_train_rate_ratio"] > 1 and figures["oscillation"].startswith("rollout-bound")


def test_gym_queue_waits_are_simulated():
    # one gym worker: a group's 4 steps run one after another
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="sync", **{**HAND, "gym_workers": 1}))
    # group 1's steps start at 0.4 s and end at 2.4 s; group 2's queue behind them until 4.4 s
    assert result.steps[1].train_wait == pytest.approx(4.4)


def test_multi_turn_errors_and_drops_keep_the_books_balanced():
    noisy = card(Distribution.uniform(0.0, 3.0), turns=turn_pmf(0.5, 3), error_rate=0.05)
    for mode in ("sync", "async"):
        result = simulate(noisy, stages(0.05, 1.0, 0.2), SimConfig(mode=mode, steps=60, batch_groups=4,
                                                                   group_size=4, gym_workers=3, seed=3))  # fmt: skip
        figures = summarize(result)
        assert figures["accounting"]["balanced"], figures["accounting"]
        assert figures["accounting"]["errored"] > 0
        assert set(result.staleness) <= ({0} if mode == "sync" else {0, 1})


def test_every_group_errored_stops_like_the_real_pipeline():
    broken = card(Distribution.constant(0.1), error_rate=1.0)
    with pytest.raises(ValueError, match="every group ends in infrastructure errors"):
        simulate(broken, stages(0.1, 1.0, 0.1), SimConfig(mode="async", **HAND))


def test_a_simulated_hour_stops_at_the_duration():
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="async", steps=2**62, duration_s=3600,
                                                                  batch_groups=2, group_size=4, gym_workers=8))  # fmt: skip
    assert 3600 <= result.wall < 3600 + 2.5 and len(result.steps) == pytest.approx(3600 / 2.5, abs=2)


@pytest.mark.parametrize("bad", [dict(gym_workers=0), dict(engines=-1), dict(steps=1), dict(batch_groups=0),
                                 dict(max_staleness=-1), dict(duration_s=-5.0), dict(mode="sideways")])  # fmt: skip
def test_bad_configurations_are_value_errors(bad):
    with pytest.raises(ValueError):
        SimConfig(**bad)


# -- the admission rule is one function -------------------------------------------------------


def test_admission_rule_is_the_synchronous_barrier_at_staleness_0():
    assert admits(started=3, wasted=0, trainer_version=0, max_staleness=0, batch_groups=4)
    assert not admits(started=4, wasted=0, trainer_version=0, max_staleness=0, batch_groups=4)
    assert admits(started=4, wasted=1, trainer_version=0, max_staleness=0, batch_groups=4)  # a wasted group is replaced
    assert admits(started=4, wasted=0, trainer_version=1, max_staleness=0, batch_groups=4)


def test_ready_buffer_admits_what_the_rule_admits():
    buffer = ReadyBuffer(batch_groups=2, group_size=1, max_staleness=1)
    started = 0
    while admits(started, 0, 0, 1, 2):
        buffer.admit()  # would block forever if the buffer's rule were stricter
        started += 1
    assert started == 4 and buffer.accounting.generated == 4


# -- distributions and cards ------------------------------------------------------------------


def test_distribution_quantiles_match_numpy_and_resample_the_mean():
    samples = np.random.default_rng(1).lognormal(0, 1, 5000)
    d = Distribution.of(samples.tolist())
    assert d.p95 == pytest.approx(np.percentile(samples, 95)) and d.max == samples.max()
    assert d.sample(np.random.default_rng(2), 200_000).mean() == pytest.approx(samples.mean(), rel=0.03)
    weighted = Distribution.of([1.0, 2.0, 10.0], weights=[0.0, 3.0, 1.0])
    assert weighted.mean == pytest.approx(4.0) and weighted.values[0] == 2.0 and weighted.values[-1] == 10.0
    assert Distribution.from_json(json.loads(json.dumps(d.to_json()))) == d


def test_turn_pmf_and_its_fit():
    assert turn_pmf(0.5, 3) == (0.5, 0.25, 0.25)
    fitted = fit_turns(1.6, 3)
    assert sum(fitted) == pytest.approx(1) and sum((i + 1) * p for i, p in enumerate(fitted)) == pytest.approx(1.6)


class HangingToyGym(ToyGym):
    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [*super().candidates(task, rng), Candidate("sleep:9", "timeout", "hang")]


def test_replay_mix_is_what_the_replay_policy_picks():
    gym = HangingToyGym()
    task = gym.tasks()[0]
    kinds = {c.action: c.expect for c in gym.candidates(task, random.Random(0))}
    policy = ReplayPolicy(gym, ZERO, seed=5)
    picks = Counter(kinds[g.text] for g in policy.generate([Request(task, "p", 1)] * 20_000, 0))
    for kind, share in replay_mix(gym.candidates(task, random.Random(0))).items():
        assert picks[kind] / 20_000 == pytest.approx(share, abs=0.01)


def test_a_card_from_a_committed_run(tmp_path):
    run_dir = tmp_path / VERILOG_RUN
    shutil.copytree(RESULTS / "runs" / VERILOG_RUN, run_dir)
    costcard.write_run_card(run_dir, ToyGym(max_turns=3))
    card_ = costcard.load(run_dir / "card.json")
    run = load_run(run_dir)
    warmup_end = run.steps["sync"][0].end  # the first mode's warm-up step
    spans = [(mode, s) for mode, spans in run.spans.items() for s in spans if s.kind == "gym_step"]
    warm = [s.duration for mode, s in spans if mode != "sync" or s.start >= warmup_end]
    assert card_.calls == len(spans) and card_.service_s.count == len(warm) and card_.service_s.max == max(warm)
    assert card_.source == f"run {VERILOG_RUN}" and len(card_.turns) == 3 and 1 < card_.mean_turns < 3
    assert costcard.run_card(run_dir) == card_


def test_a_checker_start_up_stays_out_of_the_service_times():
    lean = costcard.run_card(RESULTS / "runs" / LEAN_RUN)  # Lean's checkers take ~30 s to start
    assert lean.warmup_max_s > 10 and lean.service_s.max < 5


def test_stages_from_a_run_are_its_span_durations():
    run = load_run(RESULTS / "runs" / VERILOG_RUN)
    measured = from_run(run)
    trains = [s.duration for spans in run.spans.values() for s in spans if s.kind == "actor_train"]
    assert measured.train_fixed_s.mean == pytest.approx(sum(trains) / len(trains))


# -- the command line -------------------------------------------------------------------------


def test_replay_prints_predicted_beside_measured():
    out = harness("simulate", "--replay", VERILOG_RUN, "--repeats", "3", "--results", str(RESULTS),
                  env={"COLUMNS": "200"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "sync predicted" in out.stdout and "async measured" in out.stdout
    assert "45.2%" in out.stdout  # the run's measured sync idle ratio
    assert "speedup" in out.stdout and "vs 1.50x" in out.stdout


def test_replay_json_has_both_columns(monkeypatch, capsys):
    code, out, _ = harness_here(monkeypatch, capsys, "simulate", "--replay", VERILOG_RUN, "--repeats", "2",
                       "--results", str(RESULTS), "--json")  # fmt: skip
    figures = json.loads(out)
    assert code == 0
    assert figures["modes"]["async"]["trainer_idle_ratio"]["measured"] == pytest.approx(0.16219683947591892)
    assert 0 <= figures["modes"]["async"]["trainer_idle_ratio"]["predicted"] < 1


def test_replay_markdown_row_names_the_seed_and_steps(monkeypatch, capsys):
    """Replay-policy runs with one seed are one draw (a 10-step run is a 30-step run's first
    steps), so the fidelity table must say which seed each row measured."""
    code, out, _ = harness_here(monkeypatch, capsys, "simulate", "--replay", VERILOG_RUN, "--repeats", "2",
                                "--results", str(RESULTS), "--markdown")  # fmt: skip
    assert code == 0
    header, rule, row = out.strip().splitlines()
    assert row.startswith(f"| {VERILOG_RUN} (seed 0, 10 steps) | ")
    assert row.count("|") == header.count("|") == rule.count("|")


@pytest.mark.parametrize("args,message", [
    (["--replay", "no-such-run"], "no run 'no-such-run'"),
    (["--gym", "maht"], "Did you mean 'math'"),
    (["--gym", "verilog", "--gym-workers", "-3"], "--gym-workers must be at least 1"),
    (["--gym", "verilog", "--gym-workers", "0"], "--gym-workers must be at least 1"),
    (["--gym", "verilog", "--steps", "0"], "steps must be at least 1"),
    (["--gym", "verilog", "--engines", "0"], "--engines must be at least 1"),
    (["--gym", "verilog", "--batch", "0"], "batch_groups must be at least 1"),
    (["--replay", VERILOG_RUN, "--repeats", "0"], "--repeats must be at least 1"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path, monkeypatch, capsys):
    results = RESULTS if "--replay" in args or "verilog" in args else tmp_path
    code, _, err = harness_here(monkeypatch, capsys, "simulate", *args, "--results", str(results))
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_colocated_placement_takes_generation_and_training_in_turn():
    """One accelerator pool: with a near-instant gym there is nothing for async to hide, so its
    step is generation + training, as sync's; disaggregated async overlaps the two."""
    config = SimConfig(batch_groups=2, group_size=4, gym_workers=8, steps=60)  # long: async prefetches 1 step
    fast_gym, accel = card(Distribution.constant(0.001)), stages(0.1, 2.0, 0.5)  # 0.8 s + 2.5 s a step
    colocated = {m: summarize(simulate(fast_gym, accel, replace(config, mode=m, placement="colocated")))
                 for m in ("sync", "async")}  # fmt: skip
    disaggregated = summarize(simulate(fast_gym, accel, replace(config, mode="async")))
    assert colocated["async"]["step_time_mean"] == pytest.approx(3.3, abs=0.02)
    assert colocated["sync"]["step_time_mean"] == pytest.approx(3.301, abs=0.001)
    assert colocated["async"]["ideal_step_time"] == pytest.approx(3.3, abs=0.02)
    assert disaggregated["step_time_mean"] == pytest.approx(2.5, abs=0.02)
    with pytest.raises(ValueError, match="--engines 1 --trainers 1"):
        SimConfig(engines=2, placement="colocated")
    with pytest.raises(ValueError, match="colocated or disaggregated"):
        SimConfig(placement="shared")
