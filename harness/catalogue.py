"""The metric catalogue: the one place that names each figure of a run.

An entry says where the figure is read in a summary, its label, unit and format, where its values
can lie, whether it gets a 95 % interval over repeats, and which views show it. The console table
(`harness benchmark`), the report's tables, the leaderboard's figure columns, the intervals
(`harness/intervals.py`) and `harness metrics` are all drawn from it; none names a figure of its own.
Adding a figure: compute it (a mode's in `trainer/metrics.py` `summarize`, with its field in
`ModeSummary`, None by default so that runs recorded before it still load), add its entry here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness import gpu_usage

Scope = Literal["mode", "comparison", "run"]
MODES = ("sync", "async")
CONSOLE, REPORT = "console", "report"  # the per-mode tables: harness benchmark's, and report.html's


@dataclass(frozen=True)
class Board:
    """One leaderboard column of a figure. `where` has three parts, each optional: "control" (the
    control's figure), then "mean", "low" or "high" (the mean over the repeats, or its 95 % interval's
    bounds), then the mode of a mode's figure. "" is a comparison's or the run's figure, "sync" the
    first repeat's, "low" the speedup's low bound, "control mean sync" the control's sync mean."""

    field: str  # the CSV column
    header: str
    where: str = ""

    @property
    def parts(self) -> tuple[bool, str | None, str | None]:
        """`where` read: (the control's?, "mean"/"low"/"high" or None, the mode or None)."""
        words = self.where.split()
        control = words[:1] == ["control"]
        words = words[control:]
        stat = words.pop(0) if words[:1] in (["mean"], ["low"], ["high"]) else None
        return control, stat, words[0] if words else None


@dataclass(frozen=True)
class Metric:
    key: str  # in a mode's block of summary.json (scope "mode"), in its "comparison" or the run's
    label: str
    meaning: str
    unit: Literal["s", "share", "times", ""] = ""
    digits: int = 2
    scope: Scope = "mode"
    domain: tuple[float, float] = (-math.inf, math.inf)
    better: Literal["lower", "higher"] | None = None  # the console's improvement column
    interval: bool = False  # a 95 % interval over the repeats, per mode for a mode's figure
    ratio: bool = False  # a ratio of times: averaged and given its interval on the log scale
    null: float | None = None  # the no-effect value: an interval that holds it is not significant
    views: frozenset[str] = frozenset({CONSOLE, REPORT})
    colocated_only: bool = False  # the views show it only for colocated placement
    board: tuple[Board, ...] = ()
    read: Callable[[Mapping[str, Any]], Any] | None = None  # from the block, when not block[key]
    describe: Callable[[Mapping[str, Any]], str] | None = None  # the views' text, when more than the value

    def value(self, block: Mapping[str, Any], mode: str | None = None) -> Any:
        """The figure in `block` (a summary, its control or one repeat); for a mode's figure, in `mode`."""
        where = self._where(block, mode)
        return self.read(where) if self.read else where.get(self.key)

    def shown(self, block: Mapping[str, Any], mode: str | None = None, seconds_unit: bool = True) -> str:
        """The figure's text in the views."""
        if self.describe:
            return self.describe(self._where(block, mode))
        return self.text(self.value(block, mode), seconds_unit)

    def _where(self, block: Mapping[str, Any], mode: str | None) -> Mapping[str, Any]:
        if self.scope == "mode":
            return ((block.get("modes") or {}).get(mode) or {}) if mode else block
        return (block.get("comparison") or {}) if self.scope == "comparison" else block

    def text(self, value: Any, seconds_unit: bool = True) -> str:
        """`value` as the views show it ('-' for none); `seconds_unit=False` leaves seconds bare (the
        console's label carries them)."""
        if value is None:
            return "-"
        if not isinstance(value, (int, float)):
            return str(value)
        if self.unit == "share":
            return f"{value:.{self.digits}%}"
        if self.unit == "times":
            return f"{value:.{self.digits}f}x"
        if self.unit == "s" and seconds_unit:
            return f"{value:.{self.digits}f} s"
        return f"{value:.{self.digits}f}"

    def interval_names(self) -> list[tuple[str, str | None]]:
        """(name in a summary's "intervals", mode) of each interval this figure gets."""
        if not self.interval:
            return []
        return [(f"{self.key}_{mode}", mode) for mode in MODES] if self.scope == "mode" else [(self.key, None)]


