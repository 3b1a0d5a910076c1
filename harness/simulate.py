"""`harness simulate`: the pipeline simulator, and its check against real runs (`--run`).

A simulation reports what `harness benchmark` reports, computed by the same code
(trainer.metrics): trainer idle ratio, step time, samples/s, staleness, and the speedup of
async over sync. Reward is not modelled, so it is left out. Where the card has per-task
figures, each trajectory has a fate, and each mode the slow-sample bias audit (trainer/bias.py):
slow/fast acceptance and the share of gym time that was dropped stale.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rich.table import Table

from harness.costcard import CostCard, find_card, load, run_card, task_order
from harness.rundir import find_run, load_run
from harness.sim.pipeline import SimConfig, simulate
from harness.sim.stages import Stages, from_profile, from_run
from harness.summary import RunSummary
from trainer.metrics import ModeSummary, compare, summarize
from trainer.policies.profiles import load_profile
from trainer.records import Record

NOT_MODELLED = ("reward_mean", "pass_rate")


@dataclass(frozen=True)
class Simulated(Record):
    """Every mode simulated on one configuration, as a benchmark reports them; `harness simulate
    --json` prints it."""

    gym: str
    card: str  # the cost card's source
    stages: str  # where the accelerator stages' costs came from
    placement: str
    modes: dict[str, ModeSummary]  # reward and pass rate are not modelled: None
    ready_depth: dict[str, dict[str, float]]  # per mode: the ready groups left when a batch is taken (mean, max)
    comparison: dict[str, float] | None = None
    card_from: str | None = None  # how `harness simulate` found the card


def simulate_modes(card: CostCard, stages: Stages, config: SimConfig, modes: tuple[str, ...]) -> Simulated:
    """Every mode on the same configuration."""
    figures, depth = {}, {}
    for mode in modes:
        result = simulate(card, stages, replace(config, mode=mode))
        measured = summarize(result)
        engines = {"gym_workers": config.gym_workers, "engines": config.engines, "trainers": config.trainers}
        figures[mode] = replace(measured, **dict.fromkeys(NOT_MODELLED), config={**measured.config, **engines})
        depths = [d for _, d in result.depth_series[1:]] or [0]  # ready groups left when a batch is taken
        depth[mode] = {"mean": statistics.fmean(depths), "max": max(depths)}
    comparison = compare(figures["sync"], figures["async"]) if {"sync", "async"} <= set(modes) else None
    return Simulated(card.gym, card.source, stages.source, config.placement, figures, depth, comparison)


# -- fidelity: a real run against its own simulation ----------------------------------------

# (label, summary key, format) of the side-by-side table
COMPARED = (
    ("trainer idle ratio", "trainer_idle_ratio", ".1%"),
    ("avg step_time (s)", "step_time_mean", ".2f"),
    ("avg train_wait (s)", "train_wait_mean", ".2f"),
    ("samples / s", "samples_per_s", ".2f"),
    ("gym pool utilisation", "gym_utilisation", ".1%"),
    ("staleness mean", "staleness_mean", ".2f"),
)


@dataclass(frozen=True)
class Fidelity:
    run_id: str
    gym: str
    repeats: int
    config: SimConfig
    modes: tuple[str, ...]
    measured: RunSummary
    predicted: list[Simulated]  # one per repeat

    def predicted_mean(self, mode: str, key: str) -> tuple[float, float]:
        values = [p["modes"][mode][key] for p in self.predicted]
        return statistics.fmean(values), statistics.pstdev(values)

    def rank(self, mode: str, key: str) -> float:
        """Percentile of the measured figure among the simulated ones (ties count half): a run
        of a few steps is one noisy draw, and this says how unusual a draw it is."""
        return _percentile(self.measured["modes"][mode][key], [p["modes"][mode][key] for p in self.predicted])

    def acceptance_rank(self, mode: str) -> float | None:
        """The measured slow/fast acceptance's percentile among the simulated ones (as `rank`)."""
        measured = self.acceptance(mode)[1]
        values = self._acceptances(mode)
        return None if measured is None or not values else _percentile(measured, values)

    def _acceptances(self, mode: str) -> list[float]:
        biases = [p["modes"][mode]["bias"] for p in self.predicted]
        return [b["slow_fast_acceptance"] for b in biases if b is not None and b["slow_fast_acceptance"] is not None]

    def acceptance(self, mode: str) -> tuple[tuple[float, float] | None, float | None]:
        """Slow/fast acceptance (trainer/bias.py): predicted (mean, sd over the simulations that have
        one: the card has per-task figures, and both quartiles decided something) and measured
        (the run's `bias` block, pooled over its repeats); None where there is none."""
        values = self._acceptances(mode)
        predicted = (statistics.fmean(values), statistics.pstdev(values)) if values else None
        measured = (self.measured.bias.get(mode) or {}).get("slow_fast_acceptance")
        return predicted, measured

    def speedup(self) -> tuple[float, float] | None:
        if not self.measured.comparison:
            return None
        values = [p["comparison"]["speedup"] for p in self.predicted]
        return statistics.fmean(values), statistics.pstdev(values)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"run_id": self.run_id, "gym": self.gym, "repeats": self.repeats,
                               "config": asdict(self.config), "modes": {}}  # fmt: skip
        for mode in self.modes:
            out["modes"][mode] = {
                key: {"measured": self.measured["modes"][mode][key], "predicted": self.predicted_mean(mode, key)[0],
                      "predicted_sd": self.predicted_mean(mode, key)[1]}
                for _, key, _ in COMPARED
            }  # fmt: skip
        for mode in self.modes:
            predicted, measured = self.acceptance(mode)
            out["modes"][mode]["slow_fast_acceptance"] = {
                "measured": measured, "predicted": predicted and predicted[0], "predicted_sd": predicted and predicted[1]}
        if (speedup := self.speedup()) is not None:
            out["speedup"] = {"measured": self.measured["comparison"]["speedup"], "predicted": speedup[0],
                              "predicted_sd": speedup[1]}  # fmt: skip
        return out


