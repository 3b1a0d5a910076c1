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
from harness.plan import Cluster, _fewest, idle_ratio, plan, sizing_rule
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig
from harness.sim.stages import Stages, from_profile
from harness.simulate import simulate_modes
from trainer.policies.profiles import load_profile

RESULTS = ROOT / "tests" / "fixtures" / "results"  # real run records, kept as fixtures (README there)
H100 = from_profile(load_profile("h100-qwen3-4b"))
# a gym whose steps take 0.05-1 s, with 2 % slow ones, over up to 3 turns
HEAVY = CostCard("heavy", "test", {}, Distribution.of([0.05 + 0.95 * i / 97 for i in range(98)] + [4.0, 4.0]),
                 turn_pmf(0.5, 3), 0.0, 0.02, workers=1, calls=100)  # fmt: skip


def async_idle(p, workers_per_node: int) -> float:
    config = SimConfig(mode="async", steps=40, batch_groups=p.batch_groups, group_size=p.group_size,
                       max_staleness=p.max_staleness, gym_workers=workers_per_node * p.cluster.nodes,
                       engines=p.cluster.engines, trainers=p.cluster.trainers, placement=p.cluster.placement)  # fmt: skip
    return idle_ratio(simulate_modes(HEAVY, H100, config, ("async",)).modes["async"], p.cluster.placement)


@pytest.mark.parametrize("placement,target", [("disaggregated", 0.05), ("colocated", 0.10)])
def test_the_recommendation_keeps_the_simulated_idle_ratio_under_target(placement, target):
    """Colocated, the target is the pool's idle (neither generating nor training): its trainer
    also waits while the pool generates, which no gym worker changes."""
    p = plan(HEAVY, H100, Cluster(nodes=2, accelerators_per_node=4, cores_per_node=64, placement=placement),
             target_idle=target)  # fmt: skip
    assert p.reached
    assert async_idle(p, p.workers_per_node) <= target
    assert p.workers_per_node == 1 or async_idle(p, p.workers_per_node - 1) > target  # and no worker to spare
    assert idle_ratio(p.summary.modes["async"], placement) <= target
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
                                  "--cores-per-node", "192", "--results", str(RESULTS))  # fmt: skip
    assert code == 0, err
    assert "card: " in out and "verilog" in out
    assert "sizing rule: lambda = " in out and "gym workers per node, max_staleness" in out
    assert "predicted trainer idle ratio: async" in out and "speedup" in out
    # progress on stderr, one line per simulation (a large cluster takes minutes)
    assert "simulated max_staleness 1, 192 gym workers per node: async idle" in err
    assert "chosen: max_staleness" in err


def test_plan_json(monkeypatch, capsys):
    code, out, _ = harness_here(monkeypatch, capsys, "plan", "--gym", "verilog", "--accelerators", "4",
                                "--cores-per-node", "32", "--steps", "10", "--results", str(RESULTS), "--json")  # fmt: skip
    figures = json.loads(out)
    assert code == 0 and 1 <= figures["workers_per_node"] <= 32
    assert figures["sizing_rule"]["workers"] >= 1 and figures["cluster"]["engines"] == 4
    assert figures["cluster"]["placement"] == "colocated"


@pytest.mark.parametrize("args,message", [
    (["--gym", "verilog", "--accelerators", "-8", "--cores-per-node", "192"], "--accelerators must be at least 1"),
    (["--gym", "verilog", "--accelerators", "8", "--cores-per-node", "192", "--target-idle", "2"], "--target-idle"),
    (["--gym", "verilgo", "--accelerators", "8", "--cores-per-node", "192"], "Did you mean 'verilog'"),
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


def test_a_fresh_results_root_plans_from_the_published_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    card, where = costcard.find_card("math", tmp_path / "results-local")
    assert where.startswith(str(Path("results") / "runs")) and card.gym == "math"


def test_card_lookup_prefers_a_profiled_card_then_the_newest_run(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("20261130T125643Z-verilog", "20261130T125457Z-math"):
        (runs / name).symlink_to(RESULTS / "runs" / name)
    card, where = costcard.find_card("verilog", tmp_path)
    assert card.source == "run 20261130T125643Z-verilog" and "derived from its spans" in where
    costcard.save(HEAVY, tmp_path / "cards" / "verilog.json")
    card, where = costcard.find_card("verilog", tmp_path)
    assert card == HEAVY and where == str(tmp_path / "cards" / "verilog.json")


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
                                "--cores-per-node", "8", "--steps", "10", "--results", str(tmp_path))  # fmt: skip
    assert code == 0 and f"card: {Path(tmp_path) / 'cards' / 'math.json'}" in out
