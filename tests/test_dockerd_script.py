"""scripts/dockerd.sh: a daemon is stopped only by the invocation that started it.

Two checkouts on one machine each run `make test` (`dockerd.sh around`): the second finds the
first's daemon answering and must neither start nor stop one. Both share one DOCKERD_STATE here,
as two checkouts once shared the default pid file, which made the second's end kill the first's
daemon mid-run. The daemon is a real dockerd of this test's own (its data root, exec root, pid
file and socket under a temporary directory: DOCKERD_ROOT), so no other daemon on the machine is
touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from dockerd import REPO, unavailable

if shutil.which("dockerd") is None or os.geteuid() != 0:
    unavailable("a daemon of the test's own needs dockerd and root")

SCRIPT = str(REPO / "scripts/dockerd.sh")


def started_at(pid: int) -> str | None:
    """The process's start time (clock ticks since boot): a reused pid has another."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@pytest.fixture
def private_daemon_env():
    # A short path: the daemon's sockets (containerd's included) must fit a unix socket's 108 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="hg-dd-", dir="/tmp"))
    env = {**os.environ, "DOCKERD_ROOT": str(tmp / "root"), "DOCKER_HOST": f"unix://{tmp}/docker.sock",
           "DOCKERD_STATE": str(tmp / "state")}  # fmt: skip
    yield env, tmp
    # Only on failure is the daemon still up: stop it by the pid it wrote, if that is still it.
    pidfile = tmp / "root" / "docker.pid"
    if pidfile.exists():
        pid = int(pidfile.read_text())
        if started_at(pid) is not None and Path(f"/proc/{pid}/exe").resolve().name == "dockerd":
            os.kill(pid, signal.SIGTERM)
    shutil.rmtree(tmp, ignore_errors=True)


def test_the_second_invocation_never_stops_the_first_ones_daemon(private_daemon_env):
    env, tmp = private_daemon_env
    pidfile = tmp / "root" / "docker.pid"
    # The first invocation's command: note its daemon, run a second invocation beside it (which
    # finds the daemon answering), then check that the daemon still answers after the second ended.
    first_cmd = (
        f'echo "daemon $(cat {pidfile})"; '
        f"bash {SCRIPT} around docker version --format 'second used {{{{.Server.Version}}}}'; "
        "docker version --format 'after the second: {{.Server.Version}}' && echo survived"
    )
    done = subprocess.run(["bash", SCRIPT, "around", "bash", "-c", first_cmd], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert out.count("dockerd started") == 1, out  # the first started one; the second started none
    assert "a daemon already answers" in out and "second used" in out, out
    assert "survived" in out.split("second used", 1)[1], out  # the first's daemon outlived the second's end
    pid = int(next(line.split()[1] for line in out.splitlines() if line.startswith("daemon ")))
    assert f"dockerd (pid {pid}) stopped" in out, out  # the first stopped what it started
    assert started_at(pid) is None, "the first invocation left its daemon running"
    assert subprocess.run(["docker", "version"], env=env, capture_output=True).returncode != 0


def test_start_and_stop_keep_to_their_own_state(private_daemon_env):
    env, tmp = private_daemon_env
    first = subprocess.run(["bash", SCRIPT, "start"], env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and "dockerd started" in first.stdout, first.stdout + first.stderr
    pid = int((tmp / "root" / "docker.pid").read_text())
    # Another checkout's start and stop (a state of its own): the daemon answers, so nothing is
    # started, and its stop has nothing of its own to stop.
    other = {**env, "DOCKERD_STATE": str(tmp / "other-state")}
    assert "nothing started" in subprocess.run(["bash", SCRIPT, "start"], env=other, capture_output=True, text=True).stdout
    stopped = subprocess.run(["bash", SCRIPT, "stop"], env=other, capture_output=True, text=True)
    assert stopped.returncode == 0 and "nothing stopped" in stopped.stdout, stopped.stdout
    assert started_at(pid) is not None and subprocess.run(["docker", "version"], env=env, capture_output=True).returncode == 0
    # The owner's stop stops it.
    assert f"dockerd (pid {pid}) stopped" in subprocess.run(["bash", SCRIPT, "stop"], env=env, capture_output=True,
                                                            text=True).stdout  # fmt: skip
    assert started_at(pid) is None
