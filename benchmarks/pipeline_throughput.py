"""Pipeline throughput: how many trajectories per second the orchestration itself can move.

A null gym (instant reward) and the replay policy with the zero hardware profile leave only
the pipeline's own work: rollout threads, the gym pool's process hops, the ready buffer and
the trainer loop. Run from the repository root:

    .venv/bin/python benchmarks/pipeline_throughput.py [--steps 20] [--batch 8] [--group 8]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # pool workers import null_gym too

from null_gym import NullGym  # noqa: E402

from gyms.pool import GymPool  # noqa: E402
from trainer.metrics import summarize  # noqa: E402
from trainer.pipeline import RunConfig, run  # noqa: E402
from trainer.policies.profiles import ZERO  # noqa: E402
from trainer.policies.replay import ReplayPolicy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--gym-workers", type=int, default=None)
    args = parser.parse_args()
    gym = NullGym()
    results = {}
    with GymPool(args.gym_workers, step_timeout_s=gym.step_timeout_s) as pool:
        for mode in ("sync", "async"):
            policy = ReplayPolicy(gym, ZERO, skill=0.5, seed=random.Random(0).randint(0, 9))
            config = RunConfig(mode=mode, steps=args.steps, batch_groups=args.batch, group_size=args.group)
            started = time.perf_counter()
            summary = summarize(run(gym, policy, pool, config))
            results[mode] = {
                "trajectories_per_s": summary.samples_per_s,
                "overhead_ms_per_trajectory": 1000 / summary.samples_per_s,
                "step_time_mean_s": summary.step_time_mean,
                "wall_s": time.perf_counter() - started,
            }
        results["gym_workers"] = pool.workers
    results["config"] = vars(args)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
