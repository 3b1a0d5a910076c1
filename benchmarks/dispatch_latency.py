"""What a gym step costs on a Ray actor beyond a local worker process: the simulator's dispatch_s.

Opens a local pool and a Ray pool of the same size side by side (the null gym: a step that costs
nothing, so the time is the executor's own), then, in each of --repeats rounds, steps --calls
fresh episodes through each pool (the order of the two alternates round by round, ABBA), with
as many calls in flight as there are workers. A call's time is what the pool counts as busy
(`StepCall.finished_at - started_at`: send the episode, step it, read the reply), the figure a run's
gym spans and a cost card are made of. Prints each round's mean per executor and the extra per
call on Ray, mean and 95 % interval over the rounds (Student's t).

Without --ray-address, Ray starts here, one node (the pool stops it at the end): a call between
Ray nodes of one machine crosses sockets, not a network, so this measures no network hop.
Run from the repository root:

    .venv/bin/python benchmarks/dispatch_latency.py [--repeats 10] [--calls 200] [--gym-workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from concurrent.futures import wait
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # local workers import null_gym through sys.path
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)  # Ray's

from gyms.executors import make_pool  # noqa: E402
from gyms.pool import SlotPool  # noqa: E402
from harness.intervals import interval  # noqa: E402
from null_gym import NullGym  # noqa: E402

GYM = "null_gym:NullGym"


def round_trip_s(pool: SlotPool, gym: NullGym, calls: int) -> float:
    """Mean seconds a call is busy, over `calls` calls, `pool.workers` in flight at a time."""
    task = gym.tasks()[0]
    busy: list[float] = []
    while len(busy) < calls:
        futures = [pool.submit(gym.open(task), "pass") for _ in range(min(pool.workers, calls - len(busy)))]
        wait(futures)
        busy += [f.result().finished_at - f.result().started_at for f in futures]
    return statistics.fmean(busy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="rounds (at least 3: an interval needs them)")
    parser.add_argument("--calls", type=int, default=200, help="calls per executor per round")
    parser.add_argument("--gym-workers", type=int, default=2)
    parser.add_argument("--ray-address", default=None, help="a running cluster (default: start Ray here)")
    args = parser.parse_args()
    if args.repeats < 3 or args.calls < 1 or args.gym_workers < 1:
        parser.error("--repeats must be at least 3, --calls and --gym-workers at least 1")
    gym = NullGym()
    rows = []
    with make_pool("local", GYM, {}, args.gym_workers, gym.step_timeout_s) as local, \
            make_pool("ray", GYM, {}, args.gym_workers, gym.step_timeout_s, args.ray_address) as ray:  # fmt: skip
        for pool in (local, ray):  # every worker up, and warm: start-up is not a call
            pool.wait_started(120.0)
            round_trip_s(pool, gym, 4 * pool.workers)
        for r in range(args.repeats):
            order = (local, ray) if r % 2 == 0 else (ray, local)
            times = {id(pool): round_trip_s(pool, gym, args.calls) for pool in order}
            rows.append({"local_ms": 1000 * times[id(local)], "ray_ms": 1000 * times[id(ray)]})
            print(f"round {r + 1}: local {rows[-1]['local_ms']:.3f} ms, ray {rows[-1]['ray_ms']:.3f} ms",
                  file=sys.stderr)  # fmt: skip
    extra = interval([row["ray_ms"] - row["local_ms"] for row in rows])
    print(json.dumps({"rounds": rows, "dispatch_ms": extra, "config": vars(args), "load_average": os.getloadavg()},
                     indent=2))  # fmt: skip
    print(f"dispatch: {extra['mean']:.3f} ms [{extra['low']:.3f}, {extra['high']:.3f}] (mean, 95 % interval over "
          f"{args.repeats} rounds of {args.calls} calls, {args.gym_workers} workers each)")  # fmt: skip


if __name__ == "__main__":
    main()
