"""`harness leaderboard`: one row per key, the latest complete run, the same bytes every time."""

from __future__ import annotations

import csv
import json

from conftest import harness
from test_report import make_run

from harness.leaderboard import CSV, INDEX, MARKDOWN, machine, publish
from harness.leaderboard_views import README_END, README_START
from harness.report import REPORT


def md_tables(md: str) -> dict[str, list[dict[str, str]]]:
    """The Markdown's tables by the heading above them ("" for the main table): rows of cells by header."""
    tables: dict[str, list[dict[str, str]]] = {}
    heading, header = "", None
    for line in md.splitlines():
        if line.startswith("## "):
            heading, header = line[3:], None
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
                tables[heading] = []
            elif not set(cells[0]) <= {"-", ":"}:
                tables[heading].append(dict(zip(header, cells, strict=True)))
    return tables


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
    policy = "replay / fake-h100, disaggregated, **emulated**"
    config = "batch 2 x group 2, max_staleness 1, 2 gym workers; 4 steps x 1 repeat"
    assert f"| toy | {link} | {config} | {policy} | Test, 2 cores | 1.80x | 50.0% → 10.0% | 1 |" in md
    assert 'href="runs/20260102T000000Z-toy/report.html"' in page and "class=badge" in page
    assert "<script>" in page and "http" not in page.split("<script>", 1)[1]


def test_the_main_table_is_short_and_columns_empty_in_every_row_are_left_out(tmp_path):
    make_run(tmp_path, "20260101T000000Z-toy")  # no control, no GPU sampler, no bias audit
    make_run(tmp_path, "20260101T000000Z-other", gym="other", profile=None)
    publish(tmp_path)
    md, page = (tmp_path / MARKDOWN).read_text(), (tmp_path / INDEX).read_text()
    tables = md_tables(md)
    assert list(tables[""][0]) == ["gym", "run", "configuration", "policy / profile", "hardware", "speedup [95%]",
                                   "trainer idle sync → async", "repeats"]  # fmt: skip
    figures = tables["All figures"][0]
    assert "achieved/ideal" in figures and "reward async" in figures and "hardware (full)" in figures
    for empty in ("control speedup", "control idle sync", "GPU idle (NVML) async", "slow/fast acceptance async"):
        assert empty not in figures and f">{empty}<" not in page, empty
    assert [r["policy / profile"] for r in tables[""]] == ["replay", "replay / fake-h100, disaggregated, **emulated**"]
    assert len(tables["Provenance"]) == 2 and page.count("<details>") == 2
    assert [r["hardware"] for r in tables[""]] == ["Test, 2 cores"] * 2  # in full in the details
    assert figures["hardware (full)"] == "Test CPU, 2 cores, 8.0 GB" and "<dd>Test CPU, 2 cores, 8.0 GB</dd>" in page
    # the figure a row lacks stays: '-' in that row, where another row has it
    make_run(tmp_path, "20260102T000000Z-toy", modes=("async",), gym="third")
    publish(tmp_path)
    main = md_tables((tmp_path / MARKDOWN).read_text())[""]
    assert [(r["gym"], r["speedup [95%]"]) for r in main] == [("other", "1.50x"), ("third", "-"), ("toy", "1.50x")]


def test_the_hardware_cell_is_short():
    h100 = {"cpu": "Intel(R) Xeon(R) Platinum 8480+ Processor @ 2.0GHz", "cores": 224,
            "accelerators": ["NVIDIA H100 80GB HBM3"] * 8}  # fmt: skip
    assert machine(h100) == "Xeon Platinum 8480+, 224 cores, 8x H100 80GB HBM3"
    assert machine({"cpu": "AMD EPYC 7B13 64-Core Processor", "cores": 16}) == "EPYC 7B13, 16 cores"
    assert machine({}) == "?, ? cores"


def test_the_readme_gets_the_main_table_between_its_markers(tmp_path):
    results = tmp_path / "results"
    make_run(results, "20260101T000000Z-toy")
    readme = tmp_path / "README.md"
    readme.write_text(f"# project\n\n{README_START}\nan old table\n{README_END}\n\nmore text\n")
    out = harness("leaderboard", "--results", str(results), "--readme", str(readme))
    assert out.returncode == 0, out.stderr
    text = readme.read_text()
    main = md_tables((results / MARKDOWN).read_text().split("## ")[0])[""]
    assert "an old table" not in text and text.endswith(f"{README_END}\n\nmore text\n")
    assert md_tables(text)[""] == [{**r, "run": r["run"].replace("(runs/", "(results/runs/")} for r in main]

    readme.write_text("# project without the markers\n")
    out = harness("leaderboard", "--results", str(results), "--readme", str(readme))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{readme}: no leaderboard markers" in out.stderr and len(out.stderr.strip().splitlines()) == 1


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

    cells = {r["run"].split("-", 1)[1].split("]")[0]: r["slow/fast acceptance async"]
             for r in md_tables((tmp_path / MARKDOWN).read_text())["All figures"]}  # fmt: skip
    assert cells == {"toy": "0.50", "modes": "0.33", "old": "-"}
    page = (tmp_path / INDEX).read_text()
    assert "<dt>slow/fast acceptance async</dt><dd>0.50</dd>" in page
    assert "<dt>slow/fast acceptance async</dt><dd>-</dd>" in page


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


def test_a_learning_policys_row_has_a_learning_section(tmp_path):
    make_run(tmp_path, "20260101T000000Z-toy")  # replay: no learning figures, no section row
    path = make_run(tmp_path, "20260101T000000Z-math", gym="math", profile=None)
    summary = json.loads((path / "summary.json").read_text())
    summary["comparison"].update(target_reward=0.21, time_to_target_sync=300.0, time_to_target_async=200.0,
                                 learning_speedup=1.5, final_reward_sync=0.3, final_reward_async=0.28,
                                 final_reward_gap=-0.02)  # fmt: skip
    summary["intervals"] = {"learning_speedup": {"mean": 1.5, "low": 1.2, "high": 1.9, "n": 3},
                            "final_reward_gap": {"mean": -0.02, "low": -0.07, "high": 0.03, "n": 3}}  # fmt: skip
    (path / "summary.json").write_text(json.dumps(summary))
    publish(tmp_path)
    md, page = (tmp_path / MARKDOWN).read_text(), (tmp_path / INDEX).read_text()
    (row,) = md_tables(md)["Learning"]
    assert row["gym"] == "math" and row["target reward"] == "0.210"
    assert row["time to target sync → async"] == "300 s → 200 s"
    assert row["learning speedup [95%]"] == "1.50x [1.20x, 1.90x]"
    assert row["final reward sync → async"] == "0.300 → 0.280"
    assert row["final reward gap [95%]"] == "-0.020 [-0.070, 0.030] (not significant)"  # no quality cost measured
    assert 'id="learning"' in page or "id=learning" in page
    assert "learning speedup" not in md_tables(md)[""][0]  # the main table stays short
