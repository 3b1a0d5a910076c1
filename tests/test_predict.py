"""The one prediction (harness/predict.py): plan, simulate --target and the benchmark's block give the
same numbers for the same inputs, print the inputs, carry intervals, and say when not to trust them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from in_process import harness_here

from harness import benchmark, predict
from harness.rundir import load_summary
from harness.target import Target

RUNS = Path(__file__).resolve().parents[1] / "results" / "runs"
HEAVY = RUNS / "20261201T233156Z-verilog"  # verilog's heavy suite, colocated, 2 ABBA repeats
LIGHT = RUNS / "20261202T054801Z-verilog"  # verilog's core suite, colocated, 3 ABBA repeats
TINY = RUNS / "20261201T222209Z-math"  # math, 10 steps


def test_targets_parse_and_a_bad_one_names_the_form():
    assert Target.parse("8x192") == Target(8, 192, 1) and Target.parse(" 8x192x4 ") == Target(8, 192, 4)
    assert Target.parse("8x192+64") == Target(8, 192, 1, 64) and Target.parse("8x192x2+64").gym_node_cores == 64
    assert str(Target(8, 192, 4)) == "8 accelerators and 192 cores per node x 4 nodes"
    for bad in ("8", "8x", "0x192", "8x192x0", "eightx192", "8x192+0", "8x192+"):
        with pytest.raises(ValueError, match=r"ACCELERATORSxCORES\[xNODES\]\[\+GYM_NODE_CORES\]"):
            Target.parse(bad)


def _numbers(block: dict) -> dict:
    """What a route answers, without the words that say how it was asked."""
    return {"plan": block["plan"], "figures": block["figures"], "trust": block["trust"],
            "inputs": {k: v for k, v in block["inputs"].items() if k not in ("notes", "card")}}  # fmt: skip


def test_plan_simulate_and_the_benchmark_give_one_answer(monkeypatch, capsys):
    """The same card (the run's), target, configuration and seeds through all three routes."""
    code, out, err = harness_here(monkeypatch, capsys, "plan", "--gym", "verilog", "--card", str(HEAVY),
                                  "--accelerators", "4", "--cores-per-node", "32", "--results", str(RUNS.parent),
                                  "--json")  # fmt: skip
    assert code == 0, err
    planned = json.loads(out)["prediction"]
    code, out, err = harness_here(monkeypatch, capsys, "simulate", "--run", HEAVY.name, "--target", "4x32",
                                  "--results", str(RUNS.parent), "--json")  # fmt: skip
    assert code == 0, err
    simulated = json.loads(out)
    recorded = benchmark._predicted(HEAVY, load_summary(HEAVY), Target(4, 32))  # what a run writes in summary.json
    assert _numbers(planned) == _numbers(simulated) == _numbers(recorded)
    assert planned["figures"]["speedup"]["mean"] > 1
    # every route names the inputs that decide it, and the run route says what it did not take from the run
    text = "\n".join(predict.lines(simulated))
    for words in ("card: verilog (suite=heavy), run 20261201T233156Z-verilog", "stages: profile h100-qwen3-4b",
                  "batch 16 groups x 4", "schedule fifo", "4 rollout engine(s), 4 trainer replica(s)",
                  "seeds 0-19 (20 replicates", "placement colocated", "not the run's 2"):  # fmt: skip
        assert words in text, words


def test_figures_carry_intervals_that_hold_their_mean():
    block = predict.answer(predict.from_run(LIGHT, Target(4, 16), replicates=6)).block
    for name, e in block["figures"].items():
        assert e["low"] <= e["mean"] <= e["high"], name
    speedup = block["figures"]["speedup"]
    assert speedup["high"] > speedup["low"]  # seeds and bootstraps differ: a real spread
    text = "\n".join(predict.lines(block))
    assert f"async speedup {speedup['mean']:.2f}x [{speedup['low']:.2f}x, {speedup['high']:.2f}x]" in text


def test_the_bootstrap_resamples_the_card_s_step_times():
    import numpy as np

    card = predict.from_run(HEAVY, Target(8, 64)).card
    drawn = predict.bootstrap(card, np.random.default_rng(1))
    assert drawn.service_s.count == card.service_s.count and drawn.service_s != card.service_s
    assert set(drawn.service_s.values) <= set(card.service_s.values)


def test_the_replay_of_the_run_decides_the_trust_line():
    """The heavy run replays within its tolerances; the same card against a run it does not describe
    (its measured idle moved 30 points) is flagged in plain words."""
    q = predict.from_run(HEAVY, Target(8, 64), replicates=3)
    trust = predict.answer(q).block["trust"]
    assert trust["verdict"] == "trusted", trust
    for mode in ("sync", "async"):
        replayed = trust["replay"][f"trainer_idle_{mode}"]
        assert abs(replayed["predicted"] - replayed["measured"]) <= predict.TRUST_IDLE_PP / 100


def test_a_run_that_its_replay_misses_is_not_trusted(tmp_path):
    """A copy of the heavy run whose recorded async idle is 30 points lower than what happened."""
    import shutil

    copy = tmp_path / HEAVY.name
    shutil.copytree(HEAVY, copy)
    data = json.loads((copy / "summary.json").read_text())
    for block in (data, *data["repeats"]):  # the intervals over the repeats are recomputed as it loads
        block["modes"]["async"]["trainer_idle_ratio"] -= 0.30
    (copy / "summary.json").write_text(json.dumps(data))
    block = predict.answer(predict.from_run(copy, Target(8, 64), replicates=3)).block
    assert block["trust"]["verdict"] == "do not trust"
    line = next(line for line in predict.lines(block) if "trust:" in line)
    assert "do not trust this prediction: async trainer idle ratio" in line


def test_a_run_of_few_steps_is_not_a_speedup(tmp_path, monkeypatch):
    """A run whose modes measured two steps: no speedup figure, and its prediction is not trusted."""
    summary = load_summary(TINY)
    few = replace(summary, modes={m: replace(f, measured_steps=2) for m, f in summary.modes.items()})
    from harness import console as console_module

    assert "speedup not measured: 2 step(s)" in console_module._comparison_line(few, "speedup")
    assert "speedup not measured" not in console_module._comparison_line(summary, "speedup")


def test_the_simulator_predicts_a_heavy_colocated_run_within_its_fidelity():
    """The default placement (colocated), the run's gym costs and profile: sync and async trainer
    idle within 3 points and the speedup within 10 % of what the benchmark measured."""
    replay = predict.answer(predict.from_run(HEAVY, Target(8, 64))).block["trust"]["replay"]
    for mode in ("sync", "async"):
        idle = replay[f"trainer_idle_{mode}"]
        assert abs(idle["predicted"] - idle["measured"]) <= 0.03, (mode, idle)
    assert abs(replay["speedup"]["predicted"] / replay["speedup"]["measured"] - 1) <= 0.10, replay["speedup"]


def test_a_bad_target_is_one_line_before_any_work(monkeypatch, capsys, tmp_path):
    code, _, err = harness_here(monkeypatch, capsys, "benchmark", "--target", "8", "--results", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--target" in err and "ACCELERATORSxCORES[xNODES]" in err and not (tmp_path / "runs").exists()


def test_simulate_prints_a_published_run_s_prediction(monkeypatch, capsys):
    code, out, err = harness_here(monkeypatch, capsys, "simulate", "--run", HEAVY.name, "--target", "8x192",
                                  "--replicates", "2", "--results", str(RUNS.parent))  # fmt: skip
    assert code == 0, err
    assert out.startswith("predicted (simulated, not measured) for 1 node(s) x 8 accelerators x 192 cores")
    assert "trust: " in out and "trainer idle ratio: sync" in out and "accelerator idle ratio: sync" in out
    code, _, err = harness_here(monkeypatch, capsys, "simulate", "--target", "8x192", "--results", str(RUNS.parent))
    assert code == 2 and "add --run RUN_ID" in err


def test_a_block_recorded_before_this_version_reads_as_recorded():
    summary = load_summary(RUNS / "20261206T053157Z-verilog")
    assert summary.predicted is not None and "version" not in summary.predicted
    lines = predict.lines(summary.predicted)
    assert lines[0].startswith("predicted (simulated, not measured) for 8 accelerators and 192 cores per node")
    assert "async speedup 5.46x" in lines[1]  # the figure it recorded, not a new one


def test_a_run_of_one_repeat_has_no_interval_and_is_judged_by_the_tolerances(tmp_path):
    """One repeat: its intervals are empty (no low, no high), so the replay is held to the tolerances alone."""
    import shutil

    copy = tmp_path / TINY.name
    shutil.copytree(TINY, copy)
    data = json.loads((copy / "summary.json").read_text())
    data["repeats"] = data["repeats"][:1]
    (copy / "summary.json").write_text(json.dumps(data))
    assert load_summary(copy).intervals["speedup"]["low"] is None
    trust = predict.answer(predict.from_run(copy, Target(2, 8), replicates=2)).block["trust"]
    assert trust["verdict"] in ("trusted", "do not trust") and "speedup" in trust["replay"]


def test_a_run_of_a_real_engine_predicts_from_its_own_stage_times():
    """The tiny policy's run (a real torch engine, nothing emulated): its stages are its own spans,
    and the block says they are this machine's, not the target's accelerators'."""
    run = RUNS / "20261206T050849Z-math"
    assert load_summary(run).emulated is False
    block = predict.answer(predict.from_run(run, Target(2, 8), replicates=2)).block
    assert "this machine's stage times, not the target's accelerators'" in block["inputs"]["stages"]
    assert block["figures"]["speedup"]["mean"] > 0
