"""`harness report`: figures and a self-contained page for one run, the same bytes every time.

Most tests draw a synthetic run written here (fast, exact); tests/test_browser.py reports a
real `harness benchmark` run.
"""

from __future__ import annotations

import base64
import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import harness

from harness.figures import FIGURES
from harness.report import REPORT, write_report
from harness.rundir import RunDirError, find_run, load_run, service_stats

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_run(
    root: Path,
    run_id: str,
    gym: str = "toy",
    modes: tuple[str, ...] = ("sync", "async"),
    profile: str | None = "fake-h100",
    workers: int = 2,
    speedup: float = 1.5,
    errored: int = 0,
    bias: bool = False,
) -> Path:
    """A small, plausible run record: 4 steps per mode, 2 groups per step, `workers` gym workers.
    With `bias`, it over-sampled 2 groups and carries the slow-sample bias audit (AUDITS), as
    runs do since the audit; without, it is a run from before it."""
    path = root / "runs" / run_id
    path.mkdir(parents=True)
    spans, steps, depth, figures = [], [], [], {}
    for mode in modes:
        step_time = 4.0 if mode == "sync" else 4.0 / speedup
        wait = 0.5 * step_time if mode == "sync" else 0.1 * step_time
        actor, update = 0.75 * (step_time - wait), 0.25 * (step_time - wait)
        mode_steps = []
        for k in range(4):
            end = (k + 1) * step_time
            start = end - step_time
            spans += [
                (mode, "trainer", "train_wait", start, start + wait, k),
                (mode, "trainer", "actor_train", start + wait, end - update, k),
                (mode, "trainer", "update_weights", end - update, end, k),
                (mode, "rollout", "generate", start, start + 0.2 * step_time, k),
            ]
            for w, i in ((w, i) for w in range(workers) for i in range(3)):
                begin = start + (0.2 + 0.1 * i) * step_time
                spans.append((mode, f"gym-{w}", "gym_step", begin, begin + 0.02 * (i + w + 1) * step_time, k))
            reward = 0.25 + 0.1 * k
            mode_steps.append([mode, k, end, step_time, wait, actor, update, reward, reward, 4,
                               0.0 if mode == "sync" else 1.0, 0, 0.1])  # fmt: skip
            depth += [[mode, round(start + 1.0, 6), 1], [mode, round(start + wait, 6), 0]]
        steps += mode_steps
        figures[mode] = _mode_figures(mode, step_time, wait, actor, update, errored)
        if bias:
            figures[mode]["bias"] = AUDITS["first"][mode]
            figures[mode]["config"]["oversample"] = 2
    with (path / "timeline.jsonl").open("w") as f:
        for mode, resource, kind, start, end, step in sorted(spans, key=lambda s: (s[0], s[3])):
            f.write(
                json.dumps({"mode": mode, "resource": resource, "kind": kind, "start": start, "end": end, "step": step})
                + "\n"
            )
    step_columns = ["mode", "step", "end", "step_time", "train_wait", "actor_train", "update_weights", "reward_mean",
                    "pass_rate", "trajectories", "staleness_mean", "buffer_depth", "loss"]  # fmt: skip
    _write_csv(path / "steps.csv", step_columns, steps)
    _write_csv(path / "buffer.csv", ["mode", "time", "depth"], depth)
    summary: dict[str, Any] = {
        "run_id": run_id, "gym": gym, "gym_workers": workers, "modes": figures,
        "spec": {"gym": gym, "gym_options": {}, "modes": list(modes), "steps": 4, "policy": "replay",
                 "profile": profile or "zero", "gym_workers": None, "batch_groups": 2, "group_size": 2,
                 "max_staleness": 1, "seed": 0},
        "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False},
        "hardware": {"cpu": "Test CPU", "cores": 2, "memory_gb": 8.0, "platform": "Linux", "python": "3.11",
                     "accelerators": []},
        "tools": {"gym": gym, "version": "0.1", "heavygym": "0.1.0", "torch": "2.13.0"},
        "emulated": profile is not None,
        "policy": {"policy": "replay" if profile else "tiny"},
        "profile": {"name": profile, "description": "a profile for tests", "sources": {"generate": "made up"}}
        if profile else None,
    }  # fmt: skip
    if bias:
        summary["spec"]["oversample"] = 2
        summary["bias"] = {mode: AUDITS["pooled"][mode] for mode in modes}
    if {"sync", "async"} <= set(modes):
        summary["comparison"] = {
            "speedup": speedup, "ideal_speedup": speedup * 1.25, "achieved_over_ideal": 0.8,
            "trainer_idle_ratio_sync": figures["sync"]["trainer_idle_ratio"],
            "trainer_idle_ratio_async": figures["async"]["trainer_idle_ratio"],
        }  # fmt: skip
    (path / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return path


def _audit(ranges: list[tuple[float, float]], decided: int, trained: list[int], in_flight: int,
           reward_dropped: float | None) -> dict[str, Any]:
    """A bias audit as trainer/bias.py writes it: quartiles fastest first, one error among the fates."""
    quartiles = [{"gym_s_min": lo, "gym_s_max": hi, "decided": decided, "trained": t, "acceptance": t / decided}
                 for (lo, hi), t in zip(ranges, trained)]  # fmt: skip
    dropped = 4 * decided - sum(trained)
    return {
        "fates": {"trained": sum(trained), "dropped_stale": dropped, "errored": 1, "in_flight": in_flight},
        "quartiles": quartiles, "reward_trained": 0.5, "reward_dropped": reward_dropped,
        "slow_fast_acceptance": trained[-1] / trained[0], "gym_s_dropped_share": 0.125 if dropped else 0.0,
    }  # fmt: skip


RANGES = [(0.004, 0.05), (0.05, 0.2), (0.2, 0.9), (0.9, 4.25)]
AUDITS = {  # the first repeat's, and pooled over the repeats: different, to tell which one is shown
    "first": {"sync": _audit(RANGES, 3, [3, 3, 3, 3], 4, None), "async": _audit(RANGES, 3, [3, 3, 2, 1], 4, 0.25)},
    "pooled": {"sync": _audit(RANGES, 6, [6, 6, 6, 6], 8, None), "async": _audit(RANGES, 6, [6, 6, 4, 3], 8, 0.25)},
}


def _mode_figures(
    mode: str, step_time: float, wait: float, actor: float, update: float, errored: int
) -> dict[str, Any]:
    return {
        "mode": mode, "config": {"mode": mode, "max_staleness": 1, "batch_groups": 2, "group_size": 2},
        "steps": 4, "measured_steps": 3, "wall_s": 4 * step_time, "step_time_mean": step_time,
        "step_time_std": 0.0, "train_wait_mean": wait, "actor_train_mean": actor, "update_weights_mean": update,
        "train_time_mean": actor + update, "trainer_idle_ratio": wait / step_time, "rollout_idle_ratio": 0.8,
        "gym_utilisation": 0.2, "samples_per_s": 4 / step_time, "reward_mean": 0.45, "pass_rate": 0.45,
        "staleness_mean": 0.0 if mode == "sync" else 1.0,
        "staleness_histogram": {"0": 12} if mode == "sync" else {"1": 12},
        "accounting": {"generated": 16 + errored, "trained": 12, "dropped_stale": 0, "errored": errored,
                       "in_flight": 4, "balanced": True},
        "ideal_step_time": actor + update, "oscillation": "training-bound: rollout keeps ahead of training",
        "placement": "disaggregated", "accelerator_wait_mean": 0.0, "warmup_step_time": step_time,
        "gym_utilisation_by_node": {"local": {"workers": 2.0, "busy_s": 0.4 * 3 * step_time, "utilisation": 0.2}},
        "stage_per_step": {"generate": 0.2 * step_time, "gym": 0.1 * step_time, "train": actor + update},
        "rollout_train_rate_ratio": 0.2 * step_time / (actor + update), "step_time_lag1_autocorrelation": None,
    }  # fmt: skip


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def test_report_writes_every_figure_and_embeds_it(tmp_path):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy")
    page = write_report(run_dir).read_text()
    for spec in FIGURES:
        png = (run_dir / "figures" / f"{spec.name}.png").read_bytes()
        assert png.startswith(PNG_SIGNATURE) and len(png) > 5000, spec.name
        # the page is self-contained: each figure is embedded, byte for byte the PNG beside it
        assert f'src="data:image/png;base64,{base64.b64encode(png).decode()}"' in page, spec.name
        assert spec.title in page
    assert page.count("<img ") == len(FIGURES)
    assert "emulated (profile fake-h100)" in page
    assert "1.50x</b> faster" in page and "0123456789abcdef" in page
    assert not re.search(r'(src|href)="?https?:', page), "the page must work offline"


def test_the_timeline_starts_where_the_warm_up_step_ended(tmp_path):
    from harness.figures import timeline

    run = load_run(make_run(tmp_path, "20260101T000000Z-toy"))  # sync steps of 4 s, end at 4, 8, 12, 16
    fig = timeline(run)
    sync, async_ = fig.axes[:2]
    # the warm-up step (0 to 4 s in sync) is cut: 12 measured seconds fill the axis, not 16
    assert sync.get_xlim() == async_.get_xlim() == pytest.approx((0.0, 12 * 1.01))
    assert "warm-up step cut" in async_.get_xlabel()
    # each mode is shifted by its own warm-up: async's first step ended at 4 / 1.5 s, now at 0
    ends = sorted(line.get_xdata()[0] for line in async_.get_lines())
    assert ends == pytest.approx([0.0, 4 / 1.5, 8 / 1.5, 12 / 1.5])
    assert "warm-up step (the first, in no mean) is cut" in " ".join(spec.caption for spec in FIGURES)


def test_report_is_byte_identical_when_regenerated(tmp_path):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy")
    first = {p.name: p.read_bytes() for p in [write_report(run_dir), *(run_dir / "figures").iterdir()]}
    second = {p.name: p.read_bytes() for p in [write_report(run_dir), *(run_dir / "figures").iterdir()]}
    assert first == second and len(first) == len(FIGURES) + 1


def test_measured_single_mode_run_has_no_emulated_label(tmp_path):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy", modes=("async",), profile=None)
    page = write_report(run_dir).read_text()
    assert "emulated" not in page and "One mode only" in page
    assert len(list((run_dir / "figures").glob("*.png"))) == len(FIGURES)


def test_partial_run_is_a_clear_error(tmp_path):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy")
    (run_dir / "timeline.jsonl").unlink()
    with pytest.raises(RunDirError, match="timeline.jsonl is missing"):
        load_run(run_dir)
    (run_dir / "summary.json").write_text('{"run_id": ')
    with pytest.raises(RunDirError, match="unreadable JSON"):
        load_run(run_dir)
    with pytest.raises(RunDirError, match="no run 'nope'"):
        find_run("nope", tmp_path)
    assert find_run("20260101T000000Z-toy", tmp_path) == run_dir


def test_report_command(tmp_path):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy")
    out = harness("report", run_dir.name, "--results", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert (run_dir / REPORT).is_file()
    (run_dir / "steps.csv").write_text("mode,step\nsync,0\n")
    out = harness("report", str(run_dir), env={"COLUMNS": "400"})  # one line, unwrapped
    assert out.returncode == 2 and "steps.csv: no column end, step_time" in out.stderr
    assert "Traceback" not in out.stderr


def test_service_percentiles_interpolate_between_ranks():
    stats = service_stats([float(x) for x in range(1, 101)])
    assert stats is not None
    assert (stats.count, stats.p50, stats.max) == (100, 50.5, 100.0)
    assert stats.p95 == pytest.approx(95.05) and stats.p99 == pytest.approx(99.01)
    assert service_stats([]) is None


def test_steps_csv_keeps_the_learners_stats(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from harness.record import STAT_COLUMNS, write_steps
    from harness.rundir import STEP_FIELDS
    from trainer.pipeline import StepRecord

    def step(n: int, stats: dict[str, float]) -> StepRecord:
        return StepRecord(n, 1.0 + n, 1.0, 0.5, 0.3, 0.1, 0.5, 0.25, 8, 0.0, 0, stats)

    learned = {"loss": -0.12, "clip_fraction": 0.03, "approx_kl": 0.001, "optimizer_steps": 4.0}
    write_steps(tmp_path / "steps.csv", "sync", SimpleNamespace(steps=[step(0, learned)]))
    write_steps(tmp_path / "steps.csv", "async", SimpleNamespace(steps=[step(0, {})]))  # replay: no stats
    rows = list(csv.DictReader((tmp_path / "steps.csv").open()))
    assert list(rows[0]) == ["mode", *STEP_FIELDS, *STAT_COLUMNS]
    assert (rows[0]["clip_fraction"], rows[0]["optimizer_steps"], rows[0]["groups_zero_advantage"]) == ("0.03", "4.0", "")
    assert all(rows[1][k] == "" for k in STAT_COLUMNS)


def _bias_table_row(label: str, *values: str) -> str:
    return f"<tr><td>{label}</td>" + "".join(f'<td class="num">{v}</td>' for v in values) + "</tr>"


def test_report_shows_the_slow_sample_bias_pooled_over_repeats(tmp_path):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy", bias=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["repeats"] = [{"repeat": r, "order": list(reversed(summary["modes"])) if r % 2 == 0 else list(summary["modes"]),
                           "modes": summary["modes"]} for r in (1, 2)]  # fmt: skip
    summary["control"] = {"gym": "instant", "modes": {}, "bias": {"async": AUDITS["pooled"]["sync"]}}
    predicted = summary["bias"]["async"]  # with the cost predictions of trainer/rules/cost.py
    predicted["quartiles"][3].update(predicted=6, predicted_gym_s_mean=3.0, measured_gym_s_mean=2.5)
    predicted["cost_rank_correlation"] = 0.8
    (run_dir / "summary.json").write_text(json.dumps(summary))
    page = write_report(run_dir).read_text()

    assert "over-sampling 2 groups" in page and "Pooled over the 2 repeats of each mode." in page
    # the pooled audit (async's slowest quartile trained 3 of 6), not the first repeat's (1 of 3)
    assert _bias_table_row("slowest / fastest acceptance", "1.00", "0.50") in page
    assert _bias_table_row("mean reward, dropped stale", "-", "0.250") in page
    assert _bias_table_row("gym seconds spent on dropped-stale (wasted)", "0.0%", "12.5%") in page
    assert _bias_table_row("trajectories dropped stale", "0", "5") in page
    assert _bias_table_row("trajectories errored", "1", "1") in page
    assert ('<tr><td>async</td><td>Q4</td><td>900 ms - 4.25 s</td><td class="num">6</td><td class="num">3</td>'
            '<td class="num">50%</td><td class="num">3.00 s</td><td class="num">2.50 s</td></tr>') in page  # fmt: skip
    assert _bias_table_row("predicted / measured gym time, rank correlation", "-", "0.80") in page
    assert '<td class="num">67%</td><td class="num">-</td><td class="num">-</td></tr>' in page  # Q3: no prediction
    assert page.count("<tr><td>async</td><td>Q") == 4 and "<tr><td>sync</td><td>Q1</td><td>4.0 ms - 50 ms</td>" in page
    # beside the control's: the same configuration with an instant gym
    assert _bias_table_row("slowest / fastest acceptance, async (pooled)", "0.50", "1.00") in page

    # the figure draws the audit: bars, not the "not recorded" note of a run from before it
    old = make_run(tmp_path, "20260102T000000Z-toy")
    write_report(old)
    bars = (run_dir / "figures" / "slow_sample_bias.png").read_bytes()
    assert bars != (old / "figures" / "slow_sample_bias.png").read_bytes()
    assert f"data:image/png;base64,{base64.b64encode(bars).decode()}" in page


@pytest.mark.parametrize("recorded", ["absent", "none"])
def test_run_without_a_bias_audit_shows_dashes(tmp_path, recorded):
    """absent: a run from before the audit; none: a mode whose summary says it kept no fates."""
    run_dir = make_run(tmp_path, "20260101T000000Z-toy")
    if recorded == "none":
        summary = json.loads((run_dir / "summary.json").read_text())
        summary["bias"] = {mode: None for mode in summary["modes"]}
        for figures in summary["modes"].values():
            figures["bias"] = None
        (run_dir / "summary.json").write_text(json.dumps(summary))
    page = write_report(run_dir).read_text()
    assert "over-sampling -," in page
    for label in ("slowest / fastest acceptance", "mean reward, trained", "trajectories in flight"):
        assert _bias_table_row(label, "-", "-") in page, label
    for mode in ("sync", "async"):
        assert f"<tr><td>{mode}</td>" + '<td class="num">-</td>' * 7 + "</tr>" in page


def test_a_mode_with_fewer_than_four_decided_trajectories_has_no_quartiles(tmp_path):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy", bias=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    few = {**AUDITS["pooled"]["async"], "quartiles": [], "slow_fast_acceptance": None}
    summary["bias"]["async"] = few
    (run_dir / "summary.json").write_text(json.dumps(summary))
    page = write_report(run_dir).read_text()
    assert _bias_table_row("slowest / fastest acceptance", "1.00", "-") in page
    assert "<tr><td>async</td>" + '<td class="num">-</td>' * 7 + "</tr>" in page
    assert page.count("<tr><td>sync</td><td>Q") == 4


@pytest.mark.parametrize("where", ["pooled", "mode"])
def test_a_malformed_bias_audit_is_a_clear_error(tmp_path, where):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy", bias=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    broken = {**AUDITS["first"]["async"], "quartiles": AUDITS["first"]["async"]["quartiles"][:3]}
    if where == "pooled":
        summary["bias"]["async"] = broken
        message = "bias of async is not a bias audit"
    else:
        summary["modes"]["async"]["bias"] = broken
        message = "mode async's bias is not a bias audit"
    (run_dir / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(RunDirError, match=message):
        load_run(run_dir)
