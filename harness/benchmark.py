"""`harness benchmark`: the same GRPO run, sync and async, side by side on one gym."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from gyms import Gym, executors, make
from harness import costcard, errors, outputs, record
from trainer.metrics import compare, summarize
from trainer.pipeline import RunConfig, StepRecord, run
from trainer.policies import make_policy
from trainer.policies.profiles import load_profile


@dataclass(frozen=True)
class BenchmarkSpec:
    gym: str
    gym_options: dict[str, str]
    modes: tuple[str, ...] = ("sync", "async")
    steps: int = 10
    policy: str = "replay"
    profile: str = "h100-qwen3-4b"
    gym_workers: int | None = None
    batch_groups: int = 4
    group_size: int = 4
    max_staleness: int = 1
    seed: int = 0
    executor: str = "local"  # where gym workers run: local or ray (gyms/executors.py)
    ray_address: str | None = None
    placement: str | None = None  # replay: colocated or disaggregated (None: the replay default)

    def __post_init__(self) -> None:
        executors.check(self.executor, self.ray_address)


class BenchmarkInterrupted(Exception):
    """Ctrl-C during a run. The modes that finished are kept in `run_dir`, with a summary that
    says the run was interrupted; a run in which no mode finished leaves nothing (run_dir None)."""

    def __init__(self, mode: str, run_dir: Path | None) -> None:
        kept = f"the finished modes are kept in {run_dir}" if run_dir else "no mode had finished: nothing was written"
        super().__init__(f"interrupted during the {mode} mode; {kept}")
        self.mode = mode
        self.run_dir = run_dir


def start_gym(name: str, options: dict[str, str], split: str = "train") -> Gym:
    """The gym with its tasks loaded, so a missing or corrupt dataset fails here, at start-up,
    as a DatasetError naming the options, before any pool or run directory exists."""
    gym = make(name, **options)
    try:
        gym.tasks(split)
    except errors.dataset_errors() as exc:
        raise errors.DatasetError(gym.name, options, exc) from exc
    return gym


def run_benchmark(
    spec: BenchmarkSpec,
    results_root: Path = record.RESULTS,
    on_step: Callable[[str, StepRecord], None] | None = None,
) -> tuple[dict[str, Any], Path]:
    """Run every mode of `spec` on one gym pool; write and return the run's summary.

    Start-up (the gym and its tasks, the profile, the first policy, a writable RESULTS with room)
    fails before the pool starts, and the run directory is made only when the first mode has
    finished, so a run that cannot start, or is interrupted in its first mode, leaves nothing."""
    torch.set_num_threads(1)  # the gym pool needs the cores; the tiny policy does not
    gym = start_gym(spec.gym, spec.gym_options)
    profile = load_profile(spec.profile)
    policy = make_policy(spec.policy, gym, profile, spec.seed, spec.placement)
    outputs.check_writable(results_root / "runs", outputs.RUN_NEEDS_BYTES)
    run_dir = record.RunDir(gym.name, results_root)
    summary: dict[str, Any] = {
        "gym": gym.name,
        "spec": asdict(spec),
        "git": record.git_commit(),
        "hardware": record.hardware(),
        "tools": {**gym.describe(), **record.package_versions()},
        "modes": {},
    }
    pool = executors.make_pool(
        spec.executor, spec.gym, spec.gym_options, spec.gym_workers, gym.step_timeout_s, spec.ray_address
    )
    with pool:
        summary["gym_workers"] = pool.workers
        mode = spec.modes[0]
        try:
            for n, mode in enumerate(spec.modes):
                if n:  # every mode starts from the same initial weights
                    policy = make_policy(spec.policy, gym, profile, spec.seed, spec.placement)
                summary["policy"] = policy.describe()
                summary["emulated"] = policy.emulated
                summary["placement"] = policy.placement  # where the emulated stages ran
                summary["profile"] = asdict(profile) if policy.emulated else None
                config = RunConfig(
                    mode=mode, steps=spec.steps, batch_groups=spec.batch_groups, group_size=spec.group_size,
                    max_staleness=spec.max_staleness, seed=spec.seed,
                )  # fmt: skip
                callback = (lambda s, m=mode: on_step(m, s)) if on_step else None
                result = run(gym, policy, pool, config, on_step=callback)
                record.write_mode(run_dir.path, mode, result)
                summary["modes"][mode] = summarize(result)
        except KeyboardInterrupt:
            if not summary["modes"]:
                run_dir.remove()  # Ctrl-C while the first mode's files were being written
                raise BenchmarkInterrupted(mode, None) from None
            summary["interrupted"] = f"during the {mode} mode"  # harness leaderboard leaves it out
            record.write_summary(run_dir.path, summary)
            raise BenchmarkInterrupted(mode, run_dir.path) from None
    if {"sync", "async"} <= set(summary["modes"]):
        summary["comparison"] = compare(summary["modes"]["sync"], summary["modes"]["async"])
    record.write_summary(run_dir.path, summary)
    costcard.write_run_card(run_dir.path, gym)  # card.json: the gym's measured costs, for harness plan and simulate
    return summary, run_dir.path
