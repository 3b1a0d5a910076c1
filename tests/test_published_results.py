"""Published results stay published: the tracked results/ is written only on purpose
(scripts/publish-results.sh, --results results), and its leaderboard is what the code writes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.leaderboard import CSV, INDEX, MARKDOWN, publish
from harness.outputs import PUBLISHED, RESULTS

ROOT = Path(__file__).resolve().parent.parent
HARNESS = Path(sys.executable).parent / "harness"


def test_the_committed_leaderboard_is_what_the_code_at_head_writes(tmp_path):
    """All three files, and the README's copy of the main table."""
    results = tmp_path / "results"
    shutil.copytree(ROOT / PUBLISHED, results)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    written = publish(results, readme_file=tmp_path / "README.md").paths
    assert [p.name for p in written] == [MARKDOWN, CSV, INDEX, "README.md"]
    for path in written:
        committed = ROOT / path.relative_to(tmp_path)
        assert path.read_bytes() == committed.read_bytes(), (
            f"{path.relative_to(tmp_path)} is stale: regenerate it with "
            "`harness leaderboard --results results --readme README.md`")


@pytest.mark.slow
def test_a_smoke_run_and_the_leaderboard_leave_a_fresh_clone_clean(tmp_path):
    """What a new user does first: a short benchmark, then the leaderboard, on a fresh clone."""
    clone = tmp_path / "heavygym"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)

    def harness(*args: str) -> None:
        done = subprocess.run([str(HARNESS), *args], cwd=clone, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr

    harness("benchmark", "--gym", "math", "--steps", "2", "--batch", "1", "--group", "2", "--gym-workers", "1")
    harness("leaderboard")
    assert len(list((clone / RESULTS / "runs").iterdir())) == 1  # the run is kept, beside the clone's results/
    assert (clone / RESULTS / MARKDOWN).is_file()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert status.stdout == "", status.stdout