def _gpu_idle(mode: Mapping[str, Any]) -> float | None:
    return gpu_usage.idle_ratio(mode.get("gpu"))


def _gpu_text(mode: Mapping[str, Any]) -> str:
    """With each device's idle, or why it was not measured; '-' for a run recorded before the sampler."""
    return gpu_usage.idle_text(mode["gpu"]) if mode.get("gpu") else "-"


def _async_bias(key: str) -> Callable[[Mapping[str, Any]], Any]:
    """A figure of async's bias audit, pooled over the repeats (trainer/bias.py); None for runs before it."""
    return lambda block: ((block.get("bias") or {}).get("async") or {}).get(key)


def _multi_turn(key: str) -> Callable[[Mapping[str, Any]], Any]:
    """A figure of a mode's multi-turn block (trainer/metrics.py `multi_turn`); None for runs before it."""
    return lambda mode: (mode.get("multi_turn") or {}).get(key)


def _repeats(summary: Mapping[str, Any]) -> int:
    return len(summary.get("repeats") or []) or 1


def _errors(summary: Mapping[str, Any]) -> int:
    return sum(int(m["accounting"].get("errored", 0)) for r in (summary.get("repeats") or [summary])
               for m in r["modes"].values())  # fmt: skip


def _mean_and_bounds(field: str, header: str, where: str) -> tuple[Board, ...]:
    """The columns of a mode's figure over the repeats (where: "sync", "control sync"): its mean and
    its 95 % interval's bounds."""
    control, _, mode = where.rpartition(" ")
    stats = (("mean", "", ""), ("low", "_low", " 95% low"), ("high", "_high", " 95% high"))
    return tuple(Board(field + suffix, header + label, f"{control} {stat} {mode}".strip())
                 for stat, suffix, label in stats)  # fmt: skip


def _with_bounds(field: str, header: str) -> tuple[Board, ...]:
    """The columns of a comparison's figure: its mean over the repeats and its 95 % interval's bounds."""
    return (Board(field, header), Board(f"{field}_low", f"{header} 95% low", "low"),
            Board(f"{field}_high", f"{header} 95% high", "high"))  # fmt: skip


SHARE = (0.0, 1.0)
POSITIVE = (0.0, math.inf)

