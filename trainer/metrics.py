"""Run metrics, computed from the timeline as defined in docs/architecture.md.

The first step is warm-up: it is reported but kept out of every mean and ratio.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from trainer import attribution, bias
from trainer.records import Record
from trainer.timeline import Span, Timeline

if TYPE_CHECKING:  # the pipeline imports torch: the CLI, and every gym pool worker it spawns, must not
    from trainer.pipeline import RunResult, StepRecord


@dataclass(frozen=True)
class ModeSummary(Record):
    """What one mode of a run measured: a mode's block of summary.json. harness/catalogue.py says
    how each figure is labelled and shown. None: not measured (a simulated run has no reward, bias
    audit or wait split)."""

    mode: str
    config: dict[str, Any]  # the RunConfig
    placement: str | None
    steps: int
    measured_steps: int
    wall_s: float
    step_time_mean: float
    step_time_std: float
    train_wait_mean: float
    actor_train_mean: float
    update_weights_mean: float
    accelerator_wait_mean: float
    train_time_mean: float
    trainer_idle_ratio: float
    rollout_idle_ratio: float
    gym_utilisation: float
    gym_utilisation_by_node: dict[str, dict[str, Any]]
    samples_per_s: float
    reward_mean: float | None
    pass_rate: float | None
    staleness_mean: float
    staleness_histogram: dict[str, int]
    accounting: dict[str, Any]
    ideal_step_time: float
    stage_per_step: dict[str, float]
    rollout_train_rate_ratio: float
    step_time_lag1_autocorrelation: float | None
    oscillation: str
    warmup_step_time: float
    # Figures added after the first published runs: None in a run recorded before them. A new
    # figure joins these, so that every recorded run still loads (harness/rundir.py).
    wait_split: dict[str, float] | None = None  # what the trainer waited on (trainer/attribution.py)
    wait_split_per_step: list[dict[str, float]] | None = None
    gym_wait_share: float | None = None
    bias: dict[str, Any] | None = None  # the slow-sample bias audit (trainer/bias.py)
    accelerator_idle_ratio: float | None = None
    weight_sync: dict[str, Any] | None = None  # an engine that swaps weights in place (vllm)
    gym_s_per_trained_sample: float | None = None  # the gym pool's cost of a trained sample, dropped work included
    gpu: dict[str, Any] | None = None  # the GPU's own sampling, added by the benchmark (harness/gpu_usage.py)
    multi_turn: dict[str, Any] | None = None  # token consistency of multi-turn episodes (`multi_turn`)


def busy_in(spans: Sequence[Span], start: float, end: float) -> float:
    """Seconds the spans cover inside [start, end] (spans of one resource do not overlap)."""
    return sum(max(0.0, min(s.end, end) - max(s.start, start)) for s in spans)


def node_utilisation(result: RunResult, gym_spans: Sequence[Span], start: float, end: float) -> dict[str, dict]:
    """Per node: gym worker-seconds there, busy seconds, and utilisation inside [start, end].

    A slot's worker counts towards the node it ran on at the time (its first one before
    that), so the nodes' worker-seconds add up to workers x window, and a one-node run's
    utilisation equals `gym_utilisation`. Empty when the pool reported no worker nodes.
    """
    history: dict[int, list[tuple[float, str]]] = {}
    for p in result.worker_nodes:
        history.setdefault(p.slot, []).append((result.timeline.at(p.since), p.node))
    worker_s: dict[str, float] = {}
    for placed in history.values():
        placed.sort()
        for i, (since, node) in enumerate(placed):
            lo = start if i == 0 else max(since, start)
            hi = end if i == len(placed) - 1 else min(placed[i + 1][0], end)
            worker_s[node] = worker_s.get(node, 0.0) + max(0.0, hi - lo)
    busy = dict.fromkeys(worker_s, 0.0)
    for span in gym_spans:
        placed = history.get(int(span.resource.removeprefix("gym-")))
        if placed:
            node = next((n for since, n in reversed(placed) if since <= span.start), placed[0][1])
            busy[node] += busy_in([span], start, end)
    window = max(end - start, 1e-9)
    return {
        node: {
            "workers": worker_s[node] / window,
            "busy_s": busy[node],
            "utilisation": busy[node] / max(worker_s[node], 1e-9),
        }
        for node in sorted(worker_s)
    }


def covered(spans: Sequence[Span], start: float, end: float) -> float:
    """Seconds of [start, end] under at least one of the spans, which may overlap."""
    total, reach = 0.0, start
    for s in sorted(spans, key=lambda s: s.start):
        lo, hi = max(s.start, reach), min(s.end, end)
        if hi > lo:
            total += hi - lo
        reach = max(reach, min(s.end, end))
    return total


def lag1_autocorrelation(xs: Sequence[float]) -> float | None:
    if len(xs) < 3:
        return None
    mean = statistics.fmean(xs)
    var = sum((x - mean) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return sum((a - mean) * (b - mean) for a, b in zip(xs, xs[1:])) / var


def oscillation_verdict(mode: str, rate_ratio: float, autocorr: float | None) -> str:
    if mode == "sync":
        return "synchronous: the stages run one after another, so there is no pipeline to oscillate"
    if rate_ratio > 1 and autocorr is not None and autocorr < -0.3:
        return (
            "oscillating: rollout is slower than training and step times alternate long/short "
            "(a depth-1 pipeline bubble); add gym workers or rollout capacity, or raise max_staleness"
        )
    if rate_ratio > 1:
        return "rollout-bound: the trainer waits for data; add gym workers or rollout capacity"
    return "training-bound: rollout keeps ahead of training; no oscillation expected"


def accelerator_idle(result: RunResult, generate: Sequence[Span], start: float, end: float) -> float | None:
    """Colocated placement only: the share of [start, end] in which the one accelerator pool did
    nothing, neither generating nor training (its spans never overlap there). The trainer idle
    ratio counts the pool's generation time as idle too; this does not. None otherwise: separate
    rollout and training accelerators have an idle ratio each (rollout and trainer idle)."""
    if result.placement != "colocated":
        return None
    trained = [s for s in result.timeline.spans if s.resource == "trainer" and s.kind in ("actor_train", "update_weights")]
    return 1 - (busy_in(generate, start, end) + busy_in(trained, start, end)) / max(end - start, 1e-9)


def _weight_sync(tl: Timeline, start: float, end: float, n: int, step_time: float) -> dict | None:
    """An engine that swaps weights in place (vllm): the drain before each load, the load, and
    the time weights took to reach the engine per step (the trainer's update_weights and the
    load, overlaps counted once) as a share of the step. None for other policies."""
    loads, drains = tl.select("engine-weights", "weight_load"), tl.select("engine-weights", "drain")
    if not loads:
        return None
    syncing = covered([*loads, *tl.select("trainer", "update_weights")], start, end) / n
    return {
        "updates": len(loads),
        "drain_s_mean": statistics.fmean(s.duration for s in drains),
        "drain_s_max": max(s.duration for s in drains),
        "weight_load_s_mean": statistics.fmean(s.duration for s in loads),
        "per_step_s": syncing,
        "share_of_step": syncing / max(step_time, 1e-9),
        "versions_served": sorted({s.version for s in tl.select("rollout", "generate")}),
    }


def summarize(result: RunResult) -> ModeSummary:
    steps = result.steps
    measured = steps[1:] if len(steps) > 1 else steps
    start, end = (steps[0].end if len(steps) > 1 else 0.0), steps[-1].end
    window = max(end - start, 1e-9)
    n = len(measured)
    tl = result.timeline
    step_times = [s.step_time for s in measured]
    generate = tl.select("rollout", "generate")
    gym_spans = [s for s in tl.spans if s.kind == "gym_step"]
    gym_busy = busy_in(gym_spans, start, end)
    trained = sum(s.trajectories for s in measured)
    train_per_step = statistics.fmean(s.actor_train + s.update_weights for s in measured)
    gen_per_step = busy_in(generate, start, end) / n
    gym_per_step = gym_busy / result.pool_workers / n
    if result.placement == "colocated":  # one accelerator pool: generation and training take turns
        ideal = max(gen_per_step + train_per_step, gym_per_step)
    else:  # disaggregated (or real hardware): each stage on its own
        ideal = max(gen_per_step, gym_per_step, train_per_step)
    accelerator_wait = tl.select("trainer", "accelerator_wait")
    rate_ratio = max(gen_per_step, gym_per_step) / max(train_per_step, 1e-9)
    autocorr = lag1_autocorrelation(step_times)
    weight_sync = _weight_sync(tl, start, end, n, statistics.fmean(step_times))
    per_step = attribution.split_waits(tl.spans, [s.step for s in steps], result.config.staleness)
    measured_split = per_step[1:] if per_step is not None and len(per_step) > 1 else per_step
    return ModeSummary.from_json({
        "mode": result.config.mode,
        "config": asdict(result.config),
        "placement": result.placement,
        "steps": len(steps),
        "measured_steps": n,
        "wall_s": result.wall,
        "step_time_mean": statistics.fmean(step_times),
        "step_time_std": statistics.pstdev(step_times),
        "train_wait_mean": statistics.fmean(s.train_wait for s in measured),
        # what the trainer waited on (trainer/attribution.py); None for a simulated run's timeline
        "wait_split": attribution.mean_split(measured_split) if measured_split is not None else None,
        "wait_split_per_step": per_step,
        "gym_wait_share": attribution.gym_share(measured_split) if measured_split is not None else None,
        "actor_train_mean": statistics.fmean(s.actor_train for s in measured),
        "update_weights_mean": statistics.fmean(s.update_weights for s in measured),
        "weight_sync": weight_sync,
        "accelerator_wait_mean": busy_in(accelerator_wait, start, end) / n,
        "train_time_mean": train_per_step,
        "trainer_idle_ratio": sum(s.train_wait for s in measured) / max(sum(step_times), 1e-9),
        "rollout_idle_ratio": 1 - busy_in(generate, start, end) / window,
        "accelerator_idle_ratio": accelerator_idle(result, generate, start, end),
        "gym_utilisation": gym_busy / (result.pool_workers * window),
        "gym_utilisation_by_node": node_utilisation(result, gym_spans, start, end),
        "samples_per_s": trained / window,
        # the gym pool's cost of a trained sample: dropped trajectories' gym work included
        "gym_s_per_trained_sample": gym_busy / trained if trained else None,
        "reward_mean": statistics.fmean(s.reward_mean for s in measured),
        "pass_rate": statistics.fmean(s.pass_rate for s in measured),
        "staleness_mean": statistics.fmean(s.staleness_mean for s in measured),
        "staleness_histogram": {str(k): v for k, v in sorted(result.staleness.items())},
        "bias": bias.audit(result.fates) if result.fates else None,  # None: not recorded (a simulated run)
        "accounting": {**asdict(result.accounting), "in_flight": result.accounting.in_flight,
                       "balanced": result.accounting.balanced()},  # fmt: skip
        "ideal_step_time": ideal,
        "stage_per_step": {"generate": gen_per_step, "gym": gym_per_step, "train": train_per_step},
        "rollout_train_rate_ratio": rate_ratio,
        "step_time_lag1_autocorrelation": autocorr,
        "oscillation": oscillation_verdict(result.config.mode, rate_ratio, autocorr),
        "warmup_step_time": steps[0].step_time,
        "multi_turn": multi_turn(steps),
    })


def multi_turn(steps: Sequence[StepRecord]) -> dict[str, Any]:
    """The trained trajectories of every step, warm-up included: how many spanned several turns,
    the share of their later turns whose prompt ids extended the turn before's sequence (1.0: the
    trainer stops a run at the first that does not), the episodes ended by the context's limit,
    and the tokens the learner ran over per step (the replay policy: the emulated ones)."""
    counts = {k: int(sum(s.stats.get(k, 0) for s in steps)) for k in
              ("multi_turn_trajectories", "prefix_checks", "prefix_matches", "truncated_by_context")}  # fmt: skip
    learner = [s.stats.get("learner_tokens", s.stats.get("tokens")) for s in steps[1:] or steps]
    return {
        "trajectories": counts["multi_turn_trajectories"],
        "prefix_match_rate": counts["prefix_matches"] / counts["prefix_checks"] if counts["prefix_checks"] else None,
        "truncated_by_context": counts["truncated_by_context"],
        "learner_tokens_per_step": statistics.fmean(learner) if None not in learner and learner else None,
    }


MIN_MEASURED_STEPS = 3  # a speedup of fewer measured steps per mode is no measurement (printed as such)


def compare(sync: ModeSummary, async_: ModeSummary) -> dict[str, float]:
    """Speedup of async over sync on the same batch configuration, and how close to ideal."""
    speedup = sync.step_time_mean / async_.step_time_mean
    ideal_speedup = sync.step_time_mean / async_.ideal_step_time
    return {
        "speedup": speedup,
        "ideal_speedup": ideal_speedup,
        "achieved_over_ideal": speedup / ideal_speedup,
        "trainer_idle_ratio_sync": sync.trainer_idle_ratio,
        "trainer_idle_ratio_async": async_.trainer_idle_ratio,
        "idle_drop": sync.trainer_idle_ratio - async_.trainer_idle_ratio,
    }
