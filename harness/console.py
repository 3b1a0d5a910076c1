"""What the commands print: tables and lines drawn from a run's summary, apart from the parsing
of their options (harness/commands/). The figures and their formats come from the metric
catalogue (harness/catalogue.py)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness import catalogue, gpu_usage
from harness.intervals import not_significant, with_interval
from harness.summary import Measured, RunSummary
from trainer.attribution import PARTS as WAIT_PARTS
from trainer.metrics import MIN_MEASURED_STEPS
from trainer.rules.placement import PLACEMENTS

console = Console()
err = Console(stderr=True)


def print_benchmark(summary: RunSummary, run_dir: Path) -> None:
    """A finished benchmark: the per-mode table, the nodes, the speedups, the trajectory accounting
    and the bias audit, then what was emulated and where the run was written."""
    profile = summary.profile or {}
    stages = f"emulated: {profile.get('name')}, {summary.placement}" if summary.emulated else "measured"
    console.print(f"\n[bold]{summary.gym}[/] · policy {summary.policy['policy']} ({stages}) · schedule "
                  f"{summary.spec.get('schedule', 'fifo')}")  # fmt: skip
    console.print(benchmark_table(summary))
    console.print(nodes_table(summary))
    for block, name in ((summary, "speedup"), (summary.control, "control speedup")):
        if block and block.comparison:
            console.print(_comparison_line(block, name))
    learned = learning_line(summary)
    if learned:
        console.print(escape(learned))
    console.print(escape(gpu_usage.idle_line(summary.modes)))  # the GPU's own account of the idle
    for name, m in summary.modes.items():
        if m.weight_sync:  # an engine that swaps weights in place (vllm)
            console.print(f"{name}: {_weight_sync_line(m.weight_sync)}")
    for name, m in summary.modes.items():
        if m.multi_turn and m.multi_turn["trajectories"]:
            console.print(f"{name}: {_multi_turn_line(m.multi_turn)}")
    for name, m in summary.modes.items():
        acc = m.accounting
        console.print(
            f"{name}: {m.oscillation}. Trajectories: generated {acc['generated']} = trained {acc['trained']}"
            f" + dropped stale {acc['dropped_stale']} + errored {acc['errored']} + in flight {acc['in_flight']}"
        )
        if summary.bias.get(name):
            console.print(f"{name}: {_bias_line(summary.bias[name])}")
    raised = (summary.gym_pool or {}).get("gym_exceptions", 0)
    if raised:
        console.print(f"[yellow]warning:[/] the gym raised on {raised} answer(s); they count as fails, but each is a "
                      "bug in the gym: look for info['gym_exception'] (harness gyms step shows one answer's)")  # fmt: skip
    if summary.emulated:
        console.print(f"[yellow]generation, training and weight sync are emulated[/] with profile "
                      f"{profile.get('name')}: {profile.get('description')}; placement "
                      f"{summary.placement}: {PLACEMENTS.get(summary.placement or '', '')}")  # fmt: skip
    if summary.predicted:
        from harness.predict import lines  # the planner's modules: loaded by the run already

        console.print()
        for line in lines(summary.predicted):
            console.print(line, markup=False, highlight=False)
    console.print(f"written: {run_dir}")


def benchmark_table(summary: RunSummary) -> Table:
    """The catalogue's console figures per mode, with the improvement of the second over the first."""
    modes = summary.modes
    table = Table("metric", *modes, *(["improvement"] if len(modes) == 2 else []))
    for metric in catalogue.shown_in(catalogue.CONSOLE):
        if metric.colocated_only and summary.placement != "colocated":
            continue
        values = [metric.value(summary, mode) for mode in modes]
        label = f"{metric.label} (s)" if metric.unit == "s" else metric.label
        cells = [metric.shown(summary, mode, seconds_unit=False) for mode in modes]
        table.add_row(label, *cells, *_improvement(metric, values))
        if metric.key == "train_wait_mean" and all(m.wait_split for m in modes.values()):
            for part in WAIT_PARTS:  # what the trainer waited on (trainer/attribution.py)
                cells = []
                for m in modes.values():
                    waited = m.wait_split[part]
                    share = f" ({waited / m.train_wait_mean:.0%})" if m.train_wait_mean > 0 else ""
                    cells.append(f"{waited:.2f}{share}")
                table.add_row(f"  wait: {part} (s)", *cells, *(["-"] if len(modes) == 2 else []))
    return table


