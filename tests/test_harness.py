"""`harness benchmark` and `harness calibrate` as a user runs them."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import harness, with_path
from gated_gym import OPEN

from trainer.policies.profiles import load_profile

SUMMARY_FIGURES = [
    "step_time_mean", "step_time_std", "train_wait_mean", "actor_train_mean", "update_weights_mean",
    "trainer_idle_ratio", "rollout_idle_ratio", "gym_utilisation", "samples_per_s", "reward_mean",
    "staleness_histogram", "accounting", "ideal_step_time", "rollout_train_rate_ratio",
    "step_time_lag1_autocorrelation", "oscillation",
]  # fmt: skip


@pytest.mark.slow
def test_benchmark_writes_a_complete_run_record(tmp_path):
    out = harness("benchmark", "--gym", "math", "--steps", "3", "--batch", "2", "--group", "2",
                  "--results", str(tmp_path), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    run_dir = tmp_path / "runs" / summary["run_id"]
    assert json.loads((run_dir / "summary.json").read_text()) == summary
    assert summary["emulated"] is True and summary["profile"]["name"] == "h100-qwen3-4b"
    assert summary["placement"] == summary["policy"]["placement"] == "colocated"  # the default
    assert summary["spec"]["placement"] is None
    assert summary["git"]["commit"] and summary["hardware"]["cores"] >= 1 and summary["tools"]["math-verify"]
    for mode in ("sync", "async"):
        figures = summary["modes"][mode]
        assert set(SUMMARY_FIGURES) <= set(figures), mode
        # lag-1 autocorrelation needs three measured steps; every other figure is always there
        assert all(figures[k] is not None for k in SUMMARY_FIGURES if k != "step_time_lag1_autocorrelation")
        assert figures["accounting"]["balanced"] is True
        assert figures["measured_steps"] == 2
        assert figures["placement"] == "colocated"
    assert set(summary["comparison"]) >= {"speedup", "ideal_speedup", "achieved_over_ideal"}
    steps = list(csv.DictReader((run_dir / "steps.csv").open()))
    assert [r["mode"] for r in steps] == ["sync"] * 3 + ["async"] * 3
    kinds = {json.loads(line)["kind"] for line in (run_dir / "timeline.jsonl").open()}
    assert kinds >= {"train_wait", "actor_train", "update_weights", "generate", "gym_step"}
    assert (run_dir / "buffer.csv").read_text().startswith("mode,time,depth")
    # the prediction for the default target node, from the planner and the simulator (tests/test_predict.py)
    predicted = summary["predicted"]
    cluster = predicted["inputs"]["cluster"]
    assert (cluster["accelerators_per_node"], cluster["cores_per_node"], cluster["nodes"]) == (8, 192, 1)
    assert cluster["placement"] == "colocated" and 1 <= predicted["plan"]["workers_per_node"] <= 192
    assert predicted["trust"]["replay"]["speedup"]["measured"] == summary["comparison"]["speedup"]
    # two measured steps are no speedup: the prediction says not to trust it, and why
    assert predicted["trust"]["verdict"] == "do not trust"
    assert "the run measured 2 step(s), fewer than 3" in predicted["trust"]["misses"]
    assert "Predicted for the target cluster" in (run_dir / "report.html").read_text()


def test_benchmark_table_names_the_emulation(tmp_path):
    # both modes: a second mode's gym steps are never warm-up, so the run's cost card always has some
    out = harness("benchmark", "--gym", "math", "--steps", "2", "--batch", "1", "--group", "2",
                  "--profile", "zero", "--placement", "disaggregated", "--results", str(tmp_path),
                  "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    # the gym workers' start-up (a Lean gym's warm checkers: most of a minute) is said on stderr, --json or not
    started = rf"^starting {summary['gym_workers']} gym workers .*\.\.\.\ngym workers up after \d+ s$"
    assert re.search(started, out.stderr, re.M), out.stderr
    assert summary["placement"] == summary["spec"]["placement"] == "disaggregated"
    assert summary["modes"]["sync"]["placement"] == summary["modes"]["async"]["placement"] == "disaggregated"
    no_gpu = {"measured": False, "reason": "not measured (no GPU)"}  # the replay policy names no CUDA device
    assert summary["modes"]["sync"]["gpu"] == summary["modes"]["async"]["gpu"] == no_gpu
    out = harness("benchmark", "--gym", "math", "--steps", "2", "--batch", "1", "--group", "2",
                  "--profile", "zero", "--results", str(tmp_path), env={"COLUMNS": "200"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "emulated: zero, colocated" in out.stdout and "trainer idle ratio" in out.stdout
    assert "placement colocated: one accelerator pool time-shares generation and training" in " ".join(out.stdout.split())
    assert "avg accelerator_wait" in out.stdout
    assert "GPU-measured idle (NVML): not measured (no GPU)" in out.stdout


def test_answers_the_gym_raised_on_are_fails_counted_in_the_summary_and_warned_about(tmp_path):
    args = ("benchmark", "--gym", "toy_gyms:RaisingGym", "--steps", "3", "--batch", "2", "--group", "4",
            "--profile", "zero", "--results", str(tmp_path))  # fmt: skip
    out = harness(*args, "--json", env=with_path())
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    pool = summary["gym_pool"]
    assert pool["gym_exceptions"] > 0 and pool["errors"] == 0 and pool["calls"] >= pool["gym_exceptions"]
    assert all(m["accounting"]["errored"] == 0 for m in summary["modes"].values())  # fails, kept in the loss
    shown = harness(*args, env={**with_path(), "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "warning: the gym raised on" in shown.stdout and "they count as fails" in shown.stdout


def test_the_improvement_column_prints_every_change_one_way():
    from harness.catalogue import BY_KEY
    from harness.console import _improvement

    idle, samples = BY_KEY["trainer_idle_ratio"], BY_KEY["samples_per_s"]
    # 87x lower and 400x lower read alike: a share of the first mode's value, never a ratio nor "to ~0"
    assert _improvement(idle, [0.5, 0.5 / 87]) == ["98.9% lower"]
    assert _improvement(idle, [0.4, 0.001]) == ["99.8% lower"]
    assert _improvement(idle, [0.4, 0.0]) == ["100.0% lower"]
    assert _improvement(idle, [0.2, 0.3]) == ["50.0% higher (worse)"]
    assert _improvement(samples, [10.0, 16.2]) == ["62.0% higher"]
    assert _improvement(samples, [0.0, 1.0]) == ["-"] and _improvement(idle, [0.3, None]) == ["-"]
    assert _improvement(idle, [0.3]) == []


def test_benchmark_bad_input_is_one_clear_line(tmp_path):
    for args, message in [
        (["--gym", "maht"], "Did you mean 'math'"),
        (["--gym", "math", "--profile", "b200"], "unknown hardware profile"),
        (["--gym", "math", "--policy", "gpt"], "unknown policy"),
        (["--gym", "math", "--mode", "sideways"], "use both, sync or async"),
        (["--gym", "math", "--placement", "sideways"], "use colocated or disaggregated"),
        (["--gym", "math", "--schedule", "lifo"], "use fifo or cost-aware"),
        (["--gym", "math", "--card", str(tmp_path / "none.json")], "no cost card at"),
        (["--gym", "math", "--policy", "tiny", "--placement", "colocated"], "placement is an option of the replay"),
        (["--gym", "math", "--gym-workers", "0"], "Invalid value for '--gym-workers'"),
        (["--gym", "math", "-o", "size=many"], "math gym option size='many' must be a whole number"),
    ]:
        out = harness("benchmark", *args, "--results", str(tmp_path))
        assert out.returncode != 0
        assert message in out.stdout + out.stderr
        assert "Traceback" not in out.stdout + out.stderr


def interrupt_benchmark(results: Path, gate: Path, free: int, when: str, sigint: str) -> tuple[int, str]:
    """Ctrl-C a real `harness benchmark` while it is held at `gate` after `free` gym steps, as
    soon as it prints `when`; its exit code and output. The run cannot get past the gate until
    the signal is sent, so the signal always lands in the mode under test. `sigint` "default"
    starts it with SIGINT at its default, "ignored" as a non-interactive shell starts a
    background job (`make test &`, a CI runner): with SIGINT ignored."""
    gate.mkdir()
    exe = Path(sys.executable).parent / "harness"
    args = ["benchmark", "--gym", "gated_gym:GatedGym", "-o", f"gate={gate}", "-o", f"free={free}", "--steps", "4",
            "--batch", "1", "--group", "2", "--profile", "zero", "--results", str(results)]  # fmt: skip
    disposition = signal.SIG_IGN if sigint == "ignored" else signal.SIG_DFL
    env = {**os.environ, **with_path(), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    with subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, disposition)) as proc:  # fmt: skip
        seen = ""
        for line in proc.stdout:  # type: ignore[union-attr]
            seen += line
            if when in line:
                proc.send_signal(signal.SIGINT)
                break
        (gate / OPEN).touch()  # the steps held at the gate finish, so the pool can close
        seen += proc.stdout.read()  # type: ignore[union-attr]
        return proc.wait(timeout=120), seen


# Sync runs 2 gym steps per optimizer step here (1 group of 2, one turn each), so 2 free steps
# hold it inside step 2; the async mode's first two groups (steps 9-12) fill its step 1.
@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_ctrl_c_keeps_the_finished_modes_and_nothing_half_done(tmp_path, sigint):
    code, out = interrupt_benchmark(tmp_path, tmp_path / "gate-sync", 2, "sync  step   1/4", sigint)
    assert code == 130 and "no mode had finished: nothing was written" in out, out
    assert not (tmp_path / "runs").exists(), "an interrupted first mode leaves no run directory"

    code, out = interrupt_benchmark(tmp_path, tmp_path / "gate-async", 12, "async step   1/4", sigint)
    assert code == 130 and "interrupted during the async mode" in out and "Traceback" not in out, out
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] == "during the async mode" and list(summary["modes"]) == ["sync"]
    assert {row["mode"] for row in csv.DictReader((run_dir / "steps.csv").open())} == {"sync"}
    published = harness("leaderboard", "--results", str(tmp_path), env={"COLUMNS": "300"})
    assert published.returncode == 0 and published.stdout.startswith("0 rows")
    assert "the run was interrupted during the async mode" in published.stderr


def test_calibrate_writes_a_profile_that_benchmark_accepts(tmp_path):
    path = tmp_path / "cpu.json"
    out = harness("calibrate", "--steps", "1", "--batch", "2", "--group", "2", "--name", "cpu-tiny", "--out", str(path))
    assert out.returncode == 0, out.stderr
    profile = load_profile(str(path))
    assert profile.name == "cpu-tiny" and profile.generate_s_per_token > 0 and profile.train_s_per_token > 0
    assert "harness calibrate" in profile.sources["measurement"]
    # one request alone: its per-token time, measured beside the batch's throughput
    assert profile.decode_s_per_token is not None and profile.decode_s_per_token > 0
    assert "one request alone" in profile.sources["measurement"]
