"""What the lean gym's toolchain image holds beyond Debian packages (gyms/lean/image.toml).

The wasm backend's checker is `node --no-wasm-tier-up ROOT/lean.js ...` (gyms/lean/backends.py).
Neither is a Debian package of the right version: Lean is the patched npm build that
scripts/install-lean-wasm.sh unpacks, and it needs Node.js 20+ where bookworm ships 18. Both are
copied from the host into the image at the same paths, so the checker's command line is the
same under bwrap and docker.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from gyms.lean.backends import INSTALL_HINT
from gyms.lean.location import PATCH_LEVEL, WasmLean, default_dir


def _node() -> Path:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("the lean image copies the host's node, and there is none: install Node.js 20+")
    return Path(found).resolve()


def _lean() -> WasmLean:
    lean = WasmLean(default_dir())
    if not lean.installed():
        raise RuntimeError(f"the lean image copies the wasm Lean, which is not installed in {lean.root}: {INSTALL_HINT}")
    return lean


def inputs() -> dict[str, str]:
    """What the image copies, for its tag: another node or Lean gives another image."""
    node = _node()
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    lean = _lean()
    return {"node": f"{node} {version}", "lean": f"{lean.root} {lean.version()} patch {PATCH_LEVEL}"}


def stage(root: Path) -> None:
    node, lean = _node(), _lean()
    where = root / str(node).lstrip("/")
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(node, where)
    # `node` may be reached through a link (/usr/bin/node -> nodejs): the command names `which node`.
    named = Path(shutil.which("node") or node)
    if named != node:
        (root / str(named).lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(node, root / str(named).lstrip("/"))
    shutil.copytree(lean.root, root / str(lean.root).lstrip("/"), symlinks=True)
