"""`harness benchmark`: the same GRPO run, sync and async, side by side on one gym."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from gyms import Gym, executors
from harness import control, costcard, errors, gpu_usage, intervals, outputs, predict, record, sandboxes
from harness.summary import RunSummary
from harness.target import Target
from trainer import bias, learning
from trainer.metrics import compare, summarize
from trainer.pipeline import RunConfig, StepRecord, run
from trainer.policies import make_policy
from trainer.policies.profiles import DEFAULT_PROFILE, HardwareProfile, load_profile
from trainer.rules.schedule import DEFAULT_SCHEDULE, check_schedule
from trainer.types import Fate


WORKERS_START_S = 600.0  # a bound for a broken machine: a Ray actor or a worker process starts in seconds


@dataclass(frozen=True)
class BenchmarkSpec:
    gym: str
    gym_options: dict[str, str]
    modes: tuple[str, ...] = ("sync", "async")
    steps: int = 10
    policy: str = "replay"
    profile: str = DEFAULT_PROFILE
    gym_workers: int | None = None
    batch_groups: int = 4
    group_size: int = 4
    max_staleness: int = 1
    oversample: int = 0  # groups in flight beyond what the steps need (trainer/buffer.py)
    seed: int = 0
    executor: str = "local"  # where gym workers run: local or ray (gyms/executors.py)
    ray_address: str | None = None
    placement: str | None = None  # replay: colocated or disaggregated (None: the replay default)
    repeats: int = 1  # sync/async pairs, in ABBA order (mode_order)
    control: bool = False  # also run the same configuration with an instant gym (harness/control.py)
    warmup: int = 0  # a learning policy's supervised format warm-up, in optimizer steps, before each mode
    sandbox: str | None = None  # bwrap, docker or process (harness/sandboxes.py); None: bwrap where it runs
    schedule: str = DEFAULT_SCHEDULE  # fifo or cost-aware (trainer/rules/schedule.py)
    card: str | None = None  # a cost card whose per-task figures are the cost predictor's prior

    def __post_init__(self) -> None:
        executors.check(self.executor, self.ray_address)
        if self.repeats < 1:
            raise ValueError("repeats must be at least 1")
        if self.oversample < 0:
            raise ValueError("oversample must be >= 0")
        if self.warmup < 0:
            raise ValueError("warmup must be >= 0")
        check_schedule(self.schedule)


def mode_order(modes: tuple[str, ...], repeat: int) -> tuple[str, ...]:
    """ABBA: even repeats run the modes in the given order, odd ones reversed, so a drift of the
    machine over the run (load, caches, thermal) falls on both modes alike."""
    return modes if repeat % 2 == 0 else tuple(reversed(modes))


def run_benchmark(
    spec: BenchmarkSpec,
    results_root: Path = outputs.RESULTS,
    on_step: Callable[[str, StepRecord], None] | None = None,
    say: Callable[[str], None] | None = None,
    target: Target | None = None,
) -> tuple[RunSummary, Path]:
    """Run every mode of `spec`, `spec.repeats` times, on one gym pool (and the control, if
    asked, on a pool of its own); write and return the run's summary.

    The summary's `modes` are the first repeat's (the report's figures come from them);
    `comparison` holds the means over repeats, `intervals` their 95 % intervals, `bias` each
    mode's slow-sample bias audit over the trajectories of all its repeats, `repeats` every
    repeat. Progress labels name the mode, the repeat and the control ("sync",
    "async 2/3", "control sync"). `say` gets a line of progress outside the steps: the gym
    workers' start-up, before the first mode (a gym with warm checkers can take most of a minute).
    With a `target`, a run with an async mode ends with the prediction for that cluster
    (harness/predict.py) in its summary's `predicted`.

    Start-up (the gym and its tasks, the profile, the first policy, a writable RESULTS with room)
    fails before the pool starts, and the run directory is made only when the first mode has
    finished, so a run that cannot start, or is interrupted in its first mode, leaves nothing."""
    torch.set_num_threads(1)  # the gym pool needs the cores; the tiny policy does not
    gym = errors.start_gym(spec.gym, spec.gym_options, sandbox=spec.sandbox)
    control_options = control.options_for(spec.gym, spec.gym_options)
    control_gym = errors.start_gym(control.PATH, control_options) if spec.control else None
    profile = load_profile(spec.profile)
    task_costs = card_costs(spec.card, gym) if spec.card else None
    policy = make_policy(spec.policy, gym, profile, spec.seed, spec.placement)
    examples = format_examples(spec, gym, policy.emulated)
    outputs.check_writable(results_root / "runs", outputs.RUN_NEEDS_BYTES, "pass --results DIR, a writable directory")
    run_dir = record.RunDir(gym.name, results_root)
    draft: dict[str, Any] = {  # summary.json as it fills (harness/summary.py's RunSummary when written)
        "gym": gym.name,
        "spec": outputs.without_paths(asdict(spec)),
        "git": record.git_commit(),
        "hardware": record.hardware(),
        # tools.sandbox: the backend, and for docker the image with its id and digests
        "tools": outputs.without_paths({**gym.describe(), **record.package_versions(), "sandbox": sandboxes.record()}),
        "policy": outputs.without_paths(policy.describe()),
        "emulated": policy.emulated,
        "placement": policy.placement,  # where the emulated stages ran
        "profile": asdict(profile) if policy.emulated else None,
    }
    workloads = [Workload(gym, spec.gym, spec.gym_options, draft, "", task_costs)]
    if control_gym is not None:
        draft["control"] = {"gym": control_gym.describe()["gym"]}
        workloads.append(Workload(control_gym, control.PATH, control_options, draft["control"], "control"))
    progress = _Progress()
    try:
        for workload in workloads:
            _measure(spec, workload, profile, run_dir, progress, on_step, say, examples)
    except KeyboardInterrupt:
        if not draft.get("modes"):
            run_dir.remove()  # Ctrl-C while the first mode's files were being written
            raise errors.BenchmarkInterrupted(progress.label, None) from None
        draft["interrupted"] = f"during the {progress.label} mode"  # harness leaderboard leaves it out
        record.write_summary(run_dir.path, draft)
        raise errors.BenchmarkInterrupted(progress.label, run_dir.path) from None
    summary = record.write_summary(run_dir.path, draft)
    costcard.write_run_card(run_dir.path, gym)  # card.json: the gym's measured costs, for harness plan and simulate
    if target is not None and "async" in spec.modes:
        draft["predicted"] = _predicted(run_dir.path, summary, target)
        summary = record.write_summary(run_dir.path, draft)
    return summary, run_dir.path


def card_costs(path: str, gym: Gym) -> dict[str, float]:
    """`--card`'s predicted gym seconds per trajectory by task (the cost predictor's prior),
    refused where the card has none for this gym's tasks: a card of another gym or suite, or one
    written before cards had per-task figures, would predict nothing."""
    card = costcard.load(Path(path))
    costs = card.task_costs()
    tasks = {t.id for t in gym.tasks("train")}
    if not tasks & set(costs):
        raise ValueError(f"the cost card {path} ({card.gym}) has no per-task figures for the {gym.name} gym's "
                         f"training tasks: write one with `harness gyms profile {gym.name} --out {path}` "
                         "with the benchmark's gym options")  # fmt: skip
    return costs


def format_examples(spec: BenchmarkSpec, gym: Gym, emulated: bool) -> list[tuple[str, str]]:
    """The pairs of `--warmup`'s format warm-up (the gym's `format_examples`, 20 per task, drawn
    from the run's seed), or none without it; refused where there is nothing to warm up."""
    if not spec.warmup:
        return []
    if emulated:
        raise ValueError("--warmup trains a learning policy (tiny, hf, vllm); the replay policy has no weights")
    examples = gym.format_examples(random.Random(spec.seed), 20)
    if not examples:
        raise ValueError(f"the {gym.name} gym gives no format examples (Gym.format_examples) for --warmup; "
                         "run without --warmup")  # fmt: skip
    return examples


