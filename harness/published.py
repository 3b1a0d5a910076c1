"""Published async-vs-sync tables as simulator checks: `harness simulate --published NAME`.

A published setup (harness/published/NAME.json, or any file of that shape; docs/simulate.md
describes the format) is one system's sync and async runs of one configuration: its batch,
group, response lengths, placement, staleness, accelerators, the trainer's stage times per mode
(inputs: the simulator does not predict how long training takes) and what the source measured
(step time, trainer idle ratio, speedup, oscillation). The simulator predicts generation and the
waits from a hardware profile (trainer/policies/profiles.py: a built-in name, a profile JSON, or
the setup's own figures inline, where no built-in profile fits its hardware) and prints them
beside the published figures, each idle ratio by the statistic the source used (`idle_statistic`):
`ratio_of_means` (total wait over total step time, as trainer/metrics.py) or
`mean_of_step_ratios` (the mean of each step's wait / step time, which an oscillating series
pulls down).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.costcard import CostCard
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig, simulate
from harness.sim.stages import from_profile
from trainer.metrics import summarize
from trainer.policies.profiles import HardwareProfile, load_profile
from trainer.rules.placement import PLACEMENTS

SHIPPED = Path(__file__).parent / "published"
STATISTICS = ("ratio_of_means", "mean_of_step_ratios")
MODES = ("sync", "async")


@dataclass(frozen=True)
class Setup:
    name: str
    system: str
    source: dict[str, str]  # citation, url, and where in it each figure is
    # Generation rates: a built-in name, a profile JSON, or inline (a dict of HardwareProfile's fields:
    # generate_s_per_token, decode_s_per_token, generate_call_s, ..., with `sources` saying whence each)
    profile: str | dict[str, Any]
    batch_groups: int
    group_size: int
    response_max: int
    response_mean: int  # assumed where the source gives only the cap: response_mean_note says so
    response_mean_note: str
    # Each may be one value for both modes, or {"sync": ..., "async": ...} where the source compares a
    # colocated sync run with a disaggregated async one on other accelerators (verl's one-step-off table)
    placement: str | dict[str, str]
    max_staleness: int
    rollout_groups: int | None  # groups generating at once (the rollout's concurrency); None: as RunConfig
    engines: int | dict[str, int]
    trainers: int | dict[str, int]
    accelerators: str  # in words: what serves as an engine and a trainer
    stages: dict[str, dict[str, float]]  # per mode: train_time_s, update_weights_s
    published: dict[str, Any]  # per mode: step_time_s, trainer_idle (0-1), oscillation; and speedup
    idle_statistic: dict[str, str]  # per mode: one of STATISTICS
    steps: int = 40
    seeds: int = 3
    # What the source's system does that a user states (SimConfig's options of the same names): its
    # disaggregated rollout engines pause while update_weights loads new weights; its rollout worker
    # starts at most one new group per this many seconds
    pause_engines_on_update: bool = False
    group_start_interval_s: float = 0.0
    # its rollout submits the groups that start together as one generate call (verl's one-step-off)
    one_call_per_start: bool = False
    model_note: str = ""  # why those options, from the source

    def of(self, field: str, mode: str) -> Any:
        """A field that may be per mode (placement, engines, trainers): its value in `mode`."""
        value = getattr(self, field)
        return value[mode] if isinstance(value, dict) else value

    def hardware(self) -> HardwareProfile:
        """The generation rates: the named profile, or the setup's inline one."""
        if isinstance(self.profile, dict):
            return HardwareProfile(**{"name": f"{self.name} (inline)", "description": "", **self.profile})
        return load_profile(self.profile)

    @property
    def profile_name(self) -> str:
        return self.profile if isinstance(self.profile, str) else f"{self.name} (inline)"


def names() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.json"))


def load(name_or_path: str) -> Setup:
    """A shipped setup by name, or a file; one ValueError line naming what is wrong."""
    path = SHIPPED / f"{name_or_path}.json"
    if not path.is_file():
        path = Path(name_or_path)
        if not path.is_file():
            raise ValueError(f"unknown published setup {name_or_path!r}: use one of {', '.join(names())} or a JSON file")
    try:
        data = json.loads(path.read_text())
        setup = Setup(**data)
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a published setup: {exc}") from None
    _check(setup, path)
    return setup


