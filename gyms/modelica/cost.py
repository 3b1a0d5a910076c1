"""Measure what a Modelica step costs: `python -m gyms.modelica.cost [--warm true|false] [--repeat N] [--suite core|heavy]`.

Steps every known candidate of every train task (the never-ending ones excepted: they cost
the simulation budget by construction) in this process, as a pool worker would, and prints
wall-clock milliseconds per step by kind of answer. The first step of a worker also pays for
starting the runner and simulating the task's reference; it is reported on its own line.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import defaultdict

from gyms.modelica.catalog import TIMEOUT_LABELS
from gyms.modelica.gym import ModelicaGym

# Candidate labels grouped by the work their step does.
_KINDS = {"reference": "passes", "equivalent": "passes", "syntax-error": "does not compile", "unbalanced": "does not compile"}


def measure(warm: bool, repeat: int, suite: str = "core") -> dict[str, list[float]]:
    gym = ModelicaGym(warm=warm, suite=suite)
    times: dict[str, list[float]] = defaultdict(list)
    first = True
    for _ in range(repeat):
        for task in gym.tasks("train"):
            for candidate in gym.candidates(task, random.Random(0)):
                if candidate.label in TIMEOUT_LABELS:
                    continue
                episode = gym.open(task)
                started = time.perf_counter()
                episode.step(candidate.action)
                elapsed = (time.perf_counter() - started) * 1000
                episode.close()
                kind = "first step of a worker" if first else _KINDS.get(candidate.label, "simulates, fails checks")
                times[kind].append(elapsed)
                first = False
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", default="true", help="rumoca runner per worker (true) or per call (false)")
    parser.add_argument("--repeat", type=int, default=3, help="passes over the candidates")
    parser.add_argument("--suite", default="core", help="task suite: core or heavy")
    args = parser.parse_args()
    warm = args.warm.lower() in ("1", "true", "yes")
    print(f"rumoca backend, suite {args.suite}, warm={warm}, {args.repeat} passes; milliseconds per step")
    print(f"{'answer':28s} {'steps':>6s} {'mean':>8s} {'p50':>8s} {'p95':>8s}")
    for kind, values in sorted(measure(warm, args.repeat, args.suite).items()):
        values.sort()
        p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
        print(f"{kind:28s} {len(values):6d} {statistics.mean(values):8.1f} {statistics.median(values):8.1f} {p95:8.1f}")


if __name__ == "__main__":
    main()
