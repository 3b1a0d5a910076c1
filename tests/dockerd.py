"""The docker extra's test set-up, shared by tests/test_docker_sandbox.py and tests/test_docker_gyms.py.

Docker is an optional extra (`HEAVYGYM_EXTRAS=docker make test`: docker.io and debootstrap).
Where CI asks for it (CI set and HEAVYGYM_EXTRAS naming docker), a missing daemon fails the
module instead of skipping it. The `daemon` fixture starts dockerd (scripts/dockerd.sh's
options) when none answers and stops the one it started; `gym_image` builds a gym's image once
(cached by its recipe's hash: tens of seconds by debootstrap the first time, nothing after).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REQUIRED = bool(os.environ.get("CI")) and "docker" in os.environ.get("HEAVYGYM_EXTRAS", "").split(",")
ENABLE = "HEAVYGYM_EXTRAS=docker make test (as root: docker.io, debootstrap, and a daemon started by the tests)"


def unavailable(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"CI asked for the docker extra, but {why}", pytrace=False)
    pytest.skip(f"{why}: {ENABLE}", allow_module_level=True)


if shutil.which("docker") is None:
    unavailable("there is no docker CLI")

from gyms import docker_sandbox, images  # noqa: E402


@pytest.fixture(scope="module")
def daemon():
    """A daemon that answers: the one running, else dockerd started here (and stopped after)."""
    if docker_sandbox.daemon_problem() is None:
        yield
        return
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        unavailable(f"no daemon answers ({docker_sandbox.daemon_problem()}) and none can be started here")
    state = Path(f"/tmp/heavygym-dockerd-test-{os.getpid()}")
    env = {**os.environ, "DOCKERD_STATE": str(state)}
    started = subprocess.run(["bash", str(REPO / "scripts/dockerd.sh"), "start"], env=env, capture_output=True, text=True)
    if started.returncode != 0:
        unavailable(f"dockerd did not start: {started.stdout}{started.stderr}")
    try:
        yield
    finally:
        subprocess.run(["bash", str(REPO / "scripts/dockerd.sh"), "stop"], env=env, capture_output=True)
        shutil.rmtree(state, ignore_errors=True)


def gym_image(gym: str) -> str:
    """Gym's toolchain image, built here if it is not (a failed build fails or skips the module)."""
    try:
        return images.build(gym, say=lambda line: None).tag
    except (images.ImageError, docker_sandbox.DockerUnavailable) as exc:
        unavailable(f"the {gym} image cannot be built: {exc}")
        raise
