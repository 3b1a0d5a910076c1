#!/usr/bin/env bash
# Run one test N times in a row while busy loops keep every core busy, to prove it is not flaky.
# Each pytest runs as a background job of this non-interactive shell, so it starts with SIGINT
# ignored, as under `make test &` or a CI runner.
#   scripts/repeat-under-load.sh 20 "tests/test_harness.py::test_ctrl_c_keeps_the_finished_modes_and_nothing_half_done"
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:?usage: $0 RUNS PYTEST-NODE-ID...}"; shift
loops=()
for _ in $(seq "$(nproc)"); do
    timeout 7200 python3 -c 'while True: pass' & loops+=($!)
done
trap 'kill "${loops[@]}" 2>/dev/null' EXIT
passed=0
for i in $(seq "$runs"); do
    .venv/bin/python -m pytest -q -p no:cacheprovider "$@" >"/tmp/repeat-under-load.$i.log" 2>&1 &
    if wait $!; then passed=$((passed + 1)); else echo "run $i failed: /tmp/repeat-under-load.$i.log"; fi
done
echo "$passed of $runs runs passed under load"
[[ $passed -eq $runs ]]
