"""`--sandbox bwrap|docker|process`: which sandbox a command's gym runs its candidates in.

`choose(backend, gym)` checks the choice before any pool starts and makes it the process's
default (`gyms.sandbox.use_backend`: an environment variable, so gym pool workers inherit it):

* None keeps the default: bwrap where it runs, else process (with a warning);
* docker needs a daemon and the gym's built image (`harness images build GYM`): either missing
  is one error that names the fix; the containers of dead pools are swept here too;
* anything else is a usage error.

`record()` is what the run record (summary.json's tools.sandbox) keeps: the backend, and for
docker the image with its id and digests.
"""

from __future__ import annotations

import os
from typing import Any

from gyms import docker_sandbox
from gyms.sandbox import BACKENDS, ENV_BACKEND, ENV_IMAGE, Sandbox, use_backend


class SandboxChoiceError(ValueError):
    """An unusable --sandbox: the message names the fix."""


def choose(backend: str | None, gym: str) -> None:
    if backend is None:
        return
    if backend not in BACKENDS:
        raise SandboxChoiceError(f"--sandbox {backend!r}: use {', '.join(BACKENDS)}")
    if backend != "docker":
        use_backend(backend)
        return
    from gyms import images

    try:
        image = images.image_for(gym)
    except (images.ImageError, docker_sandbox.DockerUnavailable) as exc:
        raise SandboxChoiceError(f"--sandbox docker: {exc}") from None
    docker_sandbox.sweep()
    use_backend("docker", image)


def record() -> dict[str, Any]:
    """The backend this process's sandboxes use (probing bwrap if none was chosen)."""
    backend = os.environ.get(ENV_BACKEND) or Sandbox._choose_backend("auto")
    if backend != "docker":
        return {"backend": backend}
    image = os.environ.get(ENV_IMAGE, "")
    return {"backend": "docker", **docker_sandbox.image_record(image)}
