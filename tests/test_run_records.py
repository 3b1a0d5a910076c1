"""Every run ever published under results/runs/ loads through the one loader (harness/rundir.py),
in the current schema, and shows the figures it was published with."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness import catalogue, intervals
from harness.figures import FIGURES
from harness.leaderboard import make_row
from harness.report import report_html
from harness.rundir import SCHEMA_VERSION, RunDirError, load_run, load_summary, upgrade

RESULTS = Path(__file__).resolve().parent.parent / "results"
PUBLISHED = sorted(p for p in (RESULTS / "runs").iterdir() if p.is_dir())


def test_there_are_published_runs_to_check():
    assert len(PUBLISHED) >= 10


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.name)
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


def test_an_old_run_is_read_as_it_measured(tmp_path):
    """A summary from before placement, over-sampling, the executor, repeats, pooled audits and
    wait attribution: each reader finds what the run measured, named in the current schema."""
    audit = {"fates": {}, "quartiles": [], "slow_fast_acceptance": 0.5}
    old = {"run_id": "r", "gym": "g", "emulated": True, "spec": {"steps": 3}, "hardware": {}, "git": {},
           "tools": {}, "modes": {"async": {"bias": audit, "trainer_idle_ratio": 0.1}}}  # fmt: skip
    s = upgrade(json.loads(json.dumps(old)))
    assert s["schema_version"] == SCHEMA_VERSION and s["placement"] == "disaggregated"
    assert s["spec"] == {"steps": 3, "oversample": None, "executor": "local"}
    assert s["bias"] == {"async": audit} and s["repeats"] == [] and s["intervals"] == {}
    assert s["modes"]["async"]["wait_split"] is None and s["modes"]["async"]["gpu"] is None
    assert catalogue.BY_KEY["slow_fast_acceptance"].value(s) == 0.5
    measured = upgrade({**json.loads(json.dumps(old)), "emulated": False})
    assert measured["placement"] is None  # real stages: nothing was placed


def test_a_summary_from_a_newer_heavygym_is_one_clear_error(tmp_path):
    run = sorted(PUBLISHED)[0]
    summary = json.loads((run / "summary.json").read_text())
    (tmp_path / "summary.json").write_text(json.dumps({**summary, "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(RunDirError, match="a newer heavygym wrote it"):
        load_summary(tmp_path)


def test_the_intervals_are_the_catalogues():
    """Each figure with an interval gets one per mode (or one for a comparison), cut at its domain."""
    repeats = [{"modes": {m: {"trainer_idle_ratio": v, "gym_wait_share": v} for m in catalogue.MODES},
                "comparison": {"speedup": 1.0 + v, "achieved_over_ideal": v}} for v in (0.0, 0.001)]  # fmt: skip
    got = intervals.over_repeats(repeats)
    names = [name for m in catalogue.CATALOGUE for name, _ in m.interval_names()]
    assert sorted(got) == sorted(names)
    assert got["trainer_idle_ratio_async"]["low"] == 0.0  # a share cannot lie below zero
