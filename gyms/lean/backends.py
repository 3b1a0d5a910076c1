"""The two ways to run Lean: `wasm` (the patched npm build under node) and `native` (your own Lean).

A backend says how to start a checker process and which protocol it speaks
(`gyms.lean.protocol`); the pool and the acceptance rules are the same for both.

* `wasm`: core Lean 4.28 only (Init, Std, Lean; no Mathlib), installed by
  `scripts/install-lean-wasm.sh`. Its checker is `programs/HeavyCheck.lean` run with
  `lean --run` (warm, or started for one check by a cold checker); it parses the proof itself and
  runs none of its code. Anonymous, unofficial build: fine for development and CI; publish results
  from a native Lean.
* `native`: a `repl` binary built from https://github.com/leanprover-community/repl for your
  toolchain and, for Mathlib, a Lean project that has it (`project`): LEAN_PATH is taken from
  `lake env` in that project once, on the host, so nothing inside the sandbox runs lake.
  The toolchain and the project must be readable by the sandbox's unprivileged uid (not
  under /root when running as root). Cold checks run `lean --json FILE`. The REPL elaborates
  whole commands: only the gym's text screen keeps commands out of a proof here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Protocol

from gyms.base import ToolCheck
from gyms.lean.location import ENV_VAR, WasmLean, default_dir

CHECKER_SOURCE = Path(__file__).with_name("programs") / "HeavyCheck.lean"
CHECKER_FILE = "HeavyCheck.lean"
COLD_FILE = "Check.lean"
INSTALL_HINT = f"run scripts/install-lean-wasm.sh; set ${ENV_VAR} to choose where"


class BackendUnavailable(RuntimeError):
    """The backend's tools are missing; the message says how to get them."""


@dataclass(frozen=True)
class Launch:
    """A command to run in the sandbox's work directory, with its environment and input files."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


class Backend(Protocol):
    """Where a Lean checker comes from: a warm checker's launch, a cold check's, and the tools."""

    name: str
    protocol: str  # what the warm checker speaks: "heavycheck" (gyms/lean/heavycheck.py) or "repl"
    checker_memory_gb: float  # a warm checker's resident memory, to size the pool
    start_timeout_s: float
    recycle_after: int | None  # restart a warm checker after this many checks (None: never)

    def warm(self) -> Launch:
        """A long-lived checker that checks one proof per request."""
        ...

    def cold(self) -> Launch | None:
        """One process that checks one proof file and exits; None where a cold check is the warm
        checker, started for that one check."""
        ...

    def tools(self) -> list[ToolCheck]: ...


class WasmBackend:
    name = "wasm"
    protocol = "heavycheck"
    checker_memory_gb = 1.6  # 1.4 GB measured resident (docs/gyms/lean.md), plus room for a heavy proof
    start_timeout_s = 240.0  # ~20 s idle; generous for a loaded 2-core machine
    recycle_after: int | None = None  # the checker keeps a bounded set of environments

    def __init__(self, root: str | Path | None = None, node: str = "node") -> None:
        self.lean = WasmLean(Path(root) if root else default_dir())
        self.node = node

    def _require(self) -> str:
        node = shutil.which(self.node)
        if node is None:
            raise BackendUnavailable(f"node not found ({self.node!r}): install Node.js 20 or later")
        if not self.lean.installed():
            raise BackendUnavailable(f"the wasm Lean is not installed in {self.lean.root}: {INSTALL_HINT}")
        private = next((d for d in [*self.lean.root.parents, self.lean.root] if not os.stat(d).st_mode & 0o001), None)
        if private is not None and os.geteuid() == 0:
            raise BackendUnavailable(
                f"{private} is private (not o+x), so the sandbox's uid cannot read the wasm Lean in {self.lean.root}: "
                f"install it elsewhere (set ${ENV_VAR}) or chmod o+x {private}"
            )
        return node

    def _lean(self, *args: str) -> list[str]:
        # Liftoff only: optimizing 117 MB of wasm with TurboFan would cost minutes and gigabytes.
        return [self._require(), "--no-wasm-tier-up", str(self.lean.lean_js), *args]

    def warm(self) -> Launch:
        files = {CHECKER_FILE: CHECKER_SOURCE.read_text()}
        return Launch(self._lean("--run", CHECKER_FILE), {"LEAN_PATH": str(self.lean.lib)}, files)

    def cold(self) -> None:
        """The warm checker, started for one check: a proof is judged the same way, and none runs
        as commands."""
        return None

    def tools(self) -> list[ToolCheck]:
        node = shutil.which(self.node)
        return [
            ToolCheck("node", node is not None, _version([node, "--version"]) if node else "", "install Node.js 20+"),
            ToolCheck("lean-wasm", self.lean.installed(), self.lean.version(), INSTALL_HINT),
        ]


class NativeBackend:
    name = "native"
    protocol = "repl"
    checker_memory_gb = 8.0  # a REPL that imported Mathlib; far less for core Lean
    start_timeout_s = 600.0  # importing Mathlib from a cold disk cache
    # The REPL keeps every environment it made: restart it now and then to bound its memory.
    recycle_after: int | None = 1000

    def __init__(self, repl: str | None = None, project: str | None = None, lean: str | None = None) -> None:
        self.repl = repl
        self.project = Path(project) if project else None
        self.lean_binary = lean

    @cached_property
    def _env(self) -> dict[str, str]:
        """LEAN_PATH (from the project, via `lake env`) and a PATH that reaches `lean`."""
        env: dict[str, str] = {}
        lean = self._lean_path()
        if lean is not None:
            env["PATH"] = f"{Path(lean).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
        if self.project is not None:
            lake = shutil.which("lake", path=env.get("PATH"))
            if lake is None:
                raise BackendUnavailable(
                    "lake not found: put your Lean toolchain (elan) on PATH or pass lean=/path/to/lean"
                )
            done = subprocess.run(
                [lake, "env", "printenv", "LEAN_PATH"], cwd=self.project, capture_output=True, text=True, timeout=300
            )
            if done.returncode != 0:
                raise BackendUnavailable(f"`lake env` failed in {self.project}: {done.stderr.strip()[-500:]}")
            env["LEAN_PATH"] = done.stdout.strip()
        elif os.environ.get("LEAN_PATH"):
            env["LEAN_PATH"] = os.environ["LEAN_PATH"]
        return env

    def _lean_path(self) -> str | None:
        return shutil.which(self.lean_binary or "lean")

    def warm(self) -> Launch:
        if not self.repl or not Path(self.repl).is_file():
            raise BackendUnavailable(
                f"no REPL binary at {self.repl!r}: build https://github.com/leanprover-community/repl with your "
                "toolchain (lake build) and pass repl=/path/to/.lake/build/bin/repl"
            )
        return Launch([str(Path(self.repl).resolve())], self._env)

    def cold(self) -> Launch:
        lean = self._lean_path()
        if lean is None:
            raise BackendUnavailable("lean not found: put your Lean toolchain on PATH or pass lean=/path/to/lean")
        return Launch([lean, "--json", COLD_FILE], self._env)

    def tools(self) -> list[ToolCheck]:
        lean = self._lean_path()
        repl_ok = bool(self.repl) and Path(str(self.repl)).is_file()
        return [
            ToolCheck(
                "lean", lean is not None, _version([lean, "--version"]) if lean else "", "install Lean 4 with elan"
            ),
            ToolCheck("repl", repl_ok, str(self.repl or ""), "build leanprover-community/repl; pass repl=PATH"),
        ]


def _version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
