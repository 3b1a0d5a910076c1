"""A task mix whose check cost differs by task (the math gym's emulated_check_s), and `harness tasks`:
each task's trained fraction and late reward per run, with intervals over its repeats."""

from __future__ import annotations

import csv
import json
import math
import statistics
import time

import pytest
from in_process import harness_here

from gyms.math.gym import MathGym
from harness.benchmark import BenchmarkSpec, run_benchmark
from harness.intervals import t95
from harness.task_figures import welch
from trainer.policies.profiles import HardwareProfile

SLOW = "add/2+"  # add/2+0, add/2+1, add/2+2: three of the nine training sums


def test_emulated_check_seconds_hold_the_check_of_the_tasks_they_name():
    gym = MathGym(source="addition", max_turns=1, emulated_check_s=f"{SLOW}:0.3,add/1+:0.1")
    by_task = {t.id: gym.open(t).emulated_s for t in gym.tasks()}
    assert by_task == {t: (0.3 if t.startswith(SLOW) else 0.1 if t.startswith("add/1+") else 0.0) for t in by_task}
    assert gym.step_timeout_s == MathGym.step_timeout_s + 0.3  # the backstop grows with the sleep
    episode = gym.open(next(t for t in gym.tasks() if t.id == "add/2+2"))
    started = time.monotonic()
    result = episode.step("\\boxed{4}")
    assert time.monotonic() - started >= 0.3
    assert result.reward == 1.0 and result.info["emulated_s"] == 0.3  # the real check's verdict, and the sleep
    fast = MathGym(source="addition", max_turns=1).open(gym.tasks()[0]).step("\\boxed{1}")
    assert fast.reward == 0.0 and "emulated_s" not in fast.info


@pytest.mark.parametrize("value,says", [
    ("add/2+", "use PREFIX:SECONDS"), (":1", "use PREFIX:SECONDS"), ("add/2+:0", "must be positive"),
    ("add/2+:x", "a number of seconds"), ("add/9+:1", "matches none of the 9 training tasks"),
])  # fmt: skip
def test_a_bad_emulated_check_is_one_line_that_names_the_fix(monkeypatch, capsys, value, says):
    code, _, err = harness_here(monkeypatch, capsys, "gyms", "check", "math", "-o", "source=addition",
                                "-o", f"emulated_check_s={value}")  # fmt: skip
    assert code == 2 and says in err and "emulated_check_s" in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory):
    """fifo and cost-aware on the mix: three slow sums among nine (real checks, emulated extra
    seconds), fast emulated stages, two repeats each, async only."""
    root = tmp_path_factory.mktemp("results")
    profile = root / "fast.json"
    HardwareProfile("fast", "fast stages", generate_s_per_token=0.02 / 512, train_s_per_token=1e-6,
                    update_weights_s=0.01, response_tokens=512).save(profile)  # fmt: skip
    runs = []
    for schedule in ("fifo", "cost-aware"):
        spec = BenchmarkSpec(gym="math", gym_options={"source": "addition", "max_turns": "1",
                                                      "emulated_check_s": f"{SLOW}:0.2"},
                             modes=("async",), steps=6, batch_groups=2, group_size=2, profile=str(profile),
                             gym_workers=2, repeats=2, schedule=schedule)  # fmt: skip
        runs.append(run_benchmark(spec, root)[1])
    return root, runs


def by_hand(run_dir, late_from):
    """Per repeat: the slow tasks' trained fraction and late reward, from the trajectories.csv files."""
    out = []
    for repeat in (run_dir, run_dir / "repeat-2"):
        rows = [r for r in csv.DictReader((repeat / "trajectories.csv").open())
                if r["mode"] == "async" and r["fate"] in ("trained", "dropped_stale") and r["task_id"].startswith(SLOW)]
        late = [float(r["reward"]) for r in rows if int(r["version"]) >= late_from]
        out.append((sum(r["fate"] == "trained" for r in rows) / len(rows), sum(late) / len(late) if late else None))
    return out


def test_harness_tasks_gives_each_runs_figures_and_the_difference_on_the_slow_tasks(mixed_runs, monkeypatch, capsys):
    root, (fifo, aware) = mixed_runs
    code, out, err = harness_here(monkeypatch, capsys, "tasks", fifo.name, aware.name, "--slow", SLOW, "--late", "3",
                                  "--results", str(root), "--json")  # fmt: skip
    assert code == 0, err
    figures = json.loads(out)
    first, second = figures["runs"]
    assert (first["schedule"], second["schedule"]) == ("fifo", "cost-aware")
    assert set(first["tasks"]) == {t.id for t in MathGym(source="addition").tasks()}
    for run_dir, fig in ((fifo, first), (aware, second)):
        per_repeat = by_hand(run_dir, late_from=6 - 3)
        assert [r["trained_fraction"] for r in fig["per_repeat"]["selected"]] == pytest.approx([p[0] for p in per_repeat])
        assert fig["selected"]["trained_fraction"]["mean"] == pytest.approx(statistics.fmean(p[0] for p in per_repeat))
        assert [r["late_reward"] for r in fig["per_repeat"]["selected"]] == [p[1] for p in per_repeat]
    # cost-aware without over-sampling drops nothing: every slow trajectory decided was trained
    assert second["selected"]["trained_fraction"]["mean"] == 1.0
    diff = figures["differences"][0]["trained_fraction"]
    assert diff["mean"] == pytest.approx(1.0 - first["selected"]["trained_fraction"]["mean"])
    code, out, err = harness_here(monkeypatch, capsys, "tasks", fifo.name, aware.name, "--slow", SLOW,
                                  "--results", str(root))  # fmt: skip
    assert code == 0, err
    assert f"{aware.name} less {fifo.name} on the slow tasks: trained fraction" in out
    assert f"slow: {SLOW}*" in out


def test_harness_tasks_refuses_what_it_cannot_count_in_one_line(mixed_runs, monkeypatch, capsys):
    root, (fifo, _) = mixed_runs
    for args, says in ((("--slow", "add/7+"), "--slow 'add/7+' matches none"), (("--mode", "sync"), "has no sync mode"),
                       ((), "no run")):  # fmt: skip
        name = "no-such-run" if says == "no run" else fifo.name
        code, _, err = harness_here(monkeypatch, capsys, "tasks", name, *args, "--results", str(root))
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_welchs_interval():
    a, b = [0.5, 0.6, 0.7], [0.9, 1.0, 1.0, 0.95]
    got = welch(a, b)
    va, vb = statistics.variance(a) / 3, statistics.variance(b) / 4
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)  # 2.6: the t quantile of 2 degrees of freedom
    assert math.floor(df) == 2
    half = t95(2) * math.sqrt(va + vb)
    assert got == pytest.approx({"mean": 0.3625, "low": 0.3625 - half, "high": 0.3625 + half})
    one = welch([0.5], [0.7])  # one value each: no spread to measure
    assert one["mean"] == pytest.approx(0.2) and one["low"] is None and one["high"] is None