def resimulate(run: str, results_root: Path, repeats: int = 100, seed: int = 0) -> Fidelity:
    """Simulate a real run from its own measurements (gym_step, generate, generate_request,
    actor_train and update_weights spans, its tasks' step times where its card has them; its
    batch, group, staleness, over-sampling, gym workers, steps and schedule), `repeats` times
    with different seeds: a run of a few steps is itself one noisy sample."""
    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    path = find_run(run, results_root)
    recorded = load_run(path)
    summary = recorded.summary
    config = replace(config_of(summary), task_order=task_order(path))
    card, stages, modes = run_card(path, recorded), from_run(recorded), tuple(recorded.modes)
    predicted = [simulate_modes(card, stages, replace(config, seed=seed + i), modes) for i in range(repeats)]
    return Fidelity(recorded.run_id, summary.gym, repeats, config, modes, summary, predicted)


def config_of(summary: RunSummary) -> SimConfig:
    """The simulator's configuration of a benchmark run: its batch, group, staleness,
    over-sampling, gym workers, steps, placement and schedule."""
    spec = summary.spec
    return SimConfig(
        steps=int(spec["steps"]), batch_groups=int(spec["batch_groups"]), group_size=int(spec["group_size"]),
        max_staleness=int(spec["max_staleness"]), oversample=_oversample(summary),
        gym_workers=int(summary.gym_workers or 1),
        placement=summary.placement or "disaggregated",  # real stages: their own hardware
        schedule=spec["schedule"],  # "fifo" for runs from before the scheduler (harness/rundir.py's upgrade)
    )  # fmt: skip


def _oversample(summary: RunSummary) -> int:
    """A run's over-sampling, from its modes' configs (or its spec); 0 for runs from before it."""
    default = summary.spec["oversample"] or 0
    found = {int(figures.config.get("oversample", default)) for figures in summary.modes.values()}
    if len(found) > 1:
        raise ValueError(f"run {summary.run_id}: its modes over-sampled differently ({sorted(found)}); "
                         "a re-simulation models one configuration: re-simulate a run of one oversample")  # fmt: skip
    return found.pop()


def fidelity_table(fid: Fidelity) -> Table:
    table = Table("metric", *(f"{m} {col}" for m in fid.modes for col in ("predicted", "measured")))
    for label, key, fmt in COMPARED:
        cells = []
        for mode in fid.modes:
            mean, sd = fid.predicted_mean(mode, key)
            cells += [f"{mean:{fmt}} ± {sd:{fmt}}", format(fid.measured["modes"][mode][key], fmt)]
        table.add_row(label, *cells)
    if any(any(x is not None for x in fid.acceptance(mode)) for mode in fid.modes):
        cells = []
        for mode in fid.modes:
            predicted, measured = fid.acceptance(mode)
            cells += ["-" if predicted is None else f"{predicted[0]:.2f} ± {predicted[1]:.2f}",
                      "-" if measured is None else f"{measured:.2f}"]  # fmt: skip
        table.add_row("slow/fast acceptance", *cells)
    return table


def fidelity_line(fid: Fidelity) -> str:
    """Speedup and idle ratios, predicted vs measured, with the errors the targets are about."""
    parts = []
    for mode in fid.modes:
        predicted = fid.predicted_mean(mode, "trainer_idle_ratio")[0]
        measured = fid.measured["modes"][mode]["trainer_idle_ratio"]
        parts.append(f"{mode} idle {predicted:.1%} vs {measured:.1%} ({(predicted - measured) * 100:+.1f} pp, "
                     f"measured at p{fid.rank(mode, 'trainer_idle_ratio'):.0f} of the simulated runs)")  # fmt: skip
    if (speedup := fid.speedup()) is not None:
        measured = fid.measured["comparison"]["speedup"]
        parts.append(f"speedup {speedup[0]:.2f}x vs {measured:.2f}x ({speedup[0] / measured - 1:+.1%})")
    if "async" in fid.modes:
        predicted, measured = fid.acceptance("async")
        if predicted is not None and measured is not None:
            parts.append(f"async slow/fast acceptance {predicted[0]:.2f} vs {measured:.2f} "
                         f"({predicted[0] - measured:+.2f}, measured at p{fid.acceptance_rank('async'):.0f})")
    return "; ".join(parts)