def _check(setup: Setup, path: Path) -> None:
    def bad(what: str) -> ValueError:
        return ValueError(f"{path} is not a published setup: {what}")

    for field in ("placement", "engines", "trainers"):
        value = getattr(setup, field)
        if isinstance(value, dict) and set(value) != set(MODES):
            raise bad(f"{field} is one value or one per mode (sync and async), got {sorted(value)}")
    for mode in MODES:
        placement = setup.of("placement", mode)
        if placement not in PLACEMENTS:
            raise bad(f"placement is one of {', '.join(PLACEMENTS)}, got {placement!r}")
        if not all(isinstance(setup.of(f, mode), int) and setup.of(f, mode) >= 1 for f in ("engines", "trainers")):
            raise bad(f"engines and trainers ({mode}) must be whole numbers, at least 1")
        if placement == "colocated" and setup.of("engines", mode) != setup.of("trainers", mode):
            raise bad(f"colocated ({mode}) is one pool that generates and trains: engines and trainers must be equal")
    try:
        setup.hardware()
    except (TypeError, ValueError) as exc:
        raise bad(f"profile: {exc}") from None
    for mode in MODES:
        if set(setup.stages.get(mode, {})) != {"train_time_s", "update_weights_s"}:
            raise bad(f"stages.{mode} needs exactly train_time_s and update_weights_s")
        if setup.stages[mode]["update_weights_s"] > setup.stages[mode]["train_time_s"]:
            raise bad(f"stages.{mode}: update_weights_s is part of train_time_s and cannot exceed it")
        if not {"step_time_s", "trainer_idle"} <= set(setup.published.get(mode, {})):
            raise bad(f"published.{mode} needs step_time_s and trainer_idle")
        if setup.idle_statistic.get(mode) not in STATISTICS:
            raise bad(f"idle_statistic.{mode} is one of {', '.join(STATISTICS)}")
    if "speedup" not in setup.published:
        raise bad("published needs speedup")
    if not 0 < setup.response_mean <= setup.response_max:
        raise bad("response_mean must be positive and at most response_max")
    if not {"citation", "url"} <= set(setup.source):
        raise bad("source needs citation and url")
    if setup.pause_engines_on_update and setup.of("placement", "async") != "disaggregated":
        raise bad("pause_engines_on_update is for disaggregated placement (async), and pauses only there")
    if not setup.group_start_interval_s >= 0:
        raise bad("group_start_interval_s must be 0 or more seconds")


@dataclass(frozen=True)
class ModeFigures:
    step_time_s: float
    trainer_idle: float  # by the setup's statistic for this mode
    oscillating: bool
    step_time_lag1: float | None


def _card(setup: Setup) -> CostCard:
    """Generation-bound setups: one-turn episodes whose check costs nothing (a math answer)."""
    return CostCard(gym="published", source=f"published setup {setup.name}", tools={},
                    service_s=Distribution.constant(0.0), turns=(1.0,), error_rate=0.0, timeout_rate=0.0,
                    workers=1, calls=0)  # fmt: skip