def _predicted(run_dir: Path, summary: RunSummary, target: Target) -> dict[str, Any]:
    """The target's block, or why there is none: a run the simulator cannot model (every group
    an error, say) is still a measured run, and keeps its record."""
    try:
        return predict.answer(predict.from_run(run_dir, target, summary)).block
    except (ValueError, ArithmeticError) as exc:  # e.g. a zero-cost profile: nothing to pace a plan by
        return {"error": f"{type(exc).__name__}: {exc}"}


@dataclass
class Workload:
    """One gym to measure and where its results go: the summary itself, or its `control` block."""

    gym: Gym
    name: str  # what the pool's workers make (a registered name or module:Class)
    options: dict[str, str]
    block: dict[str, Any]
    subdir: str  # below the run directory: "" or "control"
    task_costs: Mapping[str, float] | None = None  # --card's figures (the control's instant gym has none)


@dataclass
class _Progress:
    label: str = ""  # the mode now running, as progress and interruption messages name it


def _measure(
    spec: BenchmarkSpec, w: Workload, profile: HardwareProfile, run_dir: record.RunDir, progress: _Progress,
    on_step: Callable[[str, StepRecord], None] | None, say: Callable[[str], None] | None,
    examples: list[tuple[str, str]],
) -> None:  # fmt: skip
    """Every repeat of every mode of one workload on one pool, into `w.block`; each mode's policy
    starts from the same weights, format-warmed on `examples` where there are some."""
    w.block["modes"], w.block["repeats"] = {}, []
    fates: dict[str, list[Fate]] = {}  # per mode, over the repeats
    pool = executors.make_pool(spec.executor, w.name, w.options, spec.gym_workers, w.gym.step_timeout_s,
                               spec.ray_address, w.gym.answer_keys())  # fmt: skip
    whose = f" for the {w.subdir}" if w.subdir else ""
    if say is not None:
        say(f"starting {pool.workers} gym workers{whose} (each starts the gym's checkers)...")
    started = time.monotonic()
    with pool:
        pool.wait_started(WORKERS_START_S)  # the first mode must not pay the workers' start-up
        if say is not None:
            say(f"gym workers{whose} up after {time.monotonic() - started:.0f} s")
        w.block["gym_workers"] = pool.workers
        for r in range(spec.repeats):
            repeat: dict[str, Any] = {"repeat": r + 1, "order": list(mode_order(spec.modes, r)), "modes": {}}
            curves: dict[str, list[StepRecord]] = {}  # a learning policy's rewards, for learning.compare
            w.block["repeats"].append(repeat)
            for mode in repeat["order"]:
                of = f"{r + 1}/{spec.repeats}" if spec.repeats > 1 else ""
                progress.label = label = " ".join(x for x in (w.subdir, mode, of) if x)
                policy = make_policy(spec.policy, w.gym, profile, spec.seed, spec.placement)  # same initial weights
                if examples:
                    policy.supervised_warmup(examples, spec.warmup)
                config = RunConfig(
                    mode=mode, steps=spec.steps, batch_groups=spec.batch_groups, group_size=spec.group_size,
                    max_staleness=spec.max_staleness, oversample=spec.oversample, seed=spec.seed,
                    schedule=spec.schedule,
                )  # fmt: skip
                callback = (lambda s, m=label: on_step(m, s)) if on_step else None
                with gpu_usage.Sampler(gpu_usage.devices_of(policy.describe())) as sampler:  # NVML, on CUDA
                    result = run(w.gym, policy, pool, config, on_step=callback, task_costs=w.task_costs)
                record.write_mode(run_dir.path / w.subdir / record.repeat_dir(r), mode, result)
                repeat["modes"][mode] = replace(summarize(result), gpu=sampler.summary(gpu_usage.measured_window(result)))
                fates.setdefault(mode, []).extend(result.fates)
                if not policy.emulated:
                    curves[mode] = result.steps
                if r == 0:
                    w.block["modes"][mode] = repeat["modes"][mode]
            if {"sync", "async"} <= set(repeat["modes"]):
                repeat["comparison"] = compare(repeat["modes"]["sync"], repeat["modes"]["async"])
                if len(curves) == 2:
                    repeat["comparison"].update(learning.compare(curves["sync"], curves["async"]))
    # Steps whose checker raised on the answer are fails, but each is a bug in the gym to look at.
    w.block["gym_pool"] = {"calls": pool.stats.calls, "errors": pool.stats.errors,
                           "gym_exceptions": pool.stats.gym_exceptions, "restarts": pool.stats.restarts}  # fmt: skip
    intervals.over_block(w.block)
    w.block["bias"] = {mode: bias.audit(f) for mode, f in fates.items()}
