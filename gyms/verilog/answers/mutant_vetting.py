"""Choose the mutants that the gym offers as known-bad answers: `python -m gyms.verilog.answers.mutant_vetting --write`.

Every mutant of every built-in task is simulated (Icarus, SystemVerilog testbench, each task's
default vector count) under each vetted seed. A mutant is kept when it compiles, finishes,
and scores at most `MAX_REWARD` under every seed: a clear behavioural failure, not one that
hinges on a rare vector. Up to `KEEP` per task are kept, spread over the mutation operators.
Run it after adding a task or changing a reference; tests/test_verilog_mutants.py checks that
the file matches the references.

The heavy suite (`--suite heavy`, written to vetted_mutants_heavy.json) has hundreds of mutants
per design and checks of seconds each, so its mutants are first screened with a short run
(`SCREEN_VECTORS` cycles, seed 0, whose vectors are the start of the full run's); only those that
fail it are then vetted at the full default vector count under every seed, taking the operators
in turn, until `HEAVY_KEEP` are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

from gyms.base import Task
from gyms.verilog.answers.candidates import VETTED_FILES, answer, task_mutants
from gyms.verilog.answers.mutate import OPERATORS, Mutant
from gyms.verilog.episode import VerilogEpisode
from gyms.verilog.gym import VerilogGym
from gyms.verilog.tasks import SUITES, builtin_tasks, suite_tasks

SEEDS = (0, 1, 2)
MAX_REWARD = 0.9
KEEP = 6
HEAVY_KEEP = 4
SCREEN_VECTORS = 3000


@dataclass(frozen=True)
class Trial:
    reward: float
    behavioural: bool  # compiled and ran to a verdict (not a pre-check, compile or timeout failure)


def _trial(task: Task, mutant: Mutant, seed: int, gym: VerilogGym) -> Trial:
    settings = gym.settings  # its vectors: None for each task's own
    settings = replace(settings, bench=replace(settings.bench, sequences=1, seed=seed, waves=False))
    episode = VerilogEpisode(task, 1, settings)
    try:
        result = episode.step(answer(mutant.text))
    finally:
        episode.close()
    return Trial(result.reward, "checks_total" in result.info)


def vet_heavy_task(task_id: str) -> list[dict[str, object]]:
    """The kept mutants of one heavy task: screened short, then vetted at full length."""
    gym = VerilogGym(suite="heavy", tasks=task_id)
    screen = VerilogGym(suite="heavy", tasks=task_id, vectors=SCREEN_VECTORS)  # short timeouts too
    task = gym.tasks()[0]
    design = suite_tasks("heavy")[task_id]
    by_op: dict[str, list[Mutant]] = {op: [] for op in OPERATORS}
    for mutant in task_mutants(design):
        by_op[mutant.op].append(mutant)
    chosen: list[dict[str, object]] = []
    while len(chosen) < HEAVY_KEEP and any(by_op.values()):
        for op in OPERATORS:  # one of each operator in turn, so the kinds of mistakes vary
            while by_op[op] and len(chosen) < HEAVY_KEEP:
                mutant = by_op[op].pop(0)
                trial = _trial(task, mutant, SEEDS[0], screen)
                if not trial.behavioural or trial.reward > MAX_REWARD:
                    continue
                rewards = []
                for seed in SEEDS:
                    trial = _trial(task, mutant, seed, gym)
                    if not trial.behavioural or trial.reward > MAX_REWARD:
                        print(f"{task_id}: {mutant.label} failed the screen but not seed {seed} at full length "
                              f"({trial})", file=sys.stderr)  # fmt: skip
                        break
                    rewards.append(round(trial.reward, 4))
                else:
                    chosen.append({"label": mutant.label, "digest": mutant.digest, "rewards": rewards})
                    break  # the next operator
    return chosen


def vet_task(task_id: str) -> list[dict[str, object]]:
    """The kept mutants of one task, in the order the gym offers them from."""
    if task_id in suite_tasks("heavy"):
        return vet_heavy_task(task_id)
    gym = VerilogGym(tasks=task_id)
    task = gym.tasks()[0]
    design = builtin_tasks()[task_id]
    kept: dict[str, list[dict[str, object]]] = {op: [] for op in OPERATORS}
    for mutant in task_mutants(design):
        rewards = []
        for seed in SEEDS:
            trial = _trial(task, mutant, seed, gym)
            if not trial.behavioural or trial.reward > MAX_REWARD:
                break
            rewards.append(round(trial.reward, 4))
        else:
            kept[mutant.op].append({"label": mutant.label, "digest": mutant.digest, "rewards": rewards})
    chosen: list[dict[str, object]] = []
    while len(chosen) < KEEP and any(kept.values()):
        for op in OPERATORS:  # one of each operator in turn, so the kinds of mistakes vary
            if kept[op] and len(chosen) < KEEP:
                chosen.append(kept[op].pop(0))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the suite's vetted_mutants*.json (default: print a summary)")
    parser.add_argument("--gym-workers", type=int, default=2)
    parser.add_argument("--suite", choices=SUITES, default="core", help="which suite's tasks (default: core)")
    parser.add_argument("--tasks", default="", help="comma-separated task ids: vet only these, keeping the "
                        "file's other entries (with --write)")  # fmt: skip
    args = parser.parse_args(argv)
    ids = list(suite_tasks(args.suite))
    if args.tasks:
        ids = [i for i in ids if i in args.tasks.split(",")]
    path = VETTED_FILES[args.suite]
    with ProcessPoolExecutor(args.gym_workers) as pool:
        results = dict(zip(ids, pool.map(vet_task, ids)))
    for task_id, chosen in results.items():
        print(f"{task_id}: {len(chosen)} mutants kept", file=sys.stderr)
    if args.tasks and path.exists():
        results = {**json.loads(path.read_text())["tasks"], **results}
    document = {"seeds": list(SEEDS), "simulator": "icarus", "testbench": "sv", "max_reward": MAX_REWARD,
                "tasks": results}  # fmt: skip
    if args.suite == "heavy":
        document["screen_vectors"] = SCREEN_VECTORS
    if args.write:
        path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        print(f"wrote {path}", file=sys.stderr)
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
