"""Every harness command meets a bad path, a bad dataset or a bad value with one line on stderr
that names it and the fix, exit code 2, no traceback, and no run directory left behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import harness
from in_process import harness_here
from test_report import make_run

from harness.errors import FAILED

QUICK = ("--steps", "2", "--batch", "1", "--group", "2", "--profile", "zero")


def one_error_line(out: subprocess.CompletedProcess[str], *names: str) -> str:
    """The command failed with exit code 2 and one `error:` line naming every one of `names`."""
    assert out.returncode == FAILED, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def benchmark(results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return harness("benchmark", "--gym", "math", *QUICK, "--results", str(results), *args)


@contextlib.contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A small file system of its own at `where` (root only), unmounted afterwards."""
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corrupt parquet file, one with the wrong columns, and a directory named like one."""
    root = tmp_path_factory.mktemp("datasets")
    (root / "corrupt.parquet").write_bytes(b"PAR1 this is not a parquet file")
    pq.write_table(pa.table({"question": ["1+1"], "answer": ["2"]}), root / "columns.parquet")
    (root / "dir.parquet").mkdir()
    return root


@pytest.mark.parametrize(
    "name, why",
    [
        ("missing.parquet", "no dataset at"),
        ("dir.parquet", "is not a dataset: it holds no dataset_dict.json"),
        ("corrupt.parquet", "Parquet magic bytes not found"),
        ("columns.parquet", "found columns answer, question; needed"),
    ],
)
def test_a_bad_dataset_is_one_line_and_writes_no_run(tmp_path, datasets, name, why):
    results = tmp_path / "results"
    source = datasets / name
    line = one_error_line(benchmark(results, "-o", f"source={source}"), str(source), why, "fix the file")
    assert "could not be loaded" in line
    assert not results.exists(), "nothing is written before the gym's tasks have loaded"


def test_gyms_check_and_profile_load_the_dataset_first(tmp_path, datasets):
    source = datasets / "corrupt.parquet"
    one_error_line(harness("gyms", "check", "math", "-o", f"source={source}"), str(source))
    out = harness("gyms", "profile", "math", "-o", f"source={source}", "--results", str(tmp_path / "r"))
    one_error_line(out, str(source))
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "args, says",
    [
        (["--policy", "gpt"], "unknown policy 'gpt'"),
        (["--profile", "b200"], "unknown hardware profile 'b200'"),
        (["--gym", "maht"], "no gym named 'maht'"),
        (["--executor", "warp"], "unknown executor 'warp'"),
        (["--sandbox", "dockr"], "--sandbox 'dockr': use bwrap, docker, process"),
    ],
)
def test_an_unknown_value_is_one_line_and_writes_no_run(tmp_path, args, says):
    results = tmp_path / "results"
    one_error_line(benchmark(results, *args), says)
    assert not results.exists()


def test_results_that_is_a_file_is_named(tmp_path):
    file = tmp_path / "results.txt"
    file.write_text("not a directory\n")
    for results in (file, file / "below"):
        one_error_line(benchmark(results), f"{file}: not a directory", "pass a directory")
    assert file.read_text() == "not a directory\n"


def test_read_only_results_is_refused_before_the_run(tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=1m") as results:
        out = benchmark(results)
        one_error_line(out, f"cannot create {results / 'runs'}: {results} refuses new files (Read-only file system)",
                       "pass --results DIR, a writable directory")  # fmt: skip
        assert "step   1/2" not in out.stdout, "refused before the first step"


def test_results_that_cannot_be_made_names_itself_not_its_parent(tmp_path):
    """/proc takes no new file, even from root: the line names the directory the user gave."""
    line = one_error_line(benchmark(Path("/proc/heavygym")))
    assert line == ("error: cannot create /proc/heavygym: /proc refuses new files (No such file or directory); "
                    "pass --results DIR, a writable directory")  # fmt: skip
    line = one_error_line(harness("gyms", "profile", "math", "--out", "/proc/heavygym/card.json"))
    assert line.startswith("error: cannot create /proc/heavygym: ") and line.endswith("pass --out FILE in a writable directory")


def test_a_full_disk_is_refused_before_the_run(tmp_path):
    with tmpfs(tmp_path / "small", "size=64k") as results:
        out = benchmark(results)
        one_error_line(out, f"{results}: only", "MB free", "free space on that disk")
        assert list(results.iterdir()) == [], "the probe leaves nothing behind"


def test_a_disk_that_fills_while_writing_names_the_file(tmp_path):
    """/dev/full fails every write with ENOSPC, as a disk that fills up during the run would."""
    run_dir = make_run(tmp_path, "20260101T000000Z-toy")
    (run_dir / "report.html").symlink_to("/dev/full")
    out = harness("report", str(run_dir))
    one_error_line(out, f"{run_dir / 'report.html'}: No space left on device", "free space on that disk")

    (tmp_path / "leaderboard.md").symlink_to("/dev/full")
    (run_dir / "report.html").unlink()
    out = harness("leaderboard", "--results", str(tmp_path))
    one_error_line(out, f"{tmp_path / 'leaderboard.md'}: No space left on device")


def test_outputs_below_a_file_are_refused_before_the_work(tmp_path):
    file = tmp_path / "file"
    file.write_text("")
    one_error_line(harness("calibrate", "--out", str(file / "profile.json")), f"{file}: not a directory")
    one_error_line(harness("gyms", "profile", "math", "--out", str(file / "card.json")), f"{file}: not a directory")
    one_error_line(harness("report", "x", "--results", str(file)), "no run 'x'")


def test_tiny_model_writes_a_model_directory_and_refuses_a_used_one(tmp_path):
    out = harness("tiny-model", str(tmp_path / "tiny"))
    assert out.returncode == 0, out.stderr
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in (tmp_path / "tiny").iterdir()}
    one_error_line(harness("tiny-model", str(tmp_path / "tiny")), f"{tmp_path / 'tiny'} exists and is not empty")
    one_error_line(harness("tiny-model", str(tmp_path / "big"), "--shape", "qwen3-40b"),
                   "unknown shape 'qwen3-40b'; known: qwen3-4b")


@pytest.mark.parametrize("command", [["benchmark"], ["gyms", "profile"], [], ["gyms"]])
def test_help_wraps_at_80_columns_and_cuts_nothing(command):
    from typer.testing import CliRunner

    from harness.cli import app

    out = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert "…" not in out.output
    assert max(len(line) for line in out.output.splitlines()) <= 80
    whole = " ".join(out.output.split())  # every sentence in full, wrapped over lines
    expected = {
        "benchmark": "Seed of every random choice the command makes (task order, sampled answers, initial weights, "
                     "simulated draws): the same seed repeats a run.",
        "gyms profile": "Card path (default: RESULTS/cards/NAME.json, or RESULTS/cards/NAME-KEY=VALUE.json with gym "
                        "options).",
        "": "Serve a gym as an OpenEnv environment (HTTP and WebSocket reset/step/state), each step checked in the "
            "gym pool's sandboxes, until Ctrl-C.",
        "gyms": "Step one episode of TASK with each answer in turn, in a real pool worker (sandbox, limits and "
                "timeouts as in training), and show each step's outcome, reward, stage, feedback and info.",
    }[" ".join(command)]  # fmt: skip
    assert expected in whole


def test_serve_without_the_openenv_extra_names_the_install(monkeypatch, capsys):
    """The openenv extra is optional: without it, serve is one line with the install, not a bug report."""
    for module in ("openenv", "openenv.core"):
        monkeypatch.setitem(sys.modules, module, None)  # an import of it fails, as where it is not installed
    code, out, err = harness_here(monkeypatch, capsys, "serve", "math", "--port", "0")
    assert code == FAILED and "Traceback" not in out + err
    assert err.strip() == ("error: harness serve needs OpenEnv, which is not installed: install the openenv extra: "
                           "HEAVYGYM_EXTRAS=openenv make setup, or pip install -e '.[openenv]'")  # fmt: skip


def test_the_cli_imports_no_torch():
    """Every gym pool worker that `harness` spawns imports the command line again (multiprocessing's
    spawn re-imports the parent's main module): with torch, each worker would take about 200 MB and
    seconds of a core to start, which 160 workers (docs/benchmarks.md, replay-latency) do not have."""
    code = "import sys, harness.cli; print(sorted(m for m in ('torch', 'numpy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
