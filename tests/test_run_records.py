"""Every run ever published under results/runs/ loads through the one loader (harness/rundir.py),
in the current schema, and shows the figures it was published with."""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from harness import catalogue, intervals
from harness.figures import FIGURES
from harness.leaderboard import make_row
from harness.report import report_html
from harness.rundir import SCHEMA_VERSION, RunDirError, load_run, load_summary
from trainer.types import FATES

RESULTS = Path(__file__).resolve().parent.parent / "results"
PUBLISHED = sorted(p for p in (RESULTS / "runs").iterdir() if p.is_dir())
# the first round's runs, kept for docs/simulate.md's fidelity table: the oldest records there are
FIRST_ROUND = sorted(p for p in (Path(__file__).parent / "fixtures" / "results" / "runs").iterdir() if p.is_dir())


def test_there_are_published_runs_to_check():
    assert len(PUBLISHED) >= 10 and len(FIRST_ROUND) >= 4


@pytest.mark.parametrize("path", PUBLISHED + FIRST_ROUND, ids=lambda p: p.name)
def test_a_published_run_loads_in_the_current_schema_and_draws(path):
    run = load_run(path)
    s = run.summary
    assert s["schema_version"] == SCHEMA_VERSION
    assert s["spec"]["executor"] in ("local", "ray") and "oversample" in s["spec"]
    assert run.placement in ("colocated", "disaggregated") if s["emulated"] else run.placement is None
    page = report_html(run, images={spec.name: b"" for spec in FIGURES})  # the figures' bytes do not matter here
    for metric in catalogue.shown_in(catalogue.REPORT):
        if not metric.colocated_only or run.placement == "colocated":
            assert f"<td>{metric.label}</td>" in page, metric.key


def test_published_rows_keep_the_figures_they_were_published_with():
    """The committed leaderboard.csv's figures, cell for cell, from the runs it names."""
    published = list(csv.DictReader((RESULTS / "leaderboard.csv").read_text().splitlines()))
    compared = 0
    for row in published:
        again = make_row(row["run_id"], load_summary(RESULTS / "runs" / row["run_id"]))
        for field, cell in row.items():
            if field in again.figures:
                value = again.figures[field]
                assert cell == ("" if value is None else f"{value:.6f}" if isinstance(value, float) else str(value)), (
                    row["run_id"], field)  # fmt: skip
                compared += 1
        assert (again.gym, again.configuration, again.stages) == (row["gym"], row["configuration"], row["stages"])
    assert compared >= 10 * len(published)


def _published_summary() -> dict:
    """The newest published run that measured both modes (an async-only run compares nothing)."""
    both = [run for run in PUBLISHED if {"sync", "async"} <= set(json.loads((run / "summary.json").read_text())["modes"])]
    return json.loads((both[-1] / "summary.json").read_text())


def test_an_old_run_is_read_as_it_measured(tmp_path):
    """A summary from before placement, over-sampling, the executor, repeats, pooled audits, wait
    attribution and the GPU sampler: each reader finds what the run measured, in the current schema."""
    old = _published_summary()
    audit = {"fates": dict.fromkeys(FATES, 0), "quartiles": [], "slow_fast_acceptance": 0.5,
             "reward_trained": None, "reward_dropped": None, "gym_s_dropped_share": 0.0}  # fmt: skip
    for key in ("placement", "repeats", "intervals", "bias", "control", "schema_version", "gym_pool"):
        old.pop(key, None)
    for key in ("oversample", "executor"):
        old["spec"].pop(key, None)
    for mode, figures in old["modes"].items():
        for key in ("wait_split", "wait_split_per_step", "gym_wait_share", "gpu", "weight_sync", "bias",
                    "accelerator_idle_ratio", "gym_s_per_trained_sample"):  # fmt: skip
            figures.pop(key, None)
        figures["bias"] = audit if mode == "async" else None
    for emulated, placement in ((True, "disaggregated"), (False, None)):
        (tmp_path / "summary.json").write_text(json.dumps({**old, "emulated": emulated}))
        s = load_summary(tmp_path)
        assert s.schema_version == SCHEMA_VERSION and s.placement == placement  # real stages: nothing was placed
        assert s.spec["oversample"] is None and s.spec["executor"] == "local"
        assert s.bias == {"async": audit, "sync": None} and s.repeats == [] and s.intervals == {}
        assert s.modes["async"].wait_split is None and s.modes["async"].gpu is None and s.control is None
        assert catalogue.BY_KEY["slow_fast_acceptance"].value(s) == 0.5


