"""The planner: its recommendation holds in simulation, the sizing rule, warnings, card lookup."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT
from in_process import harness_here

from harness import costcard
from harness.costcard import CostCard, turn_pmf
from harness.plan import Cluster, _fewest, default_idle, idle_of, plan, sizing_rule
from harness.sim.distribution import Distribution
from harness.sim.stages import Stages, from_profile
from harness.simulate import simulate_modes
from trainer.policies.profiles import load_profile

RESULTS = ROOT / "tests" / "fixtures" / "results"  # real run records, kept as fixtures (README there)
H100 = from_profile(load_profile("h100-qwen3-4b"))
# a gym whose steps take 0.05-1 s, with 2 % slow ones, over up to 3 turns
HEAVY = CostCard("heavy", "test", {}, Distribution.of([0.05 + 0.95 * i / 97 for i in range(98)] + [4.0, 4.0]),
                 turn_pmf(0.5, 3), 0.0, 0.02, workers=1, calls=100)  # fmt: skip


def async_idle(p, workers_per_node: int) -> float:
    """The plan's simulation, with this many gym workers per node (those off the trainer's node remote)."""
    workers, remote = p.cluster.gym_pool(workers_per_node, p.gym_nodes)
    config = replace(p.config, mode="async", gym_workers=workers, remote_gym_workers=remote)
    figures = simulate_modes(HEAVY, H100, config, ("async",)).modes["async"]
    return idle_of(figures, default_idle(p.cluster.placement), p.cluster)


@pytest.mark.parametrize("placement,target", [("disaggregated", 0.05), ("colocated", 0.10)])
def test_the_recommendation_keeps_the_simulated_idle_ratio_under_target(placement, target):
    """Colocated, the target is the pool's idle (neither generating nor training): its trainer
    also waits while the pool generates, which no gym worker changes."""
    p = plan(HEAVY, H100, Cluster(nodes=2, accelerators_per_node=4, cores_per_node=64, placement=placement),
             target_idle=target)  # fmt: skip
    assert p.reached
    assert async_idle(p, p.workers_per_node) <= target
    assert p.workers_per_node == 1 or async_idle(p, p.workers_per_node - 1) > target  # and no worker to spare
    assert idle_of(p.summary.modes["async"], p.idle, p.cluster) <= target
    assert p.summary["comparison"]["speedup"] > 1
    assert p.buffer_groups == (p.max_staleness + 1) * p.batch_groups
    if placement == "colocated":  # the trainer's own idle includes generation
        assert p.summary.modes["async"].trainer_idle_ratio > target


def test_the_worker_search_finds_the_fewest_from_any_guess_in_few_simulations():
    for most in (1, 2, 7, 192):
        for answer in range(1, most + 1):
            for guess in {1, answer - 1, answer, answer + 1, most // 2, most, most + 5}:
                asked: list[int] = []
                found = _fewest(lambda n, a=answer: asked.append(n) or n >= a, most, guess)
                assert found == answer and all(1 <= n <= most for n in asked)
                if guess == answer:  # the sizing rule was right: confirming it takes two looks
                    assert len(asked) <= 2


def test_the_sizing_rule_by_hand():
    card = CostCard("c", "test", {}, Distribution.constant(0.2), (1.0,), 0.0, 0.0, workers=1, calls=1)
    stages = Stages("test", 0.0, Distribution.constant(0.1), Distribution.constant(1.0), 0.0,
                    Distribution.constant(0.5))  # fmt: skip
    rule = sizing_rule(card, stages, Cluster(1, 4, 16, "disaggregated"), batch=8, group=4)
    # 32 calls per step; 2 engines generate them in 32 x 0.1 / 2 = 1.6 s > training's 1.5 s
    assert rule.step_time_s == pytest.approx(1.6) and rule.arrival_per_s == pytest.approx(20.0)
    assert rule.workers == 6  # ceil(1.3 x 20 x 0.2)
    # colocated, all 4 generate (0.8 s), then train (1.5 s): 32 calls in 2.3 s
    pooled = sizing_rule(card, stages, Cluster(1, 4, 16, "colocated"), batch=8, group=4)
    assert pooled.step_time_s == pytest.approx(2.3) and pooled.workers == 4  # ceil(1.3 x 32 / 2.3 x 0.2)


def test_rollout_slower_than_training_is_a_warning_with_a_remedy():
    slow_generation = replace(H100, response_s=Distribution.constant(0.5))
    p = plan(HEAVY, slow_generation, Cluster(1, 2, 16, "disaggregated"), steps=20)
    assert any("rollout is slower than training" in w and "depth-1" in w for w in p.warnings)
    assert not any("rollout is slower" in w for w in plan(HEAVY, H100, Cluster(1, 2, 16, "disaggregated"), steps=20).warnings)
    # a colocated pool never overlaps the two, so it has no such bubble
    assert not any("rollout is slower" in w for w in plan(HEAVY, slow_generation, Cluster(1, 2, 16), steps=20).warnings)


def test_a_gym_too_heavy_for_the_cores_says_so():
    heavy = replace(HEAVY, service_s=Distribution.constant(20.0))
    p = plan(heavy, H100, Cluster(1, 8, 4), steps=10, staleness_limit=2)
    assert not p.reached and p.workers_per_node == 4
    assert any("asks for" in w and "a node has 4 cores" in w for w in p.warnings)
    assert any("no max_staleness up to 2" in w for w in p.warnings)


@pytest.mark.parametrize("nodes,accelerators,cores,message", [
    (0, 8, 192, "--nodes must be at least 1"),
    (1, -8, 192, "--accelerators must be at least 1"),
    (1, 8, 0, "--cores-per-node must be at least 1"),
    (1, 1, 8, "at least 2 accelerators"),
])  # fmt: skip
def test_bad_clusters(nodes, accelerators, cores, message):
    with pytest.raises(ValueError, match=message):
        Cluster(nodes, accelerators, cores, "disaggregated")


def test_cluster_mapping():
    c = Cluster(nodes=64, accelerators_per_node=8, cores_per_node=192, placement="disaggregated")
    assert (c.accelerators, c.engines, c.trainers) == (512, 256, 256)
    pool = Cluster(nodes=64, accelerators_per_node=8, cores_per_node=192)  # colocated, benchmark's default
    assert (pool.placement, pool.engines, pool.trainers) == ("colocated", 512, 512)
    assert Cluster(1, 1, 8).engines == 1  # one accelerator can generate and train in turn


# -- the command ------------------------------------------------------------------------------


def test_plan_for_verilog_on_8_accelerators(monkeypatch, capsys):
    code, out, err = harness_here(monkeypatch, capsys, "plan", "--gym", "verilog", "--accelerators", "8",
                                  "--cores-per-node", "192", "--replicates", "3", "--results", str(RESULTS))  # fmt: skip
    assert code == 0, err
    assert "card: verilog (no options), run 20261130T125643Z-verilog" in out
    assert "sizing rule: lambda = " in out and "gym workers per node" in out
    assert "trainer idle ratio: sync" in out and "accelerator idle ratio: sync" in out and "async speedup" in out
    assert "target: accelerator idle ratio at most 5% in async" in out  # colocated: the pool's idle, named
    assert "trust: " in out
    # progress on stderr, one line per simulation (a large cluster takes minutes)
    assert "simulated max_staleness 1, 192 gym workers per node: async accelerator idle ratio" in err
    assert "chosen: max_staleness" in err


def test_plan_json(monkeypatch, capsys):
    code, out, _ = harness_here(monkeypatch, capsys, "plan", "--gym", "verilog", "--accelerators", "4",
                                "--cores-per-node", "32", "--steps", "10", "--replicates", "3", "--results",
                                str(RESULTS), "--json")  # fmt: skip
    figures = json.loads(out)
    assert code == 0 and 1 <= figures["prediction"]["plan"]["workers_per_node"] <= 32
    assert figures["planner"]["sizing_rule"]["workers"] >= 1
    cluster = figures["prediction"]["inputs"]["cluster"]
    assert cluster["engines"] == 4 and cluster["placement"] == "colocated"
    speedup = figures["prediction"]["figures"]["speedup"]
    assert speedup["low"] <= speedup["mean"] <= speedup["high"]


def test_plan_targets_the_idle_ratio_it_is_told(monkeypatch, capsys):
    code, out, err = harness_here(monkeypatch, capsys, "plan", "--gym", "verilog", "--accelerators", "4",
                                  "--cores-per-node", "32", "--steps", "10", "--replicates", "2", "--idle", "trainer",
                                  "--target-idle", "0.5", "--results", str(RESULTS))  # fmt: skip
    assert code == 0, err
    assert "target: trainer idle ratio at most 50% in async" in out and "async trainer idle ratio" in err


@pytest.mark.parametrize("args,message", [
    (["--gym", "verilog", "--accelerators", "-8", "--cores-per-node", "192"], "--accelerators must be at least 1"),
    (["--gym", "verilog", "--accelerators", "8", "--cores-per-node", "192", "--target-idle", "2"], "--target-idle"),
    (["--gym", "verilgo", "--accelerators", "8", "--cores-per-node", "192"], "Did you mean 'verilog'"),
    (["--gym", "verilog", "--accelerators", "8", "--cores-per-node", "192", "--idle", "gpu"], "--idle"),
    (["--gym", "verilog", "--accelerators", "8", "--cores-per-node", "192", "--gym-node-cores", "-1"],
     "--gym-node-cores must be at least 0"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args, message, monkeypatch, capsys):
    code, _, err = harness_here(monkeypatch, capsys, "plan", *args, "--results", str(RESULTS))
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_no_card_names_the_command_that_makes_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no published results/ here either
    code, _, err = harness_here(monkeypatch, capsys, "plan", "--gym", "math", "--accelerators", "8",
                                "--cores-per-node", "16", "--results", str(tmp_path))  # fmt: skip
    assert code == 2 and "harness gyms profile math" in err


def test_a_results_root_that_does_not_exist_is_an_error(tmp_path, monkeypatch, capsys):
    code, _, err = harness_here(monkeypatch, capsys, "plan", "--gym", "math", "--accelerators", "8",
                                "--cores-per-node", "16", "--results", str(tmp_path / "nowhere"))  # fmt: skip
    assert code == 2 and "nowhere: no such directory" in err and len(err.strip().splitlines()) == 1, err


def test_no_card_of_other_options_is_used_silently(tmp_path, monkeypatch, capsys):
    """A heavy suite asked for, only a core-suite run there: refused, naming the cards found."""
    monkeypatch.chdir(tmp_path)  # no published results/ to fall back on
    code, _, err = harness_here(monkeypatch, capsys, "plan", "--gym", "verilog", "-o", "suite=heavy",
                                "--accelerators", "8", "--cores-per-node", "16", "--results", str(RESULTS))  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no cost card for gym 'verilog' with suite=heavy" in err
    assert "run 20261130T125643Z-verilog (no options)" in err  # what it found instead


def test_the_published_heavy_card_is_found_by_its_options(monkeypatch):
    monkeypatch.chdir(ROOT)
    card, where, run_dir = costcard.find_card("verilog", ROOT / "results", options={"suite": "heavy"})
    assert card.gym_options == {"suite": "heavy"} and run_dir is not None and where.startswith("run ")
    core, _, _ = costcard.find_card("verilog", ROOT / "results", options={})
    assert core.gym_options == {} and core.service_s.mean < card.service_s.mean


def test_a_fresh_results_root_plans_from_the_published_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    card, where, _ = costcard.find_card("math", tmp_path / "results-local")
    assert where.startswith("run ") and str(Path("results") / "runs") in where and card.gym == "math"


def test_card_lookup_prefers_a_profiled_card_then_the_newest_run(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("20261130T125643Z-verilog", "20261130T125457Z-math"):
        (runs / name).symlink_to(RESULTS / "runs" / name)
    card, where, run_dir = costcard.find_card("verilog", tmp_path)
    assert card.source == "run 20261130T125643Z-verilog" and "derived from its spans" in where
    assert run_dir == runs / "20261130T125643Z-verilog"
    costcard.save(replace(HEAVY, gym="verilog", gym_options={}), tmp_path / "cards" / "verilog.json")
    card, where, run_dir = costcard.find_card("verilog", tmp_path)
    assert card.source == "test" and where == str(tmp_path / "cards" / "verilog.json") and run_dir is None
    # a profile of other options is not this gym's card: the run answers
    costcard.save(replace(HEAVY, gym="verilog", gym_options={"suite": "heavy"}), tmp_path / "cards" / "verilog.json")
    card, _, _ = costcard.find_card("verilog", tmp_path)
    assert card.source == "run 20261130T125643Z-verilog"


def test_gyms_profile_writes_a_card_the_planner_reads(tmp_path, monkeypatch, capsys):
    code, out, err = harness_here(monkeypatch, capsys, "gyms", "profile", "math", "--limit", "2", "--gym-workers", "1",
                                  "--results", str(tmp_path))  # fmt: skip
    assert code == 0, err
    card = costcard.load(tmp_path / "cards" / "math.json")
    assert card.source == "gyms profile" and card.tools["math-verify"] and card.calls > 2
    assert card.tools["sandbox"] in ("bwrap", "process")  # what the card was measured in
    assert set(card.by_expect) >= {"pass", "fail"} and card.cpu_s_per_call is not None and card.peak_rss_mb > 0
    assert card.turns == pytest.approx(turn_pmf(0.5, 2))  # math: 2 turns, half the answers pass
    assert "p95" in out and "p99" in out
    # progress on stderr while it measures: the warm-up, then the candidates stepped, about every tenth
    lines = err.splitlines()
    assert lines[0] == ("warming up 1 gym workers (one reference answer each), then stepping "
                        f"{card.calls} candidates of 2 tasks")
    stepped = [int(line.split()[1].split("/")[0]) for line in lines[1:] if line.startswith("stepped ")]
    assert stepped == sorted(set(stepped)) and 1 < len(stepped) <= 10 and stepped[-1] == card.calls
    assert lines[-1] == f"stepped {card.calls}/{card.calls} candidates"
    code, out, _ = harness_here(monkeypatch, capsys, "plan", "--gym", "math", "--accelerators", "2",
                                "--cores-per-node", "8", "--steps", "10", "--replicates", "2", "--results",
                                str(tmp_path))  # fmt: skip
    assert code == 0 and f"{Path(tmp_path) / 'cards' / 'math.json'}" in out
    assert "trust: unchecked: no measured run stands behind the card" in out


def test_cpu_only_gym_nodes_are_added_where_the_accelerator_nodes_cores_fall_short():
    """2 cores per accelerator node cannot keep 4 accelerators busy on this gym; the planner adds
    the fewest gym nodes of 8 cores that reach the target, and one fewer does not."""
    cluster = Cluster(nodes=1, accelerators_per_node=4, cores_per_node=2, placement="disaggregated",
                      gym_node_cores=8, max_gym_nodes=16)  # fmt: skip
    p = plan(HEAVY, H100, cluster, target_idle=0.05, steps=30)
    assert p.reached and p.gym_nodes >= 1 and p.workers_per_node == 2
    assert (p.config.gym_workers, p.config.remote_gym_workers) == (2 + 8 * p.gym_nodes, 8 * p.gym_nodes)
    fewer = replace(p.config, mode="async", gym_workers=2 + 8 * (p.gym_nodes - 1),
                    remote_gym_workers=8 * (p.gym_nodes - 1), record_fates=False)  # fmt: skip
    assert idle_of(simulate_modes(HEAVY, H100, fewer, ("async",)).modes["async"], "trainer", cluster) > 0.05
    without = plan(HEAVY, H100, replace(cluster, gym_node_cores=0), target_idle=0.05, steps=30)
    assert not without.reached and any("--gym-node-cores" in w for w in without.warnings)


def test_prices_pick_the_cheapest_mix_per_trained_sample():
    from harness.plan import Prices, mixes

    assert Prices.parse("accel=98.3, cpu=4.1") == Prices(98.3, 4.1)
    for bad in ("accel=1", "accel=x,cpu=1", "gpu=1,cpu=1", "accel=-1,cpu=1"):
        with pytest.raises(ValueError, match="accel=PRICE,cpu=PRICE"):
            Prices.parse(bad)
    cluster = Cluster(nodes=2, accelerators_per_node=2, cores_per_node=2, placement="disaggregated",
                      gym_node_cores=8, max_gym_nodes=8)  # fmt: skip
    found = mixes(HEAVY, H100, cluster, Prices(100.0, 1.0), None, target_idle=0.05, steps=20)
    assert sorted(m.nodes for m in found) == [1, 2]
    reached = [m for m in found if m.reached]
    assert reached == found[: len(reached)]  # those that reach the target come first, cheapest first
    assert [m.per_1k_samples for m in reached] == sorted(m.per_1k_samples for m in reached)
    for m in found:
        assert m.per_hour == pytest.approx(100.0 * m.nodes + 1.0 * m.gym_nodes)