def _improvement(metric: catalogue.Metric, values: list) -> list[str]:
    """The improvement cell of two modes' values: none for one mode, '-' where the figure has no better side."""
    if len(values) != 2:
        return []
    a, b = values
    if a is None or b is None or metric.better is None:
        return ["-"]
    return [change(a, b, metric.better)]


def change(a: float, b: float, better: str) -> str:
    """How b differs from a, one way for every row: the change as a share of a ('98.9% lower',
    '62.0% higher'; a fall to 0 is '100.0% lower'), never a ratio, which against almost nothing
    says nothing. '(worse)' when it went the way `better` ("lower" or "higher") is not; '-' when a is 0."""
    if a <= 0:
        return "-"
    if b == a:
        return "no change"
    went = "lower" if b < a else "higher"
    return f"{abs(b - a) / a:.1%} {went}" + ("" if went == better else " (worse)")


def nodes_table(summary: RunSummary) -> Table:
    """Gym utilisation per node, so a user sees where to add capacity."""
    modes = summary.modes
    table = Table(f"gym node ({summary.spec.get('executor', 'local')})", *(f"{m} utilisation" for m in modes))
    nodes = sorted({node for m in modes.values() for node in m.gym_utilisation_by_node})
    for node in nodes:
        cells = []
        for m in modes.values():
            n = m.gym_utilisation_by_node.get(node)
            cells.append(f"{n['utilisation']:.1%} of {n['workers']:.1f} workers" if n else "-")
        table.add_row(node, *cells)
    return table


def _weight_sync_line(w: dict) -> str:
    return (
        f"weight sync {w['per_step_s'] * 1e3:.1f} ms per step ({w['share_of_step']:.1%} of it), load "
        f"{w['weight_load_s_mean'] * 1e3:.1f} ms, drain before it mean {w['drain_s_mean'] * 1e3:.1f} ms, max "
        f"{w['drain_s_max'] * 1e3:.1f} ms over {w['updates']} updates (docs/engines.md)"
    )


def _multi_turn_line(t: dict) -> str:
    """A mode's multi-turn figures (trainer/metrics.py `multi_turn`), as the catalogue labels and formats them."""
    keys = ("prefix_match_rate", "truncated_by_context", "learner_tokens_per_step")
    shown = ", ".join(f"{m.label} {m.text(t[m.key])}" for m in (catalogue.BY_KEY[k] for k in keys))
    return f"{t['trajectories']} multi-turn trajectories: {shown} (docs/architecture.md)"


