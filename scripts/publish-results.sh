#!/usr/bin/env bash
# The published runs of results/: every row of the leaderboard, measured one after another on
# a clean checkout (harness leaderboard leaves dirty-tree runs out), then the leaderboard.
#
#   scripts/publish-results.sh            # every row (hours on a 2-core machine: a heavy row takes about 25 min)
#   scripts/publish-results.sh heavy      # the heavy suites only
#   scripts/publish-results.sh light      # the light (core) suites only
#   scripts/publish-results.sh verilog-heavy   # one row: GYM-heavy or GYM-light
#   scripts/publish-results.sh plan-check      # the measured point that checks `harness plan`
#   scripts/publish-results.sh verilog-heavy-oversample   # heavy verilog with --oversample 1
#   scripts/publish-results.sh verilog-heavy-cost-aware   # heavy verilog with --schedule cost-aware
#   scripts/publish-results.sh verilog-light-cost-aware   # light verilog with --schedule cost-aware
#   scripts/publish-results.sh learning        # learning beside speed: the tiny policy on the math gym
#   scripts/publish-results.sh learning-mix    # what each schedule lets the tiny policy learn from (two runs)
#   scripts/publish-results.sh attacks         # each built-in gym's attack suites: the reward-integrity table
#
# Each run is `harness benchmark` with three ABBA repeats (REPEATS, at least 3) and the instant-gym control: the light
# (core) suites on the benchmark's defaults (10 steps of 4 x 4, colocated h100-qwen3-4b stages,
# one gym worker per core), the heavy suites as `make benchmark` runs them (5 steps of 2 x 4:
# seconds per check). Nothing else should run on the machine meanwhile: the gym work is real
# and shares the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# A published row has at least 3 ABBA repeats: with 2, Student's t is 12.7 and no interval means much.
repeats=${REPEATS:-3}
if ! [[ $repeats =~ ^[0-9]+$ ]] || (( repeats < 3 )); then
    echo "error: REPEATS=$repeats: a published row needs at least 3 ABBA repeats" >&2
    exit 2
fi
source scripts/clean-tree.sh
harness=${HARNESS:-.venv/bin/harness}
which=${1:-all}
run() {
    echo "== $* ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
    "$harness" benchmark --results results --repeats "$repeats" --control "$@"
}
heavy=(--steps 5 --batch 2 -o suite=heavy)
wanted() { [[ $which == all || $which == "$1" || $which == "$2" ]]; }
wanted heavy verilog-heavy && run --gym verilog "${heavy[@]}"
wanted heavy lean-heavy && run --gym lean "${heavy[@]}"
wanted heavy modelica-heavy && run --gym modelica "${heavy[@]}"
wanted light verilog-light && run --gym verilog
wanted light modelica-light && run --gym modelica
wanted light lean-light && run --gym lean
wanted light math-light && run --gym math
wanted heavy verilator-heavy && run --gym verilog "${heavy[@]}" -o simulator=verilator
# The slow-sample bias after over-sampling (the verilog-heavy row is the one before): one group
# in flight beyond the step's two, the step trains on the first two to complete.
wanted heavy verilog-heavy-oversample && run --gym verilog "${heavy[@]}" --oversample 1
# The cost-aware scheduler beside fifo's verilog-heavy and verilog-light rows (docs/architecture.md,
# the scheduler): where the slow answers are dropped, and where it must cost nothing.
wanted heavy verilog-heavy-cost-aware && run --gym verilog "${heavy[@]}" --schedule cost-aware
wanted light verilog-light-cost-aware && run --gym verilog --schedule cost-aware
# The measured point beside the plan: `harness plan --gym modelica --card <heavy modelica run>/card.json
# --profile a3-qwen3-4b --accelerators 2 --cores-per-node 2 --target-idle 0.02 --batch 2 --group 4`
# predicts that this machine's 2 gym workers hold async idle under 2 % at max staleness 2.
wanted plan-check plan-check && run --gym modelica --steps 10 --batch 2 -o suite=heavy \
    --profile a3-qwen3-4b --placement disaggregated --max-staleness 2
# Learning beside speed (docs/reports.md): the tiny policy on one-digit sums, from the gym's format
# warm-up, as tests/test_learning.py trains it; no control (an instant gym leaves nothing to learn
# faster). Its figures: each mode's time to the target reward and the final reward at equal samples.
wanted learning learning && "$harness" benchmark --results results --repeats "$repeats" --gym math \
    -o source=addition -o max_turns=1 --policy tiny:lr=1e-3,max_new_tokens=12 --warmup 200 \
    --steps 60 --batch 8 --group 8
# What a schedule lets a policy learn from (docs/benchmarks.md, the scheduler and learning): the same
# learning run on a mix whose check cost differs by task, async only, under each schedule. The sums
# 2 + b (three of nine) sleep 1 s more per check in their gym worker (emulated, the option says so;
# the checks and rewards are real), and an episode has up to three turns, so a slow group's later
# turns queue behind newer groups, as on the heavy verilog suite (one turn and 0.5 s dropped nothing
# under fifo). `harness tasks FIFO_RUN COST_AWARE_RUN --slow add/2+` compares them; async-only runs
# have no speedup, so no leaderboard row.
mix=(--gym math -o source=addition -o max_turns=3 -o emulated_check_s=add/2+:1
     --policy tiny:lr=1e-3,max_new_tokens=12 --warmup 200 --steps 60 --batch 4 --group 4 --mode async)
for schedule in fifo cost-aware; do
    wanted learning-mix "learning-mix-$schedule" && "$harness" benchmark --results results --repeats "$repeats" \
        "${mix[@]}" --schedule "$schedule"
done
# Reward integrity (docs/writing-a-gym.md, attacks): each built-in gym's declared attack suites through a real
# pool, the figure written to results/attacks/ with the commit (minutes each; lean's checker starts once).
for gym in math modelica verilog lean; do
    # exit 1 is a figure with escapes, written and published like any other; 2 is a failure to measure
    wanted attacks "attacks-$gym" && { "$harness" gyms attack "$gym" --results results || (( $? == 1 )); }
done
"$harness" leaderboard --results results --readme README.md
