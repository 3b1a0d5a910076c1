"""Toolchain images: what a gym's commands need, as a Docker image for the `docker` sandbox.

A gym declares its image in `image.toml` beside the module that defines its class
(gyms/verilog/image.toml for `gyms.verilog.gym:VerilogGym`); a third-party gym does the same in
its own package (docs/writing-a-gym.md):

    base = "debian:bookworm-slim"   # a registry image, used when it can be pulled
    suite = "bookworm"              # the Debian suite of the debootstrap fallback
    packages = ["iverilog"]         # Debian packages the gym's sandboxed commands run

`harness images build [GYM]` builds it (`build`). The tag is `heavygym-<gym>:<hash>`, the hash
being the recipe's content (and this builder's version): an image whose tag exists is not
built again, and a changed recipe gives a new tag. Two ways, tried in order:

1. from the registry base: `docker pull BASE`, then a generated Dockerfile that installs the
   packages with apt (network needed during the build);
2. without a registry (the project's machines): `debootstrap --variant=minbase
   --include=PACKAGES SUITE DIR MIRROR` with the mirror the host's apt uses, then
   `tar -C DIR -c . | docker import - TAG`.

The image must hold `sh` and `prlimit` (util-linux, in every Debian base): the sandbox runs each
command as `prlimit ... -- COMMAND` inside the container.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gyms.docker_sandbox import DockerUnavailable, daemon_problem, docker, docker_binary, image_id

RECIPE = "image.toml"
BUILDER_VERSION = "1"  # part of every tag's hash: bump when the way images are built changes
PULL_TIMEOUT_S = 60.0


class ImageError(RuntimeError):
    """A recipe is missing or invalid, or a build failed: the message says what to do."""


@dataclass(frozen=True)
class Recipe:
    gym: str
    path: Path
    base: str
    suite: str
    packages: tuple[str, ...]
    text: str

    @property
    def tag(self) -> str:
        digest = hashlib.sha256(f"{BUILDER_VERSION}\n{self.text}".encode()).hexdigest()[:12]
        return f"heavygym-{re.sub(r'[^a-z0-9_.-]', '-', self.gym.lower())}:{digest}"


def recipe_path(gym: str) -> Path:
    """Where gym `gym` (a registered name or module:Class) declares its image."""
    from gyms.registry import load_class

    cls = load_class(gym)
    return Path(inspect.getfile(cls)).resolve().parent / RECIPE


def load(gym: str, path: Path | None = None) -> Recipe:
    path = path or recipe_path(gym)
    if not path.is_file():
        raise ImageError(f"gym {gym!r} declares no toolchain image (no {path}); see docs/writing-a-gym.md, "
                         "'A toolchain image', or run it with --sandbox bwrap")  # fmt: skip
    text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ImageError(f"{path}: {exc}") from exc
    packages = data.get("packages", [])
    if not isinstance(packages, list) or not all(isinstance(p, str) and re.fullmatch(r"[a-z0-9][a-z0-9+.-]*", p)
                                                 for p in packages):  # fmt: skip
        raise ImageError(f"{path}: packages must be a list of Debian package names")
    unknown = set(data) - {"base", "suite", "packages"}
    if unknown:
        raise ImageError(f"{path}: unknown keys {', '.join(sorted(unknown))}; the keys are base, suite, packages")
    return Recipe(gym, path, str(data.get("base", "debian:bookworm-slim")), str(data.get("suite", "bookworm")),
                  tuple(packages), text)  # fmt: skip


def gyms_with_images() -> list[str]:
    """The registered gyms that declare an image."""
    from gyms.registry import registered

    found = []
    for name in registered():
        try:
            if recipe_path(name).is_file():
                found.append(name)
        except Exception:  # a plugin that does not load declares nothing we can build
            continue
    return found


@dataclass(frozen=True)
class Built:
    tag: str
    id: str
    how: str  # "cached", "registry" or "debootstrap"
    seconds: float


def _with_daemon(gym: str) -> Recipe:
    """Gym's recipe, where a daemon answers (else `DockerUnavailable`, naming the fix)."""
    recipe = load(gym)
    problem = daemon_problem()
    if problem is not None:
        raise DockerUnavailable(problem)
    return recipe


def image_for(gym: str) -> str:
    """The tag of gym's image, which must be built: for `--sandbox docker`."""
    recipe = _with_daemon(gym)
    if image_id(recipe.tag) is None:
        raise DockerUnavailable(f"the docker image of gym {gym!r} ({recipe.tag}) is not built: run "
                                f"`harness images build {gym}` (recipe {recipe.path})")  # fmt: skip
    return recipe.tag


