"""`harness leaderboard`: one row per key, the latest complete run, the same bytes every time."""

from __future__ import annotations

import csv
import json

from conftest import harness
from test_report import make_run

from harness.leaderboard import CSV, INDEX, MARKDOWN, publish
from harness.report import REPORT


def test_leaderboard_is_byte_identical_and_keeps_the_latest_run_per_key(tmp_path):
    make_run(tmp_path, "20260101T000000Z-toy", speedup=1.2)
    make_run(tmp_path, "20260102T000000Z-toy", speedup=1.8, errored=3)  # same key, later: shown
    make_run(tmp_path, "20260103T000000Z-toy", modes=("async",))  # same key, later, but no comparison
    make_run(tmp_path, "20260101T000000Z-other", gym="other", profile=None, workers=1)
    first = publish(tmp_path)
    files = {p.name: p.read_bytes() for p in first.paths}
    assert set(files) == {MARKDOWN, CSV, INDEX} and first.warnings == []
    assert all((tmp_path / "runs" / r.run_id / REPORT).is_file() for r in first.rows)

    again = publish(tmp_path)
    assert {p.name: p.read_bytes() for p in again.paths} == files

    rows = list(csv.DictReader(files[CSV].decode().splitlines()))
    assert [(r["gym"], r["run_id"], r["runs"]) for r in rows] == [
        ("other", "20260101T000000Z-other", "1"),
        ("toy", "20260102T000000Z-toy", "3"),
    ]
    toy = rows[1]
    assert toy["speedup"] == "1.800000" and toy["errors"] == "6" and toy["stages"] == "emulated"
    assert toy["commit"].startswith("0123456789abcdef") and len(toy["fingerprint"]) == 12
    assert "torch 2.13.0" in toy["tools"] and toy["report"] == "runs/20260102T000000Z-toy/report.html"
    assert rows[0]["stages"] == "measured"

    md, page = files[MARKDOWN].decode(), files[INDEX].decode()
    link = "[20260102T000000Z-toy](runs/20260102T000000Z-toy/report.html)"
    # a run from before the placement option names the placement it had: disaggregated
    policy = "replay / fake-h100, disaggregated"
    config = "batch 2 x group 2, max_staleness 1, 2 gym workers; 4 steps x 1 repeat"
    assert f"| toy | {link} | {config} | {policy} | **emulated** |" in md
    assert 'href="runs/20260102T000000Z-toy/report.html"' in page and "class=badge" in page
    assert "<script>" in page and "http" not in page.split("<script>", 1)[1]


def test_broken_runs_are_skipped_with_a_warning(tmp_path):
    make_run(tmp_path, "20260101T000000Z-toy")
    (tmp_path / "runs" / "20260102T000000Z-crashed").mkdir()  # no summary.json
    partial = make_run(tmp_path, "20260103T000000Z-toy")
    (partial / "timeline.jsonl").unlink()  # cannot be reported
    bad = make_run(tmp_path, "20260104T000000Z-toy")
    (bad / "summary.json").write_text("{not json")
    (tmp_path / "runs" / "notes.txt").write_text("not a run")

    out = harness("leaderboard", "--results", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    for name, why in [("crashed", "summary.json is missing"), ("20260103T000000Z-toy", "timeline.jsonl is missing"),
                      ("20260104T000000Z-toy", "unreadable JSON")]:  # fmt: skip
        assert any(name in line and why in line for line in out.stderr.splitlines()), (name, out.stderr)
    rows = list(csv.DictReader((tmp_path / CSV).read_text().splitlines()))
    assert [r["run_id"] for r in rows] == ["20260101T000000Z-toy"]


def test_no_runs_directory_is_one_clear_line(tmp_path):
    out = harness("leaderboard", "--results", str(tmp_path / "empty"))
    assert out.returncode == 2 and "harness benchmark first" in out.stderr and "Traceback" not in out.stderr


def test_leaderboard_shows_the_async_bias_and_the_over_sampling(tmp_path):
    make_run(tmp_path, "20260101T000000Z-toy", bias=True)  # pooled async figure 0.50 (first repeat's: 0.33)
    old = make_run(tmp_path, "20260101T000000Z-old", gym="old")  # from before the audit and the option
    only_modes = make_run(tmp_path, "20260101T000000Z-modes", gym="modes", bias=True)
    summary = json.loads((only_modes / "summary.json").read_text())
    del summary["bias"]  # no pooled audit: the mode's own is shown
    (only_modes / "summary.json").write_text(json.dumps(summary))
    published = publish(tmp_path)
    assert published.warnings == [] and old.is_dir()

    rows = {r["gym"]: r for r in csv.DictReader((tmp_path / CSV).read_text().splitlines())}
    assert {g: r["slow_fast_async"] for g, r in rows.items()} == {"toy": "0.500000", "modes": "0.333333", "old": ""}
    assert rows["toy"]["configuration"] == "batch 2 x group 2, max_staleness 1, 2 gym workers, oversample 2; 4 steps x 1 repeat"
    assert rows["old"]["configuration"] == "batch 2 x group 2, max_staleness 1, 2 gym workers; 4 steps x 1 repeat"

    md = (tmp_path / MARKDOWN).read_text()
    header = next(line for line in md.splitlines() if line.startswith("| gym |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    at = columns.index("slow/fast acceptance async")
    cells = {line.split(" | ")[0].lstrip("| "): [c.strip() for c in line.strip("|").split("|")][at]
             for line in md.splitlines() if line.startswith(("| toy ", "| old ", "| modes "))}  # fmt: skip
    assert cells == {"toy": "0.50", "modes": "0.33", "old": "-"}
    page = (tmp_path / INDEX).read_text()
    assert '<td class="num" data-sort="0.5">0.50</td>' in page and '<td class="num" data-sort="">-</td>' in page


def test_a_shorter_run_never_replaces_the_row_of_a_longer_one(tmp_path):
    """The key holds how much was measured: a later smoke run of the same configuration (fewer
    steps, one repeat, no control) gets a row of its own beside the published one."""
    published = make_run(tmp_path, "20260101T000000Z-toy")
    summary = json.loads((published / "summary.json").read_text())
    summary["spec"]["steps"] = 10
    summary["repeats"] = [{"repeat": r, "order": ["sync", "async"][:: 1 if r % 2 else -1], "modes": summary["modes"],
                           "comparison": summary["comparison"]} for r in (1, 2, 3)]  # fmt: skip
    summary["control"] = {"gym": "instant", "modes": summary["modes"], "comparison": summary["comparison"]}
    (published / "summary.json").write_text(json.dumps(summary))
    make_run(tmp_path, "20260102T000000Z-toy", speedup=1.1)  # later, 4 steps, once
    rows = {r["run_id"]: r for r in csv.DictReader(publish(tmp_path).paths[1].read_text().splitlines())}
    assert sorted(rows) == ["20260101T000000Z-toy", "20260102T000000Z-toy"]
    assert rows["20260101T000000Z-toy"]["configuration"].endswith("; 10 steps x 3 repeats + control")
    assert rows["20260101T000000Z-toy"]["speedup"] == "1.500000" and rows["20260102T000000Z-toy"]["speedup"] == "1.100000"
