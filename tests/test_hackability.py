"""`harness gyms attack GYM` (gyms/attacks.py, harness/hackability.py): a gym's declared attack suites
run through a real pool, counted as escapes, errors and defects, and shown on the leaderboard with
the commit they were measured at."""

from __future__ import annotations

import json
import shutil

from conftest import ROOT
from in_process import harness_here

from harness import hackability
from harness.leaderboard import publish


def test_a_suite_that_holds_exits_0_and_counts_every_attack(monkeypatch, capsys, tmp_path):
    code, out, err = harness_here(monkeypatch, capsys, "gyms", "attack", "toy_gyms:AttackedGym", "--results",
                                  str(tmp_path))  # fmt: skip
    assert code == 0, err
    assert "HELD attacked: 3 attacks tried, 0 escapes, 0 errors, 0 defects" in out
    assert "suite toy hacks: 3 attacks on toy/0" in err
    (written,) = (tmp_path / "attacks").glob("*.json")
    record = json.loads(written.read_text())
    assert record["tried"] == 3 and record["git"]["commit"]


def test_escapes_errors_and_defects_are_named_and_exit_1(monkeypatch, capsys):
    code, out, _ = harness_here(monkeypatch, capsys, "gyms", "attack", "toy_gyms:AttackedGym", "-o", "holes=2",
                                "-o", "flawed=yes", "--json")  # fmt: skip
    figure = json.loads(out)
    assert code == 1
    assert (figure["tried"], figure["escapes"], figure["errors"], figure["defects"]) == (7, 2, 1, 1)
    labels = {f["label"]: f["verdict"] for f in figure["suites"][0]["findings"]}
    assert labels == {"hole 0": "escape", "hole 1": "escape", "breaks the tool": "error",
                      "crashes the checker": "defect"}  # fmt: skip
    assert figure["suites"][0]["controls_broken"] == []  # the right answer still passes, the wrong one fails


def test_a_gym_without_suites_is_one_line(monkeypatch, capsys):
    code, _, err = harness_here(monkeypatch, capsys, "gyms", "attack", "toy_gyms:ToyGym")
    assert code == 2 and "declares no attack suites" in err and len(err.strip().splitlines()) == 1


def test_the_leaderboard_shows_clean_figures_with_their_commit(tmp_path):
    root = tmp_path / "results"
    shutil.copytree(ROOT / "tests" / "fixtures" / "results", root)
    figure = hackability.Hackability("toy", {"suite": "x"}, {"commit": "0123456789", "dirty": False}, 5, 1, 0, 0, [])
    hackability.save(root, figure)
    hackability.save(root, hackability.Hackability("dirty", {}, {"commit": "abc", "dirty": True}, 5, 0, 0, 0, []))
    publish(root)
    text = (root / "leaderboard.md").read_text()
    assert "## Reward integrity" in text and "| toy | suite=x | 5 | 1 | 0 | 0 | 0123456 |" in text
    assert "| dirty |" not in text  # a figure from a dirty tree names no code
    assert "<h2>Reward integrity</h2>" in (root / "index.html").read_text()