def predict(setup: Setup) -> dict[str, Any]:
    """Sync and async simulated `seeds` times each; the means of the figures the source reports."""
    profile = replace(setup.hardware(), response_tokens=setup.response_mean)
    base = from_profile(profile)
    card = _card(setup)
    figures: dict[str, ModeFigures] = {}
    for mode in MODES:
        stage = setup.stages[mode]
        # slime's train_time holds more than actor_train (e.g. the reference model's log-probs):
        # the simulated trainer is busy train_time_s per step, update_weights_s of it publishing.
        stages = replace(base, train_fixed_s=Distribution.constant(stage["train_time_s"] - stage["update_weights_s"]),
                         train_s_per_token=0.0, update_weights_s=Distribution.constant(stage["update_weights_s"]))
        runs = []
        pause = setup.pause_engines_on_update and setup.of("placement", mode) == "disaggregated"
        for seed in range(setup.seeds):
            config = SimConfig(mode=mode, steps=setup.steps, batch_groups=setup.batch_groups,
                               group_size=setup.group_size, max_staleness=setup.max_staleness,
                               rollout_threads=setup.rollout_groups if mode == "async" else None,
                               engines=setup.of("engines", mode), trainers=setup.of("trainers", mode),
                               placement=setup.of("placement", mode),
                               gym_workers=setup.batch_groups * setup.group_size, seed=seed,
                               pause_engines_on_update=pause,
                               group_start_interval_s=setup.group_start_interval_s,
                               one_call_per_start=setup.one_call_per_start)  # fmt: skip
            result = simulate(card, stages, config)
            summary = summarize(result)
            measured = result.steps[1:]
            per_step = statistics.fmean(s.train_wait / s.step_time for s in measured if s.step_time > 0)
            idle = summary.trainer_idle_ratio if setup.idle_statistic[mode] == "ratio_of_means" else per_step
            runs.append(ModeFigures(summary.step_time_mean, idle, summary.oscillation.startswith("oscillating"),
                                    summary.step_time_lag1_autocorrelation))  # fmt: skip
        lags = [r.step_time_lag1 for r in runs if r.step_time_lag1 is not None]
        figures[mode] = ModeFigures(statistics.fmean(r.step_time_s for r in runs),
                                    statistics.fmean(r.trainer_idle for r in runs),
                                    sum(r.oscillating for r in runs) * 2 > len(runs),
                                    statistics.fmean(lags) if lags else None)  # fmt: skip
    speedup = figures["sync"].step_time_s / figures["async"].step_time_s
    return {"figures": figures, "speedup": speedup}


def compare(setup: Setup) -> dict[str, Any]:
    """Predicted beside published, as `harness simulate --published NAME --json` prints it."""
    predicted = predict(setup)
    rows: dict[str, Any] = {}
    for mode in MODES:
        mine, theirs = predicted["figures"][mode], setup.published[mode]
        rows[mode] = {
            "step_time_s": {"published": theirs["step_time_s"], "predicted": mine.step_time_s},
            "trainer_idle": {"published": theirs["trainer_idle"], "predicted": mine.trainer_idle,
                             "statistic": setup.idle_statistic[mode]},
            "oscillation": {"published": bool(theirs.get("oscillation", False)), "predicted": mine.oscillating,
                            "step_time_lag1": mine.step_time_lag1},
        }  # fmt: skip
    rows["speedup"] = {"published": setup.published["speedup"], "predicted": predicted["speedup"]}
    return {"name": setup.name, "system": setup.system, "source": setup.source, "profile": setup.profile_name, **rows}


def lines(result: dict[str, Any]) -> list[str]:
    """The comparison as plain lines."""
    out = [f"{result['name']}: {result['system']} (generation: profile {result['profile']}, emulated)",
           f"source: {result['source']['citation']} <{result['source']['url']}>"]  # fmt: skip
    for mode in MODES:
        r = result[mode]
        idle = r["trainer_idle"]
        out.append(f"{mode}: step_time {r['step_time_s']['predicted']:.1f} s predicted vs "
                   f"{r['step_time_s']['published']:.1f} s published; trainer idle {idle['predicted']:.1%} vs "
                   f"{idle['published']:.1%} ({(idle['predicted'] - idle['published']) * 100:+.1f} points, "
                   f"{idle['statistic'].replace('_', ' ')})")  # fmt: skip
        osc = r["oscillation"]
        if mode == "async" and (osc["predicted"] or osc["published"]):
            lag = osc["step_time_lag1"]
            out.append(f"async oscillation: {'simulated' if osc['predicted'] else 'not simulated'} (step-time lag-1 "
                       f"autocorrelation {'-' if lag is None else f'{lag:+.2f}'}), "
                       f"{'published' if osc['published'] else 'not published'}")  # fmt: skip
    s = result["speedup"]
    out.append(f"speedup {s['predicted']:.2f}x predicted vs {s['published']:.2f}x published "
               f"({s['predicted'] / s['published'] - 1:+.1%})")  # fmt: skip
    return out
