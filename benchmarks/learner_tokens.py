"""Learner tokens per step against turns per episode: how much the learner runs over to train a
batch of multi-turn trajectories.

The tiny policy (untrained, so every episode uses all its turns) on the math gym's addition tasks
with 1 to 4 turns, a sync run of a few steps each; every row the learner's batch holds is counted
at its unpadded length. A trainer that builds one row per turn runs over each turn's prefix again
(quadratic in turns); one sequence per trajectory runs over each token once (linear). Run from
the repository root:

    .venv/bin/python benchmarks/learner_tokens.py [--turns 1 2 3 4] [--steps 3]

The rows are counted by wrapping `Learner.batch`, whose rows are (sequence ids, spans, advantage);
the script also reads the (generation, advantage) rows of trainers before d16aa02, so it measures
a checkout of either.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from gyms import make
from gyms.pool import GymPool
from trainer.pipeline import RunConfig, run
from trainer.policies.torch_lm import tiny_policy


def row_length(row: Any) -> int:
    first = row[0]
    return len(first) if isinstance(first, list) else len(first.prompt_tokens) + len(first.response_tokens)


def measure(turns: int, steps: int, batch: int, group: int) -> dict[str, float]:
    gym = make("math", source="addition", max_turns=turns)
    policy = tiny_policy(seed=0, max_new_tokens=12, max_len=1024, drop_zero_advantage=False)
    per_step: list[int] = []
    batch_rows = policy.learner.batch

    def counted(rows: Any) -> Any:
        per_step.append(sum(row_length(r) for r in rows))
        return batch_rows(rows)

    policy.learner.batch = counted  # type: ignore[method-assign]
    with GymPool(workers=2, step_timeout_s=gym.step_timeout_s) as pool:
        run(gym, policy, pool, RunConfig(mode="sync", steps=steps, batch_groups=batch, group_size=group))
    return {"turns": turns, "learner_tokens_per_step": statistics.fmean(per_step), "steps": len(per_step)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--group", type=int, default=4)
    args = parser.parse_args()
    for turns in args.turns:
        print(json.dumps(measure(turns, args.steps, args.batch, args.group)), flush=True)


if __name__ == "__main__":
    main()
