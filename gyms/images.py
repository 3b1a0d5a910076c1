"""Toolchain images: what a gym's commands need, as a Docker image for the `docker` sandbox.

A gym declares its image in `image.toml` beside the module that defines its class
(gyms/verilog/image.toml for `gyms.verilog.gym:VerilogGym`); a third-party gym does the same in
its own package (docs/writing-a-gym.md):

    base = "debian:bookworm-slim"   # a registry image, used when it can be pulled
    suite = "bookworm"              # the Debian suite of the debootstrap fallback
    packages = ["python3"]          # Debian packages the gym's sandboxed commands run
    python = ["math-verify"]        # Python distributions its programs import (needs python3)
    stage = "gyms.lean.image"       # a module whose stage(root) puts anything else in the image
    memory_mb = 4096                # the container's memory, all its processes (default 2048)

`python` copies each named distribution, and the distributions it requires, from the host's
environment into the image's /usr/local/lib/python3.X/dist-packages: the same versions, the same
files, no download, so a check grades the same under bwrap and docker. The image's python3 must
be the host's minor version (Debian bookworm's is 3.11). `stage` names a module with
`inputs() -> dict[str, str]` (what it copies, for the tag: versions, paths) and
`stage(root: Path)` (copies it below `root`, the image's /); gyms/lean/image.py puts the host's
node and wasm Lean there.

`harness images build [GYM]` builds it (`build`). The tag is `heavygym-<gym>:<hash>`, the hash
being the recipe's content, the pinned distributions, the stage's inputs and this builder's
version: an image whose tag exists is not built again, and a changed recipe, a different
installed version or toolchain gives a new tag. Two ways, tried in order:

1. from the registry base: `docker pull BASE`, then a generated Dockerfile that installs the
   packages with apt (network needed during the build) and copies the overlay (the Python
   distributions and the stage's files);
2. without a registry (the project's machines): `debootstrap --variant=minbase
   --include=PACKAGES SUITE DIR MIRROR` with the mirror the host's apt uses, the overlay copied
   into DIR, then `tar -C DIR -c . | docker import - TAG`.

The image must hold `sh` and `prlimit` (util-linux, in every Debian base): the sandbox runs each
command as `prlimit ... -- COMMAND` inside the container. The programs a gym runs from its own
package (gyms/math/verifier.py) are not copied: the sandbox mounts them read-only at their host
path (`Sandbox(expose=...)`), so that an edit needs no rebuild.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from gyms.docker_sandbox import MEMORY_LABEL, DockerUnavailable, daemon_problem, docker, docker_binary, image_id

RECIPE = "image.toml"
BUILDER_VERSION = "3"  # part of every tag's hash: bump when the way images are built changes
# An image leaves out what no sandboxed command reads (`_trim_command`): under dockerd's vfs
# storage driver every container start copies every file of its image.
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
    python: tuple[str, ...]
    stage: str | None
    memory_mb: int | None
    text: str

    def pins(self) -> tuple[str, ...]:
        """`name==version` of each `python` distribution and all it requires, as installed here."""
        return _pins(_closure(self.python))

    def stage_module(self):  # type: ignore[no-untyped-def]
        if self.stage is None:
            return None
        try:
            module = importlib.import_module(self.stage)
        except ImportError as exc:
            raise ImageError(f"{self.path}: stage module {self.stage!r} does not import: {exc}") from exc
        if not (callable(getattr(module, "inputs", None)) and callable(getattr(module, "stage", None))):
            raise ImageError(f"{self.path}: stage module {self.stage!r} needs inputs() and stage(root)")
        return module

    @functools.cached_property  # a build asks for it several times; the stage's inputs run tools
    def tag(self) -> str:
        module = self.stage_module()
        try:
            inputs = module.inputs() if module is not None else {}
        except Exception as exc:  # a toolchain the stage copies is missing: its message names the fix
            raise ImageError(f"{self.path}: stage {self.stage}: {exc}") from exc
        content = json.dumps([BUILDER_VERSION, self.text, self.pins(), inputs], sort_keys=True)
        digest = hashlib.sha256(content.encode()).hexdigest()[:12]
        return f"heavygym-{re.sub(r'[^a-z0-9_.-]', '-', self.gym.lower())}:{digest}"


def _labels(recipe: Recipe) -> list[str]:
    """The image's labels: its recipe's tag, and what the container needs (gyms/docker_sandbox.py reads it)."""
    labels = [f"heavygym.recipe={recipe.tag}"]
    if recipe.memory_mb is not None:
        labels.append(f"{MEMORY_LABEL}={recipe.memory_mb}")
    return labels


def _pins(dists: list[importlib.metadata.Distribution]) -> tuple[str, ...]:
    return tuple(f"{d.metadata['Name']}=={d.version}" for d in dists)


def _closure(names: tuple[str, ...]) -> list[importlib.metadata.Distribution]:
    """The installed distributions `names` and, recursively, those they require (extras left out)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            found[key] = dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise ImageError(f"the image needs the Python distribution {name!r}, which is not installed here "
                             f"({sys.prefix}): install the project's environment first (make setup)") from None  # fmt: skip
        for line in dist.requires or []:
            required = Requirement(line)
            if required.marker is None or required.marker.evaluate({"extra": ""}):
                todo.append(required.name)
    return sorted(found.values(), key=lambda d: d.metadata["Name"].lower())


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
    unknown = set(data) - {"base", "suite", "packages", "python", "stage", "memory_mb"}
    if unknown:
        raise ImageError(f"{path}: unknown keys {', '.join(sorted(unknown))}; the keys are base, suite, packages, "
                         "python, stage, memory_mb")  # fmt: skip
    memory_mb = data.get("memory_mb")
    if memory_mb is not None and not (isinstance(memory_mb, int) and memory_mb >= 64):
        raise ImageError(f"{path}: memory_mb must be a whole number of MB, at least 64")
    python = data.get("python", [])
    if not isinstance(python, list) or not all(isinstance(p, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", p)
                                               for p in python):  # fmt: skip
        raise ImageError(f"{path}: python must be a list of distribution names (versions come from the host)")
    if python and "python3" not in packages:
        raise ImageError(f"{path}: python distributions need the interpreter: add \"python3\" to packages")
    stage = data.get("stage")
    if stage is not None and not (isinstance(stage, str) and re.fullmatch(r"[A-Za-z_][\w.]*", stage)):
        raise ImageError(f"{path}: stage must name a module (package.module)")
    return Recipe(gym, path, str(data.get("base", "debian:bookworm-slim")), str(data.get("suite", "bookworm")),
                  tuple(packages), tuple(python), stage, memory_mb, text)  # fmt: skip


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
        _build_from_registry(recipe, say)
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


PYTHON_DIR = f"usr/local/lib/python3.{sys.version_info.minor}/dist-packages"  # on Debian's python3's path


def _overlay(recipe: Recipe, root: Path, say) -> None:  # type: ignore[no-untyped-def]
    """Put the recipe's Python distributions and its stage's files below `root`."""
    if recipe.python:
        target = root / PYTHON_DIR
        dists = _closure(recipe.python)
        say(f"copying {len(dists)} Python distributions from {sys.prefix}: {', '.join(_pins(dists))}")
        for dist in dists:
            for file in dist.files or []:
                if file.parts[0] == "..":  # a script or data file outside site-packages
                    continue
                dest = target / file
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(dist.locate_file(file), dest)
    module = recipe.stage_module()
    if module is not None:
        say(f"staging {recipe.stage}: {', '.join(f'{k} {v}' for k, v in module.inputs().items())}")
        tmp = root / "tmp"
        before = set(tmp.rglob("*")) if tmp.is_dir() else set()
        module.stage(root)
        hidden = sorted(set(tmp.rglob("*")) - before) if tmp.is_dir() else []
        if hidden:  # a host toolchain under /tmp (a checkout there, its .venv)
            raise ImageError(f"{recipe.stage} staged /{hidden[0].relative_to(root)} under /tmp, which every container "
                             "mounts as a tmpfs of its own, hiding it: install the toolchain (or the project and "
                             "its .venv) outside /tmp")  # fmt: skip


def _check_python(root: Path) -> None:
    """The image's python3 must read the copied distributions: the host's minor version."""
    if not (root / "usr/lib" / f"python3.{sys.version_info.minor}").is_dir():
        found = sorted(p.name for p in (root / "usr/lib").glob("python3.*"))
        raise ImageError(f"the image's Python is {', '.join(found) or 'missing'}, the host's 3.{sys.version_info.minor}: "
                         "the copied distributions need the same minor version (pick a suite that has it)")  # fmt: skip


def _build_from_registry(recipe: Recipe, say) -> None:  # type: ignore[no-untyped-def]
    install = ""
    if recipe.packages:
        install = ("RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                   f"{' '.join(recipe.packages)} && cd / && {_trim_command()}\n")  # fmt: skip
    check = ""
    if recipe.python:
        check = f"RUN test -d /usr/lib/python3.{sys.version_info.minor}\n"  # the host's minor version (_check_python)
    dockerfile = f"FROM {recipe.base}\n{install}{check}COPY overlay/ /\nLABEL {' '.join(_labels(recipe))}\n"
    with tempfile.TemporaryDirectory() as context:
        Path(context, "Dockerfile").write_text(dockerfile)
        Path(context, "overlay").mkdir()
        _overlay(recipe, Path(context, "overlay"), say)
        done = subprocess.run([docker_binary(), "build", "-q", "-t", recipe.tag, context], capture_output=True,
                              text=True)  # fmt: skip
    if done.returncode != 0:
        raise ImageError(f"docker build of {recipe.tag} failed: {done.stderr.strip()[-500:]}")


def _trim_command() -> str:
    """A shell command, run at the image's root (its paths are relative), that removes what no
    sandboxed command reads: documentation (but each package's copyright file), manuals,
    translations, apt's lists and downloaded packages."""
    return ("if [ -d usr/share/doc ]; then find usr/share/doc ! -type d ! -name copyright -delete && "
            "find usr/share/doc -mindepth 1 -type d -empty -delete; fi && "
            "rm -rf usr/share/man usr/share/info usr/share/locale var/lib/apt/lists/* && "
            "rm -f var/cache/apt/archives/*.deb")  # fmt: skip


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
        if recipe.python:
            _check_python(root)
        _overlay(recipe, root, say)
        trimmed = subprocess.run(["sh", "-c", _trim_command()], cwd=root, capture_output=True, text=True)
        if trimmed.returncode != 0:
            raise ImageError(f"trimming {recipe.tag}'s root failed: {trimmed.stderr.strip()[-500:]}")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        labels = [arg for label in _labels(recipe) for arg in ("--change", f"LABEL {label}")]
        imported = subprocess.run([docker_binary(), "import", *labels, "--change", "CMD [\"sh\"]", "-", recipe.tag],
                                  stdin=tar.stdout, capture_output=True, text=True)  # fmt: skip
        assert tar.stdout is not None
        tar.stdout.close()
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise ImageError(f"docker import of {recipe.tag} failed: {imported.stderr.strip()[-500:]}")