MARKDOWN_HEADER = (
    "| run | sync idle, predicted / measured | async idle, predicted / measured | sync step_time (s) "
    "| async step_time (s) | speedup, predicted / measured | measured async idle at "
    "| async slow/fast acceptance, predicted / measured |\n"
    "|---|---|---|---|---|---|---|---|"
)


def fidelity_row(fid: Fidelity) -> str:
    """The run's row of the table in docs/simulate.md (MARKDOWN_HEADER); "-" for a mode it lacks.
    The run is named with its seed and steps: a replay-policy run is a function of its seed (its
    emulated times are seeded draws), so two runs with one seed are one draw, and a shorter one
    is the longer one's first steps."""

    def pair(mode: str, key: str, fmt: str) -> str:
        if mode not in fid.modes:
            return "-"
        return f"{fid.predicted_mean(mode, key)[0]:{fmt}} / {fid.measured['modes'][mode][key]:{fmt}}"

    speedup = fid.speedup()
    if speedup is None:
        speed = "-"
    else:
        measured = fid.measured["comparison"]["speedup"]
        speed = f"{speedup[0]:.2f}x / {measured:.2f}x ({speedup[0] / measured - 1:+.0%})"
    rank = f"p{fid.rank('async', 'trainer_idle_ratio'):.0f}" if "async" in fid.modes else "-"
    predicted, measured = fid.acceptance("async") if "async" in fid.modes else (None, None)
    acceptance = ("-" if predicted is None or measured is None
                  else f"{predicted[0]:.2f} / {measured:.2f} (p{fid.acceptance_rank('async'):.0f})")  # fmt: skip
    run = f"{fid.run_id} (seed {fid.measured['spec']['seed']}, {fid.config.steps} steps)"
    cells = [run, pair("sync", "trainer_idle_ratio", ".1%"), pair("async", "trainer_idle_ratio", ".1%"),
             pair("sync", "step_time_mean", ".2f"), pair("async", "step_time_mean", ".2f"), speed, rank,
             acceptance]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def _percentile(measured: float, simulated: list[float]) -> float:
    """Where `measured` falls among `simulated`, in percent (ties count half)."""
    below = sum(v < measured for v in simulated) + 0.5 * sum(v == measured for v in simulated)
    return 100 * below / len(simulated)


def summary_table(summary: Simulated) -> Table:
    modes = summary.modes
    table = Table("metric", *modes)
    for label, key, fmt in (*COMPARED, ("avg train_time (s)", "train_time_mean", ".2f"),
                            ("rollout idle ratio (mean engine)", "rollout_idle_ratio", ".1%"),
                            ("ideal step_time (s)", "ideal_step_time", ".2f")):  # fmt: skip
        table.add_row(label, *(format(m[key], fmt) for m in modes.values()))
    if summary.placement == "colocated":  # the pool's idle: neither generating nor training (both idle ratios, named alike)
        # (a pool busy all the time sums its spans to a hair past the window: -1e-16 is 0)
        table.add_row("accelerator idle ratio", *(format(max(m["accelerator_idle_ratio"], 0.0), ".1%")
                                                  for m in modes.values()))  # fmt: skip
    if any(m["bias"] is not None for m in modes.values()):  # the card has tasks: each trajectory a fate
        for label, key, fmt in (("slow/fast acceptance", "slow_fast_acceptance", ".2f"),
                                ("gym time dropped stale (share)", "gym_s_dropped_share", ".1%")):  # fmt: skip
            table.add_row(label, *("-" if m["bias"] is None or m["bias"][key] is None else format(m["bias"][key], fmt)
                                   for m in modes.values()))  # fmt: skip
    return table


def simulate_gym(
    gym: str | None, card_path: Path | None, profile: str, config: SimConfig, modes: tuple[str, ...],
    results_root: Path, options: dict[str, str] | None = None,
) -> Simulated:
    """`harness simulate` without --run: a gym's card (harness.costcard.find_card) and a profile."""
    if gym is None and card_path is None:
        raise ValueError("name a gym (--gym NAME) or a card (--card PATH), or re-simulate a run (--run RUN_ID)")
    if gym is None:
        card, where = load(card_path), str(card_path)  # type: ignore[arg-type]
    else:
        card, where, _ = find_card(gym, results_root, card_path, options)
    return replace(simulate_modes(card, from_profile(load_profile(profile)), config, modes), card_from=where)
