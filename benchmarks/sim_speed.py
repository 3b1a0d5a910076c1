"""CPU time of a plain async simulation, as docs/simulate.md quotes it: 600 steps of 16 x 4, 48 gym
workers, 4 engines, colocated, the committed verilog fixture run's card; best of 5, and the run's
figures (equal figures: the same run). An optional argument puts that many of the 48 workers on
other nodes (SimConfig.remote_gym_workers, the default dispatch). To compare two commits, run it
from a tree of each, alternating (the script itself needs only `simulate` and `SimConfig`):

    PYTHONPATH=$PWD .venv/bin/python benchmarks/sim_speed.py [REMOTE]
    git archive COMMIT | tar -x -C DIR && (cd DIR && PYTHONPATH=$PWD $OLDPWD/.venv/bin/python $OLDPWD/benchmarks/sim_speed.py)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from harness import costcard
from harness.sim import stages
from harness.sim.pipeline import SimConfig, simulate
from trainer.metrics import summarize
from trainer.policies.profiles import H100_QWEN3_4B

RUN = Path("tests/fixtures/results/runs/20261130T125643Z-verilog")


def main() -> None:
    card = costcard.run_card(RUN)
    extra = {"remote_gym_workers": int(sys.argv[1])} if len(sys.argv) > 1 else {}
    config = SimConfig(mode="async", steps=600, batch_groups=16, group_size=4, gym_workers=48, engines=4, trainers=4,
                       placement="colocated", **extra)  # fmt: skip
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        result = simulate(card, stages.from_profile(H100_QWEN3_4B), config)
        best = min(best, time.process_time() - started)
    summary = summarize(result)
    print(f"{best:.3f} s CPU; trainer idle {summary.trainer_idle_ratio:.6f}, step {summary.step_time_mean:.6f} s")


if __name__ == "__main__":
    main()
