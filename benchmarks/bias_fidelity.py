"""The slow-sample bias of published runs against their re-simulations: docs/simulate.md's table.

For each run, 100 simulations of itself (`harness simulate --run`, harness/simulate.py's
`resimulate`), async: the slow/fast acceptance predicted (mean ± sd) beside the measured one and
where the measured falls among the simulated (pNN), the share of gym time dropped stale, and the
trainer's mean staleness (the run's first repeat). Run from the repository root:

    .venv/bin/python benchmarks/bias_fidelity.py RUN_ID [RUN_ID ...] [--results results]

Each line is a markdown row without the table's setting column, which says in words what the
run's spec says.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from harness.simulate import resimulate


def row(run: str, results: Path, repeats: int) -> str:
    fid = resimulate(run, results, repeats=repeats)
    predicted, measured = fid.acceptance("async")
    if predicted is None or measured is None:
        raise SystemExit(f"run {run} has no async bias to compare (a card without tasks, or no async mode)")
    dropped = [p["modes"]["async"]["bias"]["gym_s_dropped_share"] for p in fid.predicted if p["modes"]["async"]["bias"]]
    staleness = statistics.fmean(p["modes"]["async"]["staleness_mean"] for p in fid.predicted)
    cells = [
        run,
        f"{predicted[0]:.2f} ± {predicted[1]:.2f} / {measured:.2f} (p{fid.acceptance_rank('async'):.0f})",
        f"{statistics.fmean(dropped):.1%} / {fid.measured.bias['async']['gym_s_dropped_share']:.1%}",
        f"{staleness:.2f} / {fid.measured['modes']['async']['staleness_mean']:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run ids (or directories)")
    parser.add_argument("--results", type=Path, default=Path("results"), help="the results root (default: results)")
    parser.add_argument("--repeats", type=int, default=100, help="simulations per run (default: 100)")
    args = parser.parse_args()
    for run in args.runs:
        print(row(run, args.results, args.repeats), flush=True)


if __name__ == "__main__":
    main()