def _bias_line(b: dict) -> str:
    """The slow-sample bias audit in one line (trainer/bias.py), pooled over the repeats."""
    if not b["quartiles"]:
        return "slow-sample bias: too few trajectories trained or dropped to form latency quartiles"
    accepted = ", ".join(f"{q['acceptance']:.0%}" for q in b["quartiles"])
    ratio = "-" if b["slow_fast_acceptance"] is None else f"{b['slow_fast_acceptance']:.2f}"

    def reward(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    return (f"slow-sample bias {ratio} (acceptance slowest / fastest gym-latency quartile; by quartile {accepted}); "
            f"mean reward trained {reward(b['reward_trained'])}, dropped {reward(b['reward_dropped'])}; "
            f"gym time on dropped trajectories {b['gym_s_dropped_share']:.1%}{_predicted_line(b)}")  # fmt: skip


def _predicted_line(b: dict) -> str:
    """Predicted against measured gym time by quartile (trainer/rules/cost.py); empty for an audit without any."""
    if all(q.get("predicted_gym_s_mean") is None for q in b["quartiles"]):
        return ""
    pairs = ", ".join("-" if q.get("predicted_gym_s_mean") is None else
                      f"{q['predicted_gym_s_mean']:.2f}/{q['measured_gym_s_mean']:.2f}" for q in b["quartiles"])  # fmt: skip
    rank = catalogue.BY_KEY["cost_rank_correlation"]
    return f"; gym s predicted/measured by quartile {pairs}, {rank.label} {rank.text(b.get('cost_rank_correlation'))}"


def _compared(block: Measured, key: str, fmt: str, suffix: str = "") -> str:
    """A comparison figure formatted, with its 95 % interval over repeats and 'not significant' where
    that holds the figure's no-effect value (harness/intervals.py)."""
    null = catalogue.BY_KEY[key].null if key in catalogue.BY_KEY else None
    return with_interval(block.comparison[key], block.intervals.get(key), lambda v: f"{format(v, fmt)}{suffix}", null)


def _comparison_line(block: Measured, name: str) -> str:
    """'speedup 1.62x [1.55, 1.69] (ideal ...)': means over repeats, with 95% intervals when there are
    some; a figure whose interval holds its no-effect value says it is not significant, unbolded."""
    c, iv = block.comparison or {}, block.intervals

    def fig(key: str, fmt: str, suffix: str = "") -> str:
        return _compared(block, key, fmt, suffix)

    repeats = len(block.repeats) or 1
    over = f" (mean of {repeats} repeats, 95% intervals)" if repeats > 1 else ""
    measured = min((m.measured_steps for m in block.modes.values()), default=0)
    speedup = fig("speedup", ".2f", "x")
    speedup = speedup if not_significant(iv.get("speedup"), catalogue.BY_KEY["speedup"].null) else f"[bold]{speedup}[/]"
    if measured < MIN_MEASURED_STEPS:  # one or two steps of a noisy pipeline measure nothing
        speedup = f"not measured: {measured} step(s)"
    drop = f" (drop {fig('idle_drop', '.1%')})" if "idle_drop" in c else ""  # runs before it have none
    return (
        f"{name} {speedup} (ideal {c['ideal_speedup']:.2f}x, achieved/ideal "
        f"{fig('achieved_over_ideal', '.0%')}); trainer idle ratio {fig('trainer_idle_ratio_sync', '.1%')} -> "
        f"{fig('trainer_idle_ratio_async', '.1%')}{drop}{over}"
    )


def learning_line(block: Measured) -> str | None:
    """A learning policy's pair (trainer/learning.py), in one line the console and the report share:
    the time each mode took to the target reward, and the final reward at equal samples. None for
    the replay policy, whose rewards are a fixed mix."""
    c = block.comparison or {}
    if "final_reward_gap" not in c:
        return None

    def fig(key: str, fmt: str, suffix: str = "") -> str:
        if c.get(key) is None:
            return "not reached" if key.startswith("time_to") else "-"
        return _compared(block, key, fmt, suffix)

    final = (f"final reward at equal samples {fig('final_reward_sync', '.3f')} sync, {fig('final_reward_async', '.3f')} "
             f"async (gap {fig('final_reward_gap', '+.3f')})")  # fmt: skip
    if c.get("target_reward") is None:
        return f"learning: sync's reward did not rise, so there is no target to time; {final}"
    speedup = f", learning speedup {fig('learning_speedup', '.2f', 'x')}" if c.get("learning_speedup") else ""
    return (f"learning: time to reward {c['target_reward']:.3f} {fig('time_to_target_sync', '.0f', ' s')} sync, "
            f"{fig('time_to_target_async', '.0f', ' s')} async{speedup}; {final}")  # fmt: skip
