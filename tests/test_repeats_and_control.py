"""`harness benchmark --repeats N --control`: paired ABBA repeats with 95 % intervals, the
instant-gym control, and run records that name no path of the machine that ran them."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from conftest import harness
from test_report import make_run

from harness import intervals
from harness.benchmark import mode_order
from harness.console import _comparison_line
from harness.control import PATH, InstantGym, options_for
from harness.leaderboard import CSV, publish
from harness.outputs import without_paths
from harness.report import write_report
from harness.rundir import load_summary

REPO = Path(__file__).resolve().parent.parent


def test_modes_run_in_abba_order():
    orders = [mode_order(("sync", "async"), r) for r in range(4)]
    assert orders == [("sync", "async"), ("async", "sync"), ("sync", "async"), ("async", "sync")]
    assert mode_order(("sync",), 1) == ("sync",)


def test_interval_is_students_t_over_the_repeats():
    iv = intervals.interval([1.0, 2.0, 3.0])  # mean 2, sd 1, t(2) = 4.303
    assert iv["mean"] == 2.0 and iv["n"] == 3
    assert math.isclose(iv["high"] - 2.0, 4.303 / math.sqrt(3), rel_tol=1e-9)
    assert math.isclose(2.0 - iv["low"], 4.303 / math.sqrt(3), rel_tol=1e-9)
    assert intervals.interval([1.5]) == {"mean": 1.5, "low": None, "high": None, "n": 1}
    assert intervals.t95(11) == 2.228  # between table entries: the next lower df (wider)
    assert intervals.t95(500) == 1.960


def test_an_interval_is_cut_where_the_figure_cannot_lie():
    idle = intervals.over_repeats([{"modes": {"async": {"trainer_idle_ratio": r}}} for r in (0.0, 0.002)])
    assert idle["trainer_idle_ratio_async"]["low"] == 0.0  # t(1) * sd / sqrt(2) would put it at -0.0117
    assert 0.002 < idle["trainer_idle_ratio_async"]["high"] < 1.0
    speedup = intervals.over_repeats([{"modes": {}, "comparison": {"speedup": s}} for s in (0.8, 2.0)])
    # a ratio, on the log scale: the geometric mean, and a low bound that stays above 0 (an arithmetic
    # t interval over these two would reach -5.9)
    assert math.isclose(speedup["speedup"]["mean"], math.sqrt(1.6)) and 0 < speedup["speedup"]["low"] < 0.8
    assert speedup["speedup"]["high"] > 2.0


def test_ratios_are_averaged_on_the_log_scale_and_other_figures_are_not():
    assert math.isclose(intervals.mean([2.0, 0.5], ratio=True), 1.0) and intervals.mean([2.0, 0.5]) == 1.25
    with pytest.raises(ValueError, match="must be positive"):
        intervals.interval([1.2, 0.0], ratio=True)
    block = {"repeats": [{"modes": {}, "comparison": {"speedup": 2.0, "achieved_over_ideal": 1.0, "idle_drop": 0.1}},
                         {"modes": {}, "comparison": {"speedup": 0.5, "achieved_over_ideal": 0.25, "idle_drop": 0.3}}]}  # fmt: skip
    intervals.over_block(block)
    assert math.isclose(block["comparison"]["speedup"], 1.0) and math.isclose(block["comparison"]["idle_drop"], 0.2)
    assert math.isclose(block["comparison"]["achieved_over_ideal"], 0.5)
    assert intervals.not_significant(block["intervals"]["speedup"], 1.0)
    assert intervals.not_significant({"low": -0.1, "high": 0.5}, 0.0)
    assert not intervals.not_significant({"low": 0.01, "high": 0.5}, 0.0)
    assert not intervals.not_significant({"low": None, "high": None}, 1.0)  # one repeat: nothing to test
    assert not intervals.not_significant({"low": 0.9, "high": 1.1}, None)  # a figure with no no-effect value


@pytest.mark.parametrize("low, marked", [(0.9, True), (1.05, False)])
def test_a_speedup_whose_interval_holds_one_says_so_in_every_view(tmp_path, low, marked):
    run_dir = make_run(tmp_path, "20260101T000000Z-toy", speedup=1.1)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["intervals"] = {"speedup": {"mean": 1.1, "low": low, "high": 1.3, "n": 3}}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    line = _comparison_line(load_summary(run_dir), "speedup")
    page = write_report(run_dir).read_text()
    publish(tmp_path, include_dirty=True)
    board = (tmp_path / "leaderboard.md").read_text()
    if marked:
        assert "1.10x [0.90x, 1.30x] (not significant)" in line and "[bold]" not in line
        assert "is not significant: its 95 % interval [0.90x, 1.30x] holds 1.00x" in page and "<b>1.10x</b>" not in page
        assert "| 1.10x [0.90x, 1.30x] (not significant) |" in board
    else:
        assert "[bold]1.10x [1.05x, 1.30x][/]" in line and "not significant" not in line
        assert "<b>1.10x</b>" in page and "is not significant" not in page and "| 1.10x [1.05x, 1.30x] |" in board


def test_instant_gym_labels_answers_as_the_candidates_are_labelled():
    gym = InstantGym(**options_for("math", {"size": "4"}))
    task = gym.tasks()[0]
    import random

    candidates = gym.candidates(task, random.Random(task.id))
    good = next(c for c in candidates if c.expect == "pass")
    bad = next(c for c in candidates if c.expect == "fail")
    assert gym.open(task).step(good.action).outcome.value == "pass"
    assert gym.open(task).step(bad.action).outcome.value == "fail"
    assert gym.open(task).step("an answer that is no candidate").outcome.value == "fail"
    assert gym.describe()["gym"] == "instant control of math" and PATH == "harness.control:InstantGym"
    assert gym.feedback_role == "user" and InstantGym("toy_gyms:ToolFeedbackGym").feedback_role == "tool"


def test_without_paths_keeps_names_and_urls():
    assert without_paths({"source": "verilog-eval:/data/sets/VerilogEval", "n": 3}) == {
        "source": "verilog-eval:…/VerilogEval", "n": 3}  # fmt: skip
    assert without_paths(["/a/b:/c/d", "https://example.org/x/y", "1/2 tokens/s"]) == [
        "…/b:…/d", "https://example.org/x/y", "1/2 tokens/s"]  # fmt: skip


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    root = tmp_path_factory.mktemp("results")
    out = harness("benchmark", "--gym", "math", "--steps", "2", "--batch", "1", "--group", "2",
                  "--profile", "zero", "--gym-workers", "1", "--repeats", "2", "--control",
                  "--results", str(root), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    return summary, root / "runs" / summary["run_id"]


def test_repeats_are_recorded_in_abba_order_with_intervals(repeated):
    summary, run_dir = repeated
    assert [r["order"] for r in summary["repeats"]] == [["sync", "async"], ["async", "sync"]]
    assert summary["modes"] == summary["repeats"][0]["modes"]  # the figures show the first repeat
    speedups = [r["comparison"]["speedup"] for r in summary["repeats"]]
    assert math.isclose(summary["comparison"]["speedup"], math.sqrt(speedups[0] * speedups[1]))  # geometric
    assert summary["intervals"]["speedup"]["n"] == 2
    assert summary["intervals"]["speedup"]["low"] <= summary["comparison"]["speedup"] <= (
        summary["intervals"]["speedup"]["high"])  # fmt: skip
    # The accelerator idle ratio is what the run's own timeline says: the share of the measured
    # window (after the warm-up step) in which the one pool neither generated nor trained.
    spans = [json.loads(line) for line in (run_dir / "timeline.jsonl").open()]
    steps = list(csv.DictReader((run_dir / "steps.csv").open()))
    for mode, m in summary["modes"].items():
        ends = [float(r["end"]) for r in steps if r["mode"] == mode]
        start, end = ends[0], ends[-1]
        busy = sum(max(0.0, min(s["end"], end) - max(s["start"], start)) for s in spans if s["mode"] == mode
                   and (s["kind"] == "generate" or s["kind"] in ("actor_train", "update_weights")))  # fmt: skip
        assert math.isclose(m["accelerator_idle_ratio"], 1 - busy / (end - start), abs_tol=1e-9)
    second = list(csv.DictReader((run_dir / "repeat-2" / "steps.csv").open()))
    assert [r["mode"] for r in second] == ["async"] * 2 + ["sync"] * 2


def test_control_sees_the_same_answers_with_an_instant_gym(repeated):
    summary, run_dir = repeated
    ctrl = summary["control"]
    assert ctrl["gym"] == "instant control of math" and len(ctrl["repeats"]) == 2
    assert (run_dir / "control" / "timeline.jsonl").is_file() and (run_dir / "control" / "repeat-2").is_dir()
    # Sync trains the same groups in both workloads and the replay actions are a function of the
    # seed and the request alone, so where the candidates' labels are right (harness gyms check
    # passes for math) the instant gym gives exactly the real gym's rewards.
    for r, c in zip(summary["repeats"], ctrl["repeats"]):
        assert c["modes"]["sync"]["reward_mean"] == r["modes"]["sync"]["reward_mean"]
        assert c["modes"]["sync"]["pass_rate"] == r["modes"]["sync"]["pass_rate"]
    assert "speedup" in ctrl["comparison"] and ctrl["intervals"]["speedup"]["n"] == 2
    page = (run_dir / "report.html").read_text()
    control_speedup = ctrl["intervals"]["speedup"]
    assert "Repeats and control" in page and "control: instant control of math" in page
    assert f"{control_speedup['mean']:.2f}x [{control_speedup['low']:.2f}x, {control_speedup['high']:.2f}x]" in page
    assert summary["intervals"]["gym_wait_share_sync"]["n"] == 2


def test_run_record_names_no_path_of_the_machine(repeated):
    _, run_dir = repeated
    for path in run_dir.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".csv", ".html"):
            text = path.read_text()
            assert str(REPO) not in text and str(run_dir.parent.parent) not in text, path


def test_leaderboard_leaves_out_dirty_runs_unless_asked(tmp_path):
    make_run(tmp_path, "20260101T000000Z-toy", speedup=1.2)
    dirty = make_run(tmp_path, "20260101T000000Z-other", gym="other")
    summary = json.loads((dirty / "summary.json").read_text())
    summary["git"]["dirty"] = True
    (dirty / "summary.json").write_text(json.dumps(summary))

    published = publish(tmp_path)
    assert [r.gym for r in published.rows] == ["toy"]
    assert any("left out 1 run(s) from a dirty tree" in w and "20260101T000000Z-other" in w
               and "--include-dirty" in w for w in published.warnings), published.warnings  # fmt: skip
    assert [r.gym for r in publish(tmp_path, include_dirty=True).rows] == ["other", "toy"]
    out = harness("leaderboard", "--results", str(tmp_path))
    assert out.returncode == 0 and "--include-dirty" in out.stderr


def test_leaderboard_shows_the_interval_the_control_and_the_placement(repeated, tmp_path):
    summary, run_dir = repeated
    (tmp_path / "runs").mkdir()
    copy = tmp_path / "runs" / run_dir.name
    copy.mkdir()
    for f in ("summary.json", "steps.csv", "timeline.jsonl", "buffer.csv"):
        (copy / f).write_bytes((run_dir / f).read_bytes())
    (row,) = publish(tmp_path, include_dirty=True).rows
    assert row.figures["repeats"] == 2 and row.figures["speedup"] == summary["comparison"]["speedup"]
    spread = summary["intervals"]["speedup"]
    assert (row.figures["speedup_low"], row.figures["speedup_high"]) == (spread["low"], spread["high"])
    assert row.figures["control_speedup"] == summary["control"]["comparison"]["speedup"]
    assert row.figures["gym_share_sync"] == summary["modes"]["sync"]["gym_wait_share"] is not None
    assert row.policy == "replay / zero, colocated"
    header = (tmp_path / CSV).read_text().splitlines()[0].split(",")
    assert {"speedup_low", "speedup_high", "control_speedup", "gym_share_sync", "repeats"} <= set(header)


def test_a_run_written_into_results_leaves_the_tree_clean(tmp_path):
    """The runs a session writes under results/ are outputs: the next run is still clean."""
    import subprocess

    from harness.record import git_commit

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "code.py")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "code")
    (tmp_path / "results" / "runs" / "r1").mkdir(parents=True)
    (tmp_path / "results" / "runs" / "r1" / "summary.json").write_text("{}")
    assert git_commit(tmp_path)["dirty"] is False and len(git_commit(tmp_path)["commit"]) == 40
    (tmp_path / "notes.py").write_text("y = 2\n")  # untracked code counts
    assert git_commit(tmp_path)["dirty"] is True
    (tmp_path / "notes.py").unlink()
    (tmp_path / "code.py").write_text("x = 2\n")  # so does a changed tracked file
    assert git_commit(tmp_path)["dirty"] is True