def build(gym: str, say=print) -> Built:  # type: ignore[no-untyped-def]
    """Build gym's image unless its tag exists; from the registry base, else by debootstrap."""
    recipe = _with_daemon(gym)
    started = time.monotonic()
    found = image_id(recipe.tag)
    if found is not None:
        return Built(recipe.tag, found, "cached", time.monotonic() - started)
    how = "registry" if _pulled(recipe.base, say) else "debootstrap"
    if how == "registry":
        _build_from_registry(recipe)
    else:
        _build_by_debootstrap(recipe, say)
    built = image_id(recipe.tag)
    if built is None:
        raise ImageError(f"the build of {recipe.tag} ended without the image")
    return Built(recipe.tag, built, how, time.monotonic() - started)


def _pulled(base: str, say) -> bool:  # type: ignore[no-untyped-def]
    if image_id(base) is not None:
        return True
    try:
        done = docker("pull", "--quiet", base, timeout=PULL_TIMEOUT_S, check=False)
    except DockerUnavailable:
        done = None
    if done is not None and done.returncode == 0:
        return True
    say(f"no registry: {base} cannot be pulled; building the base from Debian packages (debootstrap)")
    return False


def _build_from_registry(recipe: Recipe) -> None:
    install = ""
    if recipe.packages:
        install = ("RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                   f"{' '.join(recipe.packages)} && rm -rf /var/lib/apt/lists/*\n")  # fmt: skip
    dockerfile = f"FROM {recipe.base}\n{install}LABEL heavygym.recipe={recipe.tag}\n"
    with tempfile.TemporaryDirectory() as context:
        Path(context, "Dockerfile").write_text(dockerfile)
        done = subprocess.run([docker_binary(), "build", "-q", "-t", recipe.tag, context], capture_output=True,
                              text=True)  # fmt: skip
    if done.returncode != 0:
        raise ImageError(f"docker build of {recipe.tag} failed: {done.stderr.strip()[-500:]}")


def debian_mirror() -> str:
    """The Debian mirror the host's apt uses (deb822 .sources or one-line lists)."""
    found: list[str] = []
    for path in sorted(Path("/etc/apt").glob("sources.list.d/*.sources")):
        for block in path.read_text().split("\n\n"):
            fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line and not line.startswith("#"))
            uris, suites = fields.get("URIs", "").split(), fields.get("Suites", "").split()
            if uris and any(s in ("bookworm", "trixie", "bullseye", "sid") for s in suites):
                found += uris
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt").glob("sources.list.d/*.list"))]:
        if path.is_file():
            for line in path.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3 and parts[0] == "deb" and "security" not in parts[2]:
                    found.append(next(p for p in parts[1:] if "://" in p))
    debian = [u for u in found if "debian" in u and "security" not in u]
    if not debian:
        raise ImageError("no Debian mirror in /etc/apt/sources.list*: debootstrap needs one (or a registry)")
    return debian[0]


def _build_by_debootstrap(recipe: Recipe, say) -> None:  # type: ignore[no-untyped-def]
    tool = shutil.which("debootstrap") or ("/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None)
    if tool is None:
        raise ImageError("no registry and no debootstrap: install it (HEAVYGYM_EXTRAS=docker scripts/setup.sh)")
    if os.geteuid() != 0:
        raise ImageError("debootstrap needs root: run `harness images build` as root, or where a registry answers")
    mirror = debian_mirror()
    with tempfile.TemporaryDirectory(prefix="heavygym-image-") as tmp:
        root = Path(tmp, "root")
        include = ["--include=" + ",".join(recipe.packages)] if recipe.packages else []
        say(f"debootstrap {recipe.suite} from {mirror} with {', '.join(recipe.packages) or 'no extra packages'}")
        done = subprocess.run([tool, "--variant=minbase", *include, recipe.suite, str(root), mirror],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0:
            tail = (done.stderr.strip() or done.stdout.strip())[-800:]
            raise ImageError(f"debootstrap of {recipe.tag} failed: {tail}")
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run([docker_binary(), "import", "--change", f"LABEL heavygym.recipe={recipe.tag}",
                                   "--change", "CMD [\"sh\"]", "-", recipe.tag],
                                  stdin=tar.stdout, capture_output=True, text=True)  # fmt: skip
        assert tar.stdout is not None
        tar.stdout.close()
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise ImageError(f"docker import of {recipe.tag} failed: {imported.stderr.strip()[-500:]}")
