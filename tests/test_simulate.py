"""The simulator against closed forms, hand-computed pipelines and the committed runs."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import statistics
from dataclasses import replace

import numpy as np
import pytest
from conftest import ROOT, harness
from in_process import harness_here
from toy_gyms import ToyGym

from harness import costcard
from harness.benchmark import BenchmarkSpec, run_benchmark
from harness.costcard import CostCard, fit_turns, turn_pmf
from harness.rundir import load_run
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig, _Simulation, simulate
from harness.sim.queue import Servers
from harness.sim.stages import Stages, from_run
from harness.simulate import resimulate
from trainer.metrics import summarize
from trainer.policies.profiles import HardwareProfile

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

# 2 groups of 4 single-turn episodes; one engine makes a response in 0.1 s, and a call lasts
# the sum over the requests it took; a gym step takes 0.5 s on a free worker; training 2 s + 0.5 s.
# When a step's groups start, their requests reach the engine at once: the first finds it idle
# and is a call of its own (0.1 s); the others wait for it and share the next call.
HAND = dict(batch_groups=2, group_size=4, gym_workers=8, steps=8, placement="disaggregated")  # stages overlap
CONSTANT = card(Distribution.constant(0.5))


def test_sync_step_is_generation_then_gym_then_training():
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="sync", **HAND))
    rollout = 0.1 + 7 * 0.1 + 0.5  # a call of one request, one of the other seven, then their gym steps
    assert [s.step_time for s in result.steps] == pytest.approx([rollout + 2.5] * 8)
    assert [s.train_wait for s in result.steps] == pytest.approx([rollout] * 8)
    figures = summarize(result)
    assert figures["trainer_idle_ratio"] == pytest.approx(rollout / (rollout + 2.5))
    assert figures["gym_utilisation"] == pytest.approx(8 * 0.5 / (8 * (rollout + 2.5)))
    assert figures["staleness_mean"] == 0


def test_async_training_bound_step_is_the_training_time():
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="async", max_staleness=1, **HAND))
    # warm-up: 4 groups start; a call of one request, then one of 15 (to 1.6 s), whose gym steps
    # take the 8 workers in turn: the first 8 (groups 1 and 2 complete) end at 2.1 s
    assert result.steps[0].step_time == pytest.approx(0.1 + 15 * 0.1 + 0.5 + 2.5)
    assert [s.step_time for s in result.steps[1:]] == pytest.approx([2.5] * 7)
    figures = summarize(result)
    assert figures["trainer_idle_ratio"] == pytest.approx(0.0, abs=1e-12)
    assert figures["staleness_mean"] == pytest.approx(1.0)
    assert figures["accounting"]["balanced"]


def test_async_rollout_bound_step_is_the_engine_time():
    # generation of a batch takes 2 x 4 x 0.5 = 4 s of engine time, training 1 s: the engine sets
    # the pace, in bursts: the requests that arrive during a long call share the next one, so
    # several steps' groups complete together (here step times cycle 2, 12, 1, 1 s)
    result = simulate(CONSTANT, stages(0.5, 0.5, 0.5), SimConfig(mode="async", max_staleness=3,
                                                                  **{**HAND, "steps": 40}))  # fmt: skip
    assert statistics.fmean(s.step_time for s in result.steps[8:]) == pytest.approx(4.0)  # whole cycles
    figures = summarize(result)
    assert figures["rollout_idle_ratio"] == pytest.approx(0.0, abs=1e-9)
    assert figures["rollout_train_rate_ratio"] > 1 and figures["oscillation"].startswith("rollout-bound")


def test_gym_queue_waits_are_simulated():
    # one gym worker: the steps run one after another
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="sync", **{**HAND, "gym_workers": 1}))
    # the first answer's step runs from 0.1 s to 0.6 s; the other seven, answered at 0.8 s, queue
    # behind each other until 0.8 + 7 x 0.5 = 4.3 s
    assert result.steps[1].train_wait == pytest.approx(4.3)


def simulate_draws(card_: CostCard, stages_: Stages, config: SimConfig, turns: list[int], service: list[float]):
    """A simulation with chosen draws: turns per episode (in the order its groups start) and
    gym service times (in the order the engine answers), each cycled."""
    sim = _Simulation(card_, stages_, config)
    sim.turns, sim.service = itertools.cycle(turns), itertools.cycle(service)
    return sim.run()


def test_a_group_waits_for_its_slowest_episode_not_for_rounds():
    """No round barrier, as trainer/rollout.py. Episode A takes 2 turns with 0.2 s gym steps, B
    one turn with a 1.0 s step; a response takes 0.1 s. A's request is a call of its own
    (answered at 0.1 s), B's the next call (0.2 s). A's step ends at 0.3 s and it asks at once:
    answered at 0.4 s, stepped by 0.6 s, while B's step runs from 0.2 s to 1.2 s. The group
    ends with B at 1.2 s; with a barrier per round it would end at 0.2 (one call of both) +
    1.0 (the slower step) + 0.1 + 0.2 = 1.5 s."""
    config = SimConfig(mode="sync", steps=4, batch_groups=1, group_size=2, gym_workers=2)
    two_turns = card(Distribution.constant(0.2), turns=(0.5, 0.5))
    result = simulate_draws(two_turns, stages(0.1, 1.0, 0.0), config, turns=[2, 1], service=[0.2, 1.0, 0.2])
    assert [s.train_wait for s in result.steps] == pytest.approx([1.2] * 4)
    assert [s.step_time for s in result.steps] == pytest.approx([1.2 + 1.0] * 4)


def test_over_sampling_trains_on_the_first_groups_to_complete():
    """Sync, 2 groups of one single-turn episode a step; a response takes 0.1 s, training 2 s.
    Each step one group's gym step is slow (2.0 s), the others' 0.5 s. Without over-sampling
    the slow group sets every step: answered first (a call of its own, 0.1 s), done at 2.1 s,
    trained on by 4.1 s. With one group more in flight, the two fast ones are answered by one
    call at 0.3 s and done at 0.8 s: the step trains on them and ends at 2.8 s. The slow one
    completes during training; at the next take it is a version behind, so sync drops it as
    stale (wasted: admission starts a replacement), and the books balance."""
    config = SimConfig(mode="sync", steps=6, batch_groups=2, group_size=1, gym_workers=3)
    plain = simulate_draws(CONSTANT, stages(0.1, 2.0, 0.0), config, turns=[1], service=[2.0, 0.5])
    assert [s.step_time for s in plain.steps] == pytest.approx([4.1] * 6)
    over = simulate_draws(CONSTANT, stages(0.1, 2.0, 0.0), replace(config, oversample=1), turns=[1],
                          service=[2.0, 0.5, 0.5])  # fmt: skip
    assert [s.step_time for s in over.steps] == pytest.approx([2.8] * 6)
    books = summarize(over)["accounting"]
    assert books["balanced"]
    # 3 groups a step; 2 trained, the slow one dropped at the next step's take, the last one still ready
    assert (books["generated"], books["trained"], books["dropped_stale"], books["buffered"]) == (18, 12, 5, 1)
    assert over.config.threads == 3 and over.staleness == {0: 12}


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
    result = simulate(CONSTANT, stages(0.1, 2.0, 0.5), SimConfig(mode="async", duration_s=3600,
                                                                  **{**HAND, "steps": 2**62}))  # fmt: skip
    assert 3600 <= result.wall < 3600 + 2.5 and len(result.steps) == pytest.approx(3600 / 2.5, abs=2)


@pytest.mark.parametrize("bad", [dict(gym_workers=0), dict(engines=-1), dict(steps=1), dict(batch_groups=0),
                                 dict(max_staleness=-1), dict(oversample=-1), dict(rollout_threads=0),
                                 dict(duration_s=-5.0), dict(mode="sideways")])  # fmt: skip
def test_bad_configurations_are_value_errors(bad):
    with pytest.raises(ValueError):
        SimConfig(**bad)


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


def test_resimulate_prints_predicted_beside_measured():
    out = harness("simulate", "--run", VERILOG_RUN, "--repeats", "3", "--results", str(RESULTS),
                  env={"COLUMNS": "200"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "sync predicted" in out.stdout and "async measured" in out.stdout
    assert "45.2%" in out.stdout  # the run's measured sync idle ratio
    assert "speedup" in out.stdout and "vs 1.50x" in out.stdout


def test_resimulate_json_has_both_columns(monkeypatch, capsys):
    code, out, _ = harness_here(monkeypatch, capsys, "simulate", "--run", VERILOG_RUN, "--repeats", "2",
                       "--results", str(RESULTS), "--json")  # fmt: skip
    figures = json.loads(out)
    assert code == 0
    assert figures["modes"]["async"]["trainer_idle_ratio"]["measured"] == pytest.approx(0.16219683947591892)
    assert 0 <= figures["modes"]["async"]["trainer_idle_ratio"]["predicted"] < 1


def test_resimulate_markdown_row_names_the_seed_and_steps(monkeypatch, capsys):
    """Replay-policy runs with one seed are one draw (a 10-step run is a 30-step run's first
    steps), so the fidelity table must say which seed each row measured."""
    code, out, _ = harness_here(monkeypatch, capsys, "simulate", "--run", VERILOG_RUN, "--repeats", "2",
                                "--results", str(RESULTS), "--markdown")  # fmt: skip
    assert code == 0
    header, rule, row = out.strip().splitlines()
    assert row.startswith(f"| {VERILOG_RUN} (seed 0, 10 steps) | ")
    assert row.count("|") == header.count("|") == rule.count("|")


def with_oversample(tmp_path, by_mode: dict[str, int]):
    """The committed verilog run, as if its modes had over-sampled: summary.json records a mode's
    RunConfig, `oversample` included, under modes.MODE.config."""
    run_dir = tmp_path / "runs" / VERILOG_RUN
    shutil.copytree(RESULTS / "runs" / VERILOG_RUN, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    for mode, k in by_mode.items():
        summary["modes"][mode]["config"]["oversample"] = k
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return tmp_path


def test_resimulate_takes_the_runs_oversample(tmp_path):
    assert resimulate(VERILOG_RUN, RESULTS, repeats=1).config.oversample == 0  # recorded before over-sampling
    fid = resimulate(VERILOG_RUN, with_oversample(tmp_path, {"sync": 2, "async": 2}), repeats=1)
    assert fid.config.oversample == 2
    assert fid.predicted[0]["modes"]["sync"]["config"]["oversample"] == 2
    with pytest.raises(ValueError, match="over-sampled differently"):
        resimulate(VERILOG_RUN, with_oversample(tmp_path / "mixed", {"sync": 0, "async": 1}), repeats=1)


CALL_S, RESPONSE_S = 0.05, 0.05  # an engine call's fixed cost; a mean response's tokens


@pytest.fixture(scope="module")
def streaming_run(tmp_path_factory):
    """A short real benchmark by the current rollout (episodes stream; the replay policy's engine
    batches, one generate span per engine call and one generate_request span per request)."""
    root = tmp_path_factory.mktemp("results")
    profile = root / "slow-calls.json"
    HardwareProfile("slow-calls", "a call cost as large as a response", generate_s_per_token=RESPONSE_S / 512,
                    train_s_per_token=1e-6, update_weights_s=0.01, generate_call_s=CALL_S,
                    response_tokens=512).save(profile)  # fmt: skip
    spec = BenchmarkSpec(gym="math", gym_options={}, steps=3, batch_groups=2, group_size=2, profile=str(profile),
                         gym_workers=2)  # fmt: skip
    _, run_dir = run_benchmark(spec, root)
    return root, run_dir


def test_stages_from_a_streaming_run_follow_the_engine_model(streaming_run):
    """A call costs CALL_S plus its requests' responses, so a response's mean time is the engine
    time less CALL_S per call, over the requests: near the profile's RESPONSE_S (token counts
    are drawn, and sleeps overrun a little), where charging the call cost to each request as a
    response's time would not be."""
    run = load_run(streaming_run[1])
    spans = [s for spans in run.spans.values() for s in spans]
    calls = [s.duration for s in spans if s.kind == "generate"]
    requests = sum(s.kind == "generate_request" for s in spans)
    measured = from_run(run)
    assert measured.generate_call_s == CALL_S
    assert measured.response_s.mean == pytest.approx((sum(calls) - CALL_S * len(calls)) / requests)
    assert 0.8 * RESPONSE_S < measured.response_s.mean < 1.3 * RESPONSE_S < sum(calls) / requests