def test_a_field_the_schema_does_not_have_is_one_clear_error(tmp_path):
    """A misspelt or unknown key, in a mode, a repeat's mode or the run, names itself and the file."""
    file = tmp_path / "summary.json"
    for where in ("run", "mode", "repeat"):
        s = _published_summary()
        block = {"run": s, "mode": s["modes"]["sync"], "repeat": s["repeats"][-1]["modes"]["async"]}[where]
        block["trainer_idle_ratoi"] = 0.5
        file.write_text(json.dumps(s))
        with pytest.raises(RunDirError, match=f"{file}: .*unknown field trainer_idle_ratoi"):
            load_summary(tmp_path)
    s = _published_summary()
    del s["modes"]["sync"]["oscillation"]
    file.write_text(json.dumps(s))
    with pytest.raises(RunDirError, match="mode sync: lacks oscillation"):
        load_summary(tmp_path)


def test_a_loaded_summary_round_trips_and_cannot_be_changed(tmp_path):
    summary = load_summary(PUBLISHED[-1])
    (tmp_path / "summary.json").write_text(json.dumps(summary.to_json()))
    again = load_summary(tmp_path)
    assert again == summary and again.modes["async"].trainer_idle_ratio == summary["modes"]["async"]["trainer_idle_ratio"]
    with pytest.raises(FrozenInstanceError):
        summary.modes["async"].trainer_idle_ratio = 0.0  # type: ignore[misc]
    with pytest.raises(KeyError):
        summary.modes["async"]["trainer_idle_ratoi"]


def test_a_summary_from_a_newer_heavygym_is_one_clear_error(tmp_path):
    run = sorted(PUBLISHED)[0]
    summary = json.loads((run / "summary.json").read_text())
    (tmp_path / "summary.json").write_text(json.dumps({**summary, "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(RunDirError, match="a newer heavygym wrote it"):
        load_summary(tmp_path)


def test_the_intervals_are_the_catalogues():
    """Each figure with an interval gets one per mode (or one for a comparison), cut at its domain."""
    repeats = [{"modes": {m: {"trainer_idle_ratio": v, "gym_wait_share": v} for m in catalogue.MODES},
                "comparison": {"speedup": 1.0 + v, "achieved_over_ideal": 0.5 + v, "idle_drop": v,
                               "learning_speedup": 1.0 + v, "time_to_target_sync": 10 + v, "time_to_target_async": 5 + v,
                               "final_reward_sync": v, "final_reward_async": v, "final_reward_gap": v}}
               for v in (0.0, 0.001)]  # fmt: skip
    got = intervals.over_repeats(repeats)
    names = [name for m in catalogue.CATALOGUE for name, _ in m.interval_names()]
    assert sorted(got) == sorted(names)
    assert got["trainer_idle_ratio_async"]["low"] == 0.0  # a share cannot lie below zero


def test_a_run_recorded_with_arithmetic_ratio_means_is_read_on_the_log_scale(tmp_path):
    """Before schema 3 a speedup over repeats was an arithmetic mean with a t interval that could reach
    below zero (the heavy lean row, two repeats: -0.56x); loaded, it is the geometric mean with bounds
    on the log scale, taken again from the repeats, for the run and its control."""
    path = RESULTS / "runs" / "20261201T234311Z-lean"
    recorded = json.loads((path / "summary.json").read_text())
    assert "schema_version" not in recorded and recorded["intervals"]["speedup"]["low"] < 0  # as it was written
    s = load_summary(path)
    for block in (s, s.control):
        speedups = [r.comparison["speedup"] for r in block.repeats]
        assert block.comparison["speedup"] == intervals.mean(speedups, ratio=True) != statistics.fmean(speedups)
        assert block.intervals["speedup"] == intervals.interval(speedups, ratio=True)
        assert 0 < block.intervals["speedup"]["low"] < block.comparison["speedup"]
    # a summary written on the log scale keeps the figures it recorded
    recorded["schema_version"] = SCHEMA_VERSION
    recorded["intervals"]["speedup"] = {"mean": 1.3, "low": 1.1, "high": 1.5, "n": 2}
    (tmp_path / "summary.json").write_text(json.dumps(recorded))
    assert load_summary(tmp_path).intervals["speedup"] == {"mean": 1.3, "low": 1.1, "high": 1.5, "n": 2}


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.name)
def test_every_published_ratio_is_on_the_log_scale(path):
    """No published row shows an arithmetic or negative interval of a ratio."""
    s = load_summary(path)
    for block in filter(None, (s, s.control)):
        for key in catalogue.RATIOS & set(block.intervals):
            per_repeat = [r.comparison[key] for r in block.repeats]
            assert block.intervals[key] == intervals.interval(per_repeat, ratio=True), key
            assert block.intervals[key]["low"] > 0, key
