"""Ray executor overhead: the same run on the local executor and on the Ray executor.

Each executor gets a fresh pool of the same size and runs the same sync and async runs (replay
policy, `zero` hardware profile: no emulated accelerator time, so the pipeline and the gym are
all there is). Reported per executor: pool start-up (Ray's start included), mean service time
of one gym call as the pool sees it (the round trip: pickle, hop, step, hop back), and
trajectories per second. With the null gym the step costs nothing and the difference is the
executor's own per-call cost. Without --ray-address, Ray starts on this machine (one node).
Run from the repository root:

    .venv/bin/python benchmarks/ray_overhead.py [--gym null] [--steps 20] [--batch 8] [--group 8]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # local workers import null_gym through sys.path
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)  # Ray's

from gyms import make  # noqa: E402
from gyms.executors import make_pool  # noqa: E402
from trainer.metrics import summarize  # noqa: E402
from trainer.pipeline import RunConfig, run  # noqa: E402
from trainer.policies.profiles import ZERO  # noqa: E402
from trainer.policies.replay import ReplayPolicy  # noqa: E402

GYMS = {"null": "null_gym:NullGym"}


def measure(executor: str, gym_name: str, args: argparse.Namespace) -> dict:
    gym = make(gym_name)
    started = time.perf_counter()
    with make_pool(executor, gym_name, {}, args.gym_workers, gym.step_timeout_s, args.ray_address) as pool:
        while len(pool.worker_nodes) < pool.workers:  # every worker up: start-up is measured apart
            time.sleep(0.01)
        figures: dict = {"pool_start_s": time.perf_counter() - started, "gym_workers": pool.workers}
        for mode in ("sync", "async"):
            calls, busy = pool.stats.calls, sum(pool.stats.busy_s)
            config = RunConfig(mode=mode, steps=args.steps, batch_groups=args.batch, group_size=args.group)
            summary = summarize(run(gym, ReplayPolicy(gym, ZERO, seed=args.seed), pool, config))
            figures[mode] = {
                "trajectories_per_s": summary.samples_per_s,
                "gym_call_ms": 1000 * (sum(pool.stats.busy_s) - busy) / max(pool.stats.calls - calls, 1),
                "step_time_mean_s": summary.step_time_mean,
                "balanced": summary.accounting["balanced"],
            }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gym", default="null", help="null (benchmarks/null_gym.py) or a registered gym")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--gym-workers", type=int, default=None, help="gym workers (default: core count)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ray-address", default=None, help="a running cluster (default: start Ray here)")
    args = parser.parse_args()
    gym_name = GYMS.get(args.gym, args.gym)
    results = {"local": measure("local", gym_name, argparse.Namespace(**{**vars(args), "ray_address": None}))}
    results["ray"] = measure("ray", gym_name, args)
    for mode in ("sync", "async"):
        local, ray = results["local"][mode], results["ray"][mode]
        results[f"{mode}_ray_over_local"] = {
            "gym_call_ms_added": ray["gym_call_ms"] - local["gym_call_ms"],
            "throughput_ratio": ray["trajectories_per_s"] / local["trajectories_per_s"],
        }
    results["config"] = vars(args)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
