"""Measure what a Lean check costs, warm and cold: `python -m gyms.lean.cost [--cold N] [--repeat N]`.

Warm: one checker process is started (timed), then every built-in task's reference and
wrong proof is checked on it, `--repeat` times (each check is a full round trip: elaborate,
then list the theorem's axioms). Cold: `--cold` references are checked with a fresh
checker process each (native: `lean --json`). Prints seconds per check and memory, and how many times faster
a warm check is than a cold one.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from gyms.lean.backends import NativeBackend, WasmBackend
from gyms.lean.checker import CheckerPool, ColdChecker
from gyms.lean.protocol import ProofJob
from gyms.lean.tasks import core_tasks


def tree_rss_mb(root: int) -> float:
    """Resident memory of process `root` and all its descendants, in MB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            status = (entry / "status").read_text()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total / 1024


def summary(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"median {statistics.median(values):7.3f} s  p90 {p90:7.3f} s  ({len(values)} checks)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="wasm", choices=("wasm", "native"))
    parser.add_argument("--repl", default=None, help="native backend: the REPL binary")
    parser.add_argument("--cold", type=int, default=3, help="cold checks (each starts Lean)")
    parser.add_argument("--repeat", type=int, default=1, help="passes over the warm checks")
    parser.add_argument("--timeout", type=float, default=60.0, help="CPU seconds allowed per check")
    args = parser.parse_args()
    backend = WasmBackend() if args.backend == "wasm" else NativeBackend(args.repl)
    tasks = core_tasks()
    proofs = [(t, p) for t in tasks for p in (t.reference, *t.wrong)]

    pool = CheckerPool(backend, size=1)  # type: ignore[arg-type]
    started = time.monotonic()
    pool.warm_up()
    start_s = time.monotonic() - started
    rss_start = sum(tree_rss_mb(pid) for pid in pool.pids)
    warm = []
    for _ in range(args.repeat):
        for task, proof in proofs:
            warm.append(pool.check(ProofJob("", task.statement, task.name, proof), args.timeout).seconds)
    rss_after = sum(tree_rss_mb(pid) for pid in pool.pids)
    pool.close()

    cold_checker = ColdChecker(backend)  # type: ignore[arg-type]
    cold = [cold_checker.check(ProofJob("", t.statement, t.name, t.reference or ""), args.timeout) for t in tasks[: args.cold]]

    cold_s = [c.seconds for c in cold]
    cold_mb = max(c.peak_rss_mb or 0 for c in cold)  # 0: not measured (wasm cold checks run the warm checker once)
    print(f"backend {args.backend}; {len(tasks)} tasks")
    print(f"warm checker start          {start_s:7.1f} s   memory {rss_start:6.0f} MB", end="")
    print(f" (after {len(warm)} checks: {rss_after:.0f} MB)")
    print(f"warm check                  {summary(warm)}")
    print(f"cold check (lean per check) {summary(cold_s)}   peak memory {cold_mb:.0f} MB")
    print(f"warm is {statistics.median(cold_s) / statistics.median(warm):.0f}x faster than cold (medians)")


if __name__ == "__main__":
    main()