# Comparison and run figures first: the leaderboard's columns follow this order, and they lead
# with the decision (speedup and its interval); then each mode's figures, in the tables' order.
CATALOGUE: tuple[Metric, ...] = (
    Metric("speedup", "speedup",
           "sync mean step time / async mean step time; with --repeats N, the geometric mean of the N paired "
           "repeats, with its interval on the log scale ('not significant' when it holds 1)",
           "times", scope="comparison", domain=POSITIVE, interval=True, ratio=True, null=1.0, views=frozenset(),
           board=(Board("speedup", "speedup"), Board("speedup_low", "speedup 95% low", "low"),
                  Board("speedup_high", "speedup 95% high", "high"),
                  Board("control_speedup", "control speedup", "control"),
                  Board("control_speedup_low", "control speedup 95% low", "control low"),
                  Board("control_speedup_high", "control speedup 95% high", "control high"))),
    Metric("repeats", "repeats", "sync/async pairs the run measured, in ABBA order", digits=0, scope="run",
           views=frozenset(), read=_repeats, board=(Board("repeats", "repeats"),)),
    Metric("ideal_speedup", "ideal speedup",
           "sync mean step time / async ideal step time (the slowest stage's time per step); geometric mean "
           "over repeats", "times", scope="comparison", domain=POSITIVE, ratio=True, views=frozenset(),
           board=(Board("ideal_speedup", "ideal speedup"),)),
    Metric("achieved_over_ideal", "achieved/ideal",
           "speedup / ideal speedup (sync step time / async ideal step time), geometric mean over repeats",
           "share", 0, scope="comparison", domain=POSITIVE, interval=True, ratio=True, views=frozenset(),
           board=(Board("achieved_over_ideal", "achieved/ideal"),)),
    Metric("idle_drop", "trainer idle drop",
           "sync's trainer idle ratio minus async's, paired per repeat (percentage points as a share)", "share", 1,
           scope="comparison", domain=(-1.0, 1.0), interval=True, null=0.0, views=frozenset()),
    Metric("slow_fast_acceptance", "slowest / fastest acceptance, async",
           "async's slow-sample bias: the slowest gym-latency quartile's acceptance over the fastest's, pooled "
           "over the repeats (1.00: staleness drops slow and fast answers alike)", scope="run", views=frozenset(),
           read=_async_bias("slow_fast_acceptance"), board=(Board("slow_fast_async", "slow/fast acceptance async"),)),
    Metric("cost_rank_correlation", "predicted / measured gym time, rank correlation",
           "Spearman's rank correlation, over async's decided trajectories pooled over the repeats, of the gym "
           "time predicted for each as its group started (trainer/rules/cost.py) with the gym time it took: 1, "
           "the predictions order the trajectories as their checks did; 0, they say nothing of it",
           scope="run", domain=(-1.0, 1.0), views=frozenset(), read=_async_bias("cost_rank_correlation")),
    Metric("errors", "errors", "trajectories that ended in an infrastructure error, both modes, every repeat",
           digits=0, scope="run", views=frozenset(), read=_errors, board=(Board("errors", "errors"),)),
    # Learning beside speed (trainer/learning.py): a learning policy's pairs only.
    Metric("learning_speedup", "learning speedup",
           "sync's time to the target reward / async's (trainer/learning.py), geometric mean over repeats",
           "times", scope="comparison", domain=POSITIVE, interval=True, ratio=True, null=1.0, views=frozenset(),
           board=_with_bounds("learning_speedup", "learning speedup")),
    Metric("target_reward", "target reward",
           "the pair's starting reward plus half of sync's rise to its final reward", digits=3, scope="comparison",
           views=frozenset(), board=(Board("target_reward", "target reward"),)),
    *(Metric(f"time_to_target_{mode}", f"time to target, {mode}",
             f"seconds from {mode}'s start to the first step whose 5-step running mean reward reaches the target",
             "s", 0, scope="comparison", domain=POSITIVE, interval=True, views=frozenset(),
             board=_with_bounds(f"time_to_target_{mode}", f"time to target {mode}")) for mode in MODES),
    *(Metric(f"final_reward_{mode}", f"final reward, {mode}", f"{mode}'s mean reward over its last 10 steps",
             digits=3, scope="comparison", interval=True, views=frozenset(),
             board=_with_bounds(f"final_reward_{mode}", f"final reward {mode}")) for mode in MODES),
    Metric("final_reward_gap", "final reward gap",
           "async's final reward minus sync's, at equal trained samples: the quality async pays (0: none)", digits=3,
           scope="comparison", interval=True, null=0.0, views=frozenset(),
           board=_with_bounds("final_reward_gap", "final reward gap async - sync")),
    Metric("step_time_mean", "avg step_time", "mean seconds per measured step (the first step is warm-up)",
           "s", better="lower"),
    Metric("step_time_std", "step_time stddev", "standard deviation of the measured steps' times", "s"),
    Metric("train_wait_mean", "avg train_wait", "mean seconds per step the trainer waited for a full batch", "s",
           better="lower"),
    Metric("gym_wait_share", "gym share of the wait",
           "of the trainer's wait, the part spent on gym queue and gym service on each step's critical path "
           "(docs/architecture.md)", "share", 1, domain=SHARE, interval=True,
           board=(Board("gym_share_sync", "gym share of sync wait", "sync"),)),
    Metric("trainer_idle_ratio", "trainer idle ratio", "sum of train_wait over sum of step_time, measured steps",
           "share", 1, domain=SHARE, better="lower", interval=True,
           board=(*_mean_and_bounds("idle_sync", "trainer idle sync", "sync"),
                  *_mean_and_bounds("idle_async", "trainer idle async", "async"),
                  *_mean_and_bounds("control_idle_sync", "control idle sync", "control sync"),
                  *_mean_and_bounds("control_idle_async", "control idle async", "control async"))),
    Metric("gpu", "GPU-measured idle (NVML)",
           "on CUDA, the share of NVML samples (every 0.1 s, measured steps only) at 0 % utilisation, mean over "
           "the policy's devices (harness/gpu_usage.py); '-' when not measured", "share", 1, domain=SHARE,
           views=frozenset({REPORT}), read=_gpu_idle, describe=_gpu_text,
           board=(Board("gpu_idle_async", "GPU idle (NVML) async", "async"),)),
    Metric("train_time_mean", "avg train_time", "mean seconds per step of actor_train plus update_weights", "s",
           views=frozenset({CONSOLE})),
    Metric("actor_train_mean", "avg actor_train", "mean seconds per step of the optimizer step(s)", "s"),
    Metric("update_weights_mean", "avg update_weights", "mean seconds per step of moving weights to the engine",
           "s"),
    Metric("accelerator_wait_mean", "avg accelerator_wait",
           "mean seconds per step training waited behind a generate call on the shared accelerators", "s",
           colocated_only=True),
    Metric("accelerator_idle_ratio", "accelerator idle ratio",
           "the share of the window in which the shared accelerators neither generated nor trained", "share", 1,
           domain=SHARE, better="lower", colocated_only=True),
    Metric("ideal_step_time", "ideal step time",
           "the slowest stage's time per step (colocated: generation plus training against the gym)", "s",
           views=frozenset({REPORT})),
    Metric("rollout_idle_ratio", "rollout idle ratio", "the share of the window with no generate call running",
           "share", 1, domain=SHARE),
    Metric("gym_utilisation", "gym pool utilisation", "gym worker busy seconds over workers x window", "share", 1,
           domain=SHARE),
    Metric("samples_per_s", "samples / s", "trained trajectories per second of the measured window",
           better="higher", domain=POSITIVE,
           board=(Board("samples_sync", "samples/s sync", "sync"), Board("samples_async", "samples/s async", "async"))),
    Metric("gym_s_per_trained_sample", "gym time per trained sample",
           "gym worker busy seconds in the measured window over the trajectories trained in it: what one trained "
           "sample costs the gym pool, the gym work of dropped trajectories included", "s", better="lower",
           domain=POSITIVE),
    Metric("reward_mean", "reward mean", "mean batch reward over the measured steps", digits=3,
           board=(Board("reward_sync", "reward sync", "sync"), Board("reward_async", "reward async", "async"))),
    Metric("staleness_mean", "staleness mean", "mean staleness of the trained trajectories",
           board=(Board("staleness_async", "staleness async", "async"),)),
    # Multi-turn episodes as one token sequence (docs/architecture.md).
    Metric("learner_tokens_per_step", "learner tokens / step",
           "tokens the learner ran over per measured step, each trajectory's one sequence once (prompt, feedback "
           "and template tokens included); the replay policy's are emulated", digits=0, domain=POSITIVE,
           views=frozenset({REPORT}), read=_multi_turn("learner_tokens_per_step")),
    Metric("prefix_match_rate", "token prefix match",
           "of the multi-turn trajectories' later turns, the share whose prompt ids extend the turn before's "
           "prompt and response ids as sampled (1.00 required: the trainer stops a run at the first that does not)",
           "share", 1, domain=SHARE, views=frozenset({REPORT}), read=_multi_turn("prefix_match_rate")),
    Metric("truncated_by_context", "ended by the context",
           "episodes, warm-up step included, whose next turn would have outgrown the model's context: each ended "
           "there as the model's fail", digits=0, domain=POSITIVE, views=frozenset({REPORT}),
           read=_multi_turn("truncated_by_context")),
)
BY_KEY = {m.key: m for m in CATALOGUE}
RATIOS = frozenset(m.key for m in CATALOGUE if m.ratio)  # averaged on the log scale


def shown_in(view: str) -> list[Metric]:
    """The per-mode figures a view shows, in catalogue order."""
    return [m for m in CATALOGUE if view in m.views and m.scope == "mode"]