def test_resimulate_markdown_of_a_streaming_run(streaming_run, monkeypatch, capsys):
    root, run_dir = streaming_run
    code, out, err = harness_here(monkeypatch, capsys, "simulate", "--run", run_dir.name, "--repeats", "3",
                                  "--results", str(root), "--markdown")  # fmt: skip
    assert code == 0, err
    header, rule, row = out.strip().splitlines()
    assert row.startswith(f"| {run_dir.name} (seed 0, 3 steps) | ")
    assert all(cell.strip() != "-" for cell in row.split("|")[2:7])  # both modes and the speedup


@pytest.mark.parametrize("args,message", [
    (["--run", "no-such-run"], "no run 'no-such-run'"),
    (["--gym", "maht"], "Did you mean 'math'"),
    (["--gym", "verilog", "--gym-workers", "-3"], "Invalid value for '--gym-workers'"),  # the bound every command shares
    (["--gym", "verilog", "--gym-workers", "0"], "Invalid value for '--gym-workers'"),
    (["--gym", "verilog", "--steps", "0"], "steps must be at least 1"),
    (["--gym", "verilog", "--engines", "0"], "--engines must be at least 1"),
    (["--gym", "verilog", "--batch", "0"], "Invalid value for '--batch'"),
    (["--gym", "verilog", "--oversample", "-1"], "Invalid value for '--oversample'"),
    (["--run", VERILOG_RUN, "--repeats", "0"], "--repeats must be at least 1"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path, monkeypatch, capsys):
    results = RESULTS if "--run" in args or "verilog" in args else tmp_path
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
    disaggregated = summarize(simulate(fast_gym, accel, replace(config, mode="async", placement="disaggregated")))
    # a pool of two: each accelerator generates one group (0.4 s), then both train (2.5 s)
    pool = summarize(simulate(fast_gym, accel, replace(config, mode="async", engines=2, trainers=2)))
    assert colocated["async"]["step_time_mean"] == pytest.approx(3.3, abs=0.02)
    assert colocated["sync"]["step_time_mean"] == pytest.approx(3.301, abs=0.001)
    assert colocated["async"]["ideal_step_time"] == pytest.approx(3.3, abs=0.02)
    assert disaggregated["step_time_mean"] == pytest.approx(2.5, abs=0.02)
    assert pool["step_time_mean"] == pytest.approx(2.9, abs=0.02)
    assert SimConfig().placement == "colocated"  # benchmark's default, and plan's
    with pytest.raises(ValueError, match="--engines and --trainers must be equal"):
        SimConfig(engines=2, placement="colocated")
    with pytest.raises(ValueError, match="colocated or disaggregated"):
        SimConfig(placement="shared")


def test_a_replay_run_and_its_simulation_charge_latency_bound_generation_alike():
    """A profile with a per-sequence rate: a sync step's requests arrive together, the first
    starts a latency-bound call and the others join it, in the replay policy's threaded engine as
    in the simulator's, so each step is one call as long as its longest response alone. Without
    joining the replay run would make two calls a step, the second as long again."""
    from gyms.pool import GymPool
    from trainer.pipeline import RunConfig, run
    from trainer.policies.replay import ReplayPolicy
    from harness.sim.stages import from_profile

    profile = HardwareProfile("latency-bound", "test", generate_s_per_token=1e-5, train_s_per_token=1e-6,
                              update_weights_s=0.01, response_tokens=100, prompt_tokens=10,
                              decode_s_per_token=5e-3)  # fmt: skip
    gym = ToyGym(max_turns=1, tasks=4)
    policy = ReplayPolicy(gym, profile, seed=0, placement="disaggregated")
    with GymPool(workers=8, step_timeout_s=5.0) as pool:
        real = run(gym, policy, pool, RunConfig(mode="sync", steps=4, batch_groups=2, group_size=4))
    # after the warm-up step (threads starting), one call a step: every request joined the first's
    warm = real.steps[0].end
    assert sum(s.start >= warm for s in real.timeline.select("rollout", "generate")) == len(real.steps) - 1
    measured = summarize(real)["stage_per_step"]["generate"]
    config = SimConfig(mode="sync", steps=4, batch_groups=2, group_size=4, gym_workers=8, placement="disaggregated")
    simulated = statistics.fmean(
        summarize(simulate(card(Distribution.constant(0.001)), from_profile(profile), replace(config, seed=s)))
        ["stage_per_step"]["generate"] for s in range(20))  # fmt: skip
    # the longest of 8 responses of U(50, 150) tokens at 5 ms: about 0.69 s; two calls would be 1.2 s
    assert simulated == pytest.approx(measured, rel=0.25)
    assert 0.6 < simulated < 0.75
