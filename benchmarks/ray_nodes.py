"""A gym pool across Ray nodes, measured beside the simulator's prediction for the same configuration.

Starts its own Ray cluster of three nodes on this machine (`ray.cluster_utils.Cluster`, in a
temporary directory of its own, RAY_TMPDIR, on ports the system picks): the head, where the
benchmark's trainer runs, and two CPU-only gym nodes. Each node advertises `gym:replay-latency`
units, as many as its CPUs, which pins that many gym workers to it (docs/ray.md, placing gym
workers): by default 2 beside the trainer and 6 and 4 on the gym nodes. Then it runs

    harness benchmark --gym replay-latency -o card=CARD --executor ray --ray-address HEAD --gym-workers N
        --repeats R --steps S --batch B --group G --max-staleness K --json

(sync and async, R ABBA repeats), simulates the configuration that ran (the card, with the
turns the replay-latency gym gives; the run's profile, placement, batch, group, staleness, steps
and gym workers; remote_gym_workers = the workers the run placed off the head node; the default
dispatch) over --seeds seeds, and prints measured beside predicted. It stops the cluster it
started and nothing else. The gym's latency is emulated (slept, from the card) and so are the
accelerator stages (the replay policy's profile). Run from the repository root:

    .venv/bin/python benchmarks/ray_nodes.py [--card PATH] [--nodes 2,6,4] [--repeats 3] [--steps 8] [--seeds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CARD = "results/runs/20261206T081256Z-modelica/card.json"  # heavy modelica: 1.4 s a step, a run fits in minutes
OBJECT_STORE = 100 * 1024**2  # per node: episodes are small, and three nodes share this machine's /dev/shm
GYM = "replay-latency"

# (label, mode, summary key, format): the figures compared
FIGURES = (
    ("trainer idle, sync", "sync", "trainer_idle_ratio", "{:.1%}"),
    ("trainer idle, async", "async", "trainer_idle_ratio", "{:.1%}"),
    ("accelerator idle, async", "async", "accelerator_idle_ratio", "{:.1%}"),
    ("step time, sync (s)", "sync", "step_time_mean", "{:.2f}"),
    ("step time, async (s)", "async", "step_time_mean", "{:.2f}"),
    ("gym utilisation, async", "async", "gym_utilisation", "{:.1%}"),
)


def start_cluster(workers: list[int]):
    """A cluster whose node i hosts workers[i] gym workers (the first is the head); returns it."""
    from ray.cluster_utils import Cluster

    def node(n: int) -> dict:
        return {"num_cpus": n, "resources": {f"gym:{GYM}": n}, "object_store_memory": OBJECT_STORE}

    # The head's GCS port is left to the system (Cluster asks for port 0): no clash with another cluster here
    cluster = Cluster(initialize_head=True, head_node_args={**node(workers[0]), "include_dashboard": False})
    try:
        for n in workers[1:]:
            cluster.add_node(**node(n))
        cluster.wait_for_nodes()
    except BaseException:
        cluster.shutdown()
        raise
    return cluster


def benchmark(address: str, args: argparse.Namespace, results: Path) -> dict:
    """`harness benchmark` on the cluster; its summary."""
    command = [str(Path(sys.executable).parent / "harness"), "benchmark", "--gym", GYM, "-o", f"card={args.card}",
               "--executor", "ray", "--ray-address", address, "--gym-workers", str(sum(args.nodes)),
               "--repeats", str(args.repeats), "--steps", str(args.steps), "--batch", str(args.batch),
               "--group", str(args.group), "--max-staleness", str(args.max_staleness), "--results", str(results),
               "--json"]  # fmt: skip
    print("$", " ".join(command), file=sys.stderr)
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"error: harness benchmark failed (exit {done.returncode}); its stderr is above")
    return json.loads(done.stdout)


def simulate(summary: dict, card_path: str, remote: int, seeds: int):
    """The configuration that ran, simulated at seeds 0..seeds-1: one Simulated per seed."""
    from harness.replay_latency import ReplayLatencyGym
    from harness.sim.pipeline import SimConfig
    from harness.sim.stages import from_profile
    from harness.simulate import simulate_modes
    from trainer.policies.profiles import HardwareProfile

    gym = ReplayLatencyGym(card=card_path)
    # The gym's turns (the replay mix's), its one distribution for every task: no per-task figures
    card = replace(gym.card, turns=gym.turns, by_task={}, turns_by_task={})
    stages = from_profile(HardwareProfile(**summary["profile"]))
    spec = summary["spec"]
    config = SimConfig(steps=spec["steps"], batch_groups=spec["batch_groups"], group_size=spec["group_size"],
                       max_staleness=spec["max_staleness"], gym_workers=int(summary["gym_workers"]),
                       placement=summary["placement"], remote_gym_workers=remote)  # fmt: skip
    return [simulate_modes(card, stages, replace(config, seed=s), ("sync", "async")) for s in range(seeds)]


def measured_values(summary: dict, mode: str, key: str) -> list[float]:
    return [r["modes"][mode][key] for r in summary["repeats"]]


def speedups(summary: dict) -> list[float]:
    return [r["comparison"]["speedup"] for r in summary["repeats"]]


def placed(summary: dict, head_id: str) -> tuple[dict[str, float], int]:
    """Gym workers per node as the run placed them (async), and how many were off the head node."""
    nodes = summary["modes"]["async"]["gym_utilisation_by_node"]
    workers = {label: figures["workers"] for label, figures in nodes.items()}
    remote = round(sum(w for label, w in workers.items() if not label.endswith("/" + head_id[:8])))
    return workers, remote


def cell(values: list[float], fmt: str, ratio: bool = False) -> str:
    from harness.intervals import interval

    spread = interval(values, ratio=ratio)
    if spread["low"] is None:
        return fmt.format(spread["mean"])
    return f"{fmt.format(spread['mean'])} [{fmt.format(spread['low'])}, {fmt.format(spread['high'])}]"


def predicted(values: list[float], fmt: str) -> str:
    return f"{fmt.format(statistics.fmean(values))} ± {fmt.format(statistics.stdev(values))}"


def rank(measured: float, simulated: list[float]) -> str:
    """Where the measured mean falls among the simulated runs (pNN)."""
    below = sum(v < measured for v in simulated) + 0.5 * sum(v == measured for v in simulated)
    return f"p{round(100 * below / len(simulated))}"


def table(summary: dict, sims: list, one_node: list) -> list[str]:
    lines = ["| figure | measured (mean [95 % interval] over repeats) | predicted (mean ± sd over seeds) | "
             "measured at | predicted, every worker on the trainer's node |", "|---|---|---|---|---|"]  # fmt: skip
    for label, mode, key, fmt in FIGURES:
        values = measured_values(summary, mode, key)
        sim = [getattr(s.modes[mode], key) for s in sims]
        local = [getattr(s.modes[mode], key) for s in one_node]
        lines.append(f"| {label} | {cell(values, fmt)} | {predicted(sim, fmt)} | {rank(statistics.fmean(values), sim)} "
                     f"| {predicted(local, fmt)} |")  # fmt: skip
    values = speedups(summary)
    sim = [s.comparison["speedup"] for s in sims]
    local = [s.comparison["speedup"] for s in one_node]
    lines.append(f"| speedup | {cell(values, '{:.2f}x', ratio=True)} | {predicted(sim, '{:.2f}x')} | "
                 f"{rank(statistics.geometric_mean(values), sim)} | {predicted(local, '{:.2f}x')} |")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--card", default=DEFAULT_CARD, help="the cost card the replay-latency gym replays")
    parser.add_argument("--nodes", default="2,6,4", help="gym workers per node, the trainer's (head) node first")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-staleness", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=20, help="simulations of the configuration that ran")
    args = parser.parse_args()
    try:
        args.nodes = [int(n) for n in args.nodes.split(",")]
    except ValueError:
        parser.error(f"--nodes is gym workers per node, comma-separated, got {args.nodes!r}")
    if len(args.nodes) < 3 or min(args.nodes) < 1:
        parser.error("--nodes needs at least 3 nodes (the trainer's and two gym nodes), each with a gym worker")
    if args.repeats < 3 or args.seeds < 2:
        parser.error("--repeats must be at least 3 (an interval needs them) and --seeds at least 2")
    if not Path(args.card).is_file():
        parser.error(f"--card {args.card}: no such file")

    scratch = Path(tempfile.mkdtemp(prefix="raynodes-", dir="/tmp"))  # short: Ray's socket paths live under it
    # Everything of this cluster under its own directory; its nodes' workers import this checkout
    os.environ["RAY_TMPDIR"] = str(scratch / "ray")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    started = time.monotonic()
    cluster = start_cluster(args.nodes)
    try:
        print(f"cluster up in {time.monotonic() - started:.1f} s: {cluster.address}, gym workers per node "
              f"{args.nodes} (the head first)", file=sys.stderr)  # fmt: skip
        head_id = cluster.head_node.node_id
        summary = benchmark(cluster.address, args, scratch / "results")
    finally:
        cluster.shutdown()  # the cluster this script started, and only it
    measured_s = time.monotonic() - started
    workers, remote = placed(summary, head_id)
    sims = simulate(summary, args.card, remote, args.seeds)
    one_node = simulate(summary, args.card, 0, args.seeds)
    from harness.sim.queue import DISPATCH_S

    git = summary["git"]
    tree = ", dirty tree" if git["dirty"] else ""
    print(f"run {summary['run_id']} (commit {git['commit'][:7]}{tree}), {measured_s:.0f} s with the cluster's start; "
          f"gym workers per node (async): {workers}; {remote} of {summary['gym_workers']} off the trainer's node, "
          f"dispatch {1000 * DISPATCH_S:.2f} ms; profile {summary['profile']['name']} (emulated), placement "
          f"{summary['placement']}, {args.steps} steps of {args.batch} x {args.group}, max staleness "
          f"{args.max_staleness}, {args.repeats} repeats; {args.seeds} simulations; card {args.card} "
          "(gym latency emulated)")  # fmt: skip
    print("\n".join(table(summary, sims, one_node)))
    shutil.rmtree(scratch / "ray", ignore_errors=True)  # the cluster's sessions and logs; the run record stays
    print(f"run record: {scratch / 'results' / 'runs' / summary['run_id']}", file=sys.stderr)


if __name__ == "__main__":
    main()
