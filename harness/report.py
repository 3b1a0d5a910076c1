"""`harness report`: one run's page (report.html) and PNG figures (figures/*.png) in its directory.

The page embeds its figures as data URIs so that it is one self-contained file; the PNGs beside
it are the same bytes, for papers and pull requests. Nothing in either depends on when the report
was made, so the same run drawn by the same matplotlib version gives byte-identical files.
"""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

from harness import catalogue
from harness.console import learning_line
from harness.figures import FIGURES, render, seconds
from harness.html import Cell, cell, page, table
from harness.intervals import not_significant, with_interval
from harness.outputs import naming, write_bytes, write_text
from harness.predict import lines
from harness.rundir import Run, bias_of, load_run, service_stats, service_times
from harness.summary import Measured, RunSummary
from trainer.attribution import PARTS
from trainer.rules.placement import PLACEMENTS
from trainer.types import FATES

REPORT = "report.html"
FIGURE_DIR = "figures"

def write_report(run_dir: Path) -> Path:
    """Write report.html and figures/*.png for the run in `run_dir`; return the page's path."""
    run = load_run(run_dir)
    figure_dir = run_dir / FIGURE_DIR
    with naming(figure_dir):
        figure_dir.mkdir(exist_ok=True)
    images = {}
    for spec in FIGURES:
        data = render(spec, run)
        write_bytes(figure_dir / f"{spec.name}.png", data)
        images[spec.name] = data
    path = run_dir / REPORT
    write_text(path, report_html(run, images))
    return path


def report_html(run: Run, images: dict[str, bytes]) -> str:
    s = run.summary
    parts = [
        f"<p><a href=../../index.html>&larr; leaderboard</a></p>\n<h1>{escape(s.gym)}: sync vs async</h1>",
        f"<p class=sub>run <span class=mono>{escape(run.run_id)}</span> &middot; {_setup_line(s)}</p>",
    ]
    if run.emulated_label:
        profile = s.profile or {}
        parts.append(
            f"<p class=banner><span class=badge>{escape(run.emulated_label)}</span> Generation, training and "
            f"weight sync are emulated: they wait the stage times of the hardware profile "
            f"<b>{escape(str(profile.get('name', '?')))}</b> ({escape(str(profile.get('description', '')))}). "
            f"Placement <b>{escape(str(run.placement))}</b>: {escape(PLACEMENTS.get(str(run.placement), ''))}. "
            "Every gym step is real work in the sandbox.</p>"
        )
    parts.append(_headline(s))
    learned = learning_line(s)
    if learned:
        parts.append(f"<p>{escape(learned)}</p>")
    if s.predicted:
        first, *rest = lines(s.predicted)
        parts.append(f"<h2>Predicted for the target cluster</h2>\n<p>{escape(first)}</p>\n<ul>"
                     + "".join(f"<li>{escape(line.strip())}</li>" for line in rest) + "</ul>")  # fmt: skip
    if len(s.repeats) > 1 or s.control:
        parts.append("<h2>Repeats and control</h2>\n" + _repeats_and_control(s))
    parts.append("<h2>Metrics</h2>\n" + _metrics_table(run))
    for spec in FIGURES:
        uri = "data:image/png;base64," + base64.b64encode(images[spec.name]).decode("ascii")
        parts.append(
            f'<h2 id={spec.name}>{escape(spec.title)}</h2>\n<figure><img src="{uri}" alt="{escape(spec.title)}">'
            f"<figcaption>{escape(spec.caption)}</figcaption></figure>"
        )
        if spec.name == "gym_service":
            parts.append(_service_table(run))
        if spec.name == "slow_sample_bias":
            parts.append(_bias_section(run))
    parts.append("<h2>Trajectory accounting and oscillation</h2>\n" + _accounting(run))
    parts.append("<h2>Configuration and provenance</h2>\n" + _provenance(s))
    return page(f"{s.gym} · {run.run_id} · heavygym report", "\n".join(parts))


def _setup_line(s: RunSummary) -> str:
    spec = s.spec
    return escape(
        f"policy {spec.get('policy', '?')}, batch {spec.get('batch_groups', '?')} prompts x group "
        f"{spec.get('group_size', '?')} samples per step, max_staleness {spec.get('max_staleness', '?')} (async), "
        f"{_oversampling(spec.get('oversample'))}, schedule {spec.get('schedule', 'fifo')}"
        f"{' with the cost card ' + spec['card'] if spec.get('card') else ''}, "
        f"{s.gym_workers or '?'} gym workers, {spec.get('steps', '?')} steps per mode (the first is warm-up)"
    )


def _oversampling(k: int | None) -> str:
    return "over-sampling -" if k is None else f"over-sampling {k} groups"  # None: recorded before the option


def _headline(s: RunSummary) -> str:
    c = s.comparison
    if not c:
        return "<p class=headline>One mode only: no sync/async comparison.</p>"
    repeats = len(s.repeats)
    over = f" (means of {repeats} repeats)" if repeats > 1 else ""
    speedup = s.intervals.get("speedup")
    if not_significant(speedup, catalogue.BY_KEY["speedup"].null):  # never bold a figure its own interval does not support
        return (
            f"<p class=headline>Async's speedup per step, {c['speedup']:.2f}x{over}, is not significant: its 95 % "
            f"interval [{speedup['low']:.2f}x, {speedup['high']:.2f}x] holds 1.00x. The trainer idle ratio went "
            f"from {c['trainer_idle_ratio_sync']:.1%} to {c['trainer_idle_ratio_async']:.1%}.</p>"
        )
    return (
        f"<p class=headline>Async is <b>{c['speedup']:.2f}x</b> faster per step than sync{over} (ideal "
        f"{c['ideal_speedup']:.2f}x, achieved/ideal {c['achieved_over_ideal']:.0%}); the trainer idle ratio "
        f"falls from <b>{c['trainer_idle_ratio_sync']:.1%}</b> to <b>{c['trainer_idle_ratio_async']:.1%}</b>.</p>"
    )


def _repeats_and_control(s: RunSummary) -> str:
    """The run's figures as means over its repeats with 95 % intervals, beside the control's
    (the same configuration with an instant gym: what is left without gym work)."""
    blocks = [("this run", s)] + ([(f"control: {s.control.gym}", s.control)]
                                  if s.control else [])  # fmt: skip

    def shown(block: Measured, metric: catalogue.Metric, name: str, mode: str | None) -> str:
        spread = block.intervals.get(name)
        if spread and spread.get("mean") is not None:
            return with_interval(spread["mean"], spread, metric.text, metric.null)
        return metric.text(metric.value(block, mode))  # a single repeat: its own figure

    rows = [[cell(metric.label + (f", {mode}" if mode else "")),
             *(cell(shown(b, metric, name, mode), numeric=True) for _, b in blocks)]
            for metric in catalogue.CATALOGUE for name, mode in metric.interval_names()]  # fmt: skip
    bias = catalogue.BY_KEY["slow_fast_acceptance"]
    rows.append([cell(f"{bias.label} (pooled)"), *(cell(bias.text(bias.value(b)), numeric=True) for _, b in blocks)])
    repeats = len(s.repeats) or 1
    note = (f"<p class=sub>Means over {repeats} sync/async pairs run in ABBA order, with 95 % Student's t "
            "intervals over the pairs in brackets (ratios on the log scale: geometric means); 'not significant' "
            "marks an interval that holds the no-effect value.</p>" if repeats > 1 else "")  # fmt: skip
    return note + table(["figure", *(name for name, _ in blocks)], rows)


def _metrics_table(run: Run) -> str:
    """The catalogue's report figures per mode, train_wait followed by its parts."""
    modes = run.modes
    rows = []
    for metric in catalogue.shown_in(catalogue.REPORT):
        if metric.colocated_only and run.placement != "colocated":
            continue
        rows.append([cell(metric.label), *(cell(metric.shown(run.summary, m), numeric=True)
                                           for m in modes)])  # fmt: skip
        if metric.key == "train_wait_mean":
            rows += _wait_split_rows(run)
    return table(["metric", *modes], rows)


def _wait_split_rows(run: Run) -> list[list[Cell]]:
    """train_wait's parts (trainer/attribution.py), seconds per step and share of the wait; `-`
    for a run recorded before the split existed."""
    figures = [run.summary.modes[m] for m in run.modes]
    rows = []
    for part in PARTS:
        values = []
        for f in figures:
            split, total = f.wait_split, f.train_wait_mean
            if not split:
                values.append("-")
                continue
            share = f" ({split[part] / total:.0%})" if total > 0 else ""
            values.append(f"{seconds(split[part])}{share}")
        rows.append([cell(f"train_wait: {part}"), *(cell(v, numeric=True) for v in values)])
    return rows


def _service_table(run: Run) -> str:
    rows = []
    for mode in run.modes:
        stats = service_stats(service_times(run.spans[mode]))
        if stats is None:
            rows.append([cell(mode), *(cell("-", numeric=True) for _ in range(6))])
            continue
        values = (stats.p50, stats.p95, stats.p99, stats.max, stats.mean)
        rows.append([cell(mode), cell(stats.count, numeric=True), *(cell(seconds(v), numeric=True) for v in values)])
    return table(["mode", "calls", "p50", "p95", "p99", "max", "mean"], rows)


BIAS_NOTE = (
    "The trainer decides on every trajectory that completes without an error: it trains it, or drops it as "
    "stale when its policy version has fallen too far behind by the time a step could take it. The slow "
    "answers, those with long gym checks, are the ones that go stale, and under heavy verification the slow "
    "answers may be the good ones. The audit sorts the decided trajectories by gym latency (the service "
    "times of their gym steps, summed) into four quartiles and compares the share trained in each. The bias "
    "figure is the slowest quartile's acceptance over the fastest's: 1.0 means staleness drops slow and fast "
    "trajectories alike; below 1, the mode trains on fast answers more than on slow ones (async through "
    "staleness, sync only when over-sampling leaves groups over), so what it learns from leans towards what "
    "is quick to check. Errored trajectories (the infrastructure's) and those still in flight when the run "
    "stopped are counted, not ranked. Wasted gym work is the share of all gym seconds spent on trajectories "
    "that were then dropped stale. Beside each quartile's measured gym time, the mean gym time predicted for "
    "the same trajectories as their groups started (trainer/rules/cost.py: each task's own past trajectories "
    "shrunk towards a prior), and the rank correlation of predicted with measured over all of them: how well "
    "the run could have known in advance which trajectories would be slow (dashes: not recorded)."
)
# (label, audit key, format) of the bias summary table
BIAS_ROWS = (
    ("slowest / fastest acceptance", "slow_fast_acceptance", ".2f"),
    ("mean reward, trained", "reward_trained", ".3f"),
    ("mean reward, dropped stale", "reward_dropped", ".3f"),
    ("gym seconds spent on dropped-stale (wasted)", "gym_s_dropped_share", ".1%"),
    ("predicted / measured gym time, rank correlation", "cost_rank_correlation", ".2f"),
)


def _bias_section(run: Run) -> str:
    """The slow-sample bias audit of each mode (trainer/bias.py); dashes for a run recorded before it."""
    audits = {mode: bias_of(run.summary, mode) for mode in run.modes}
    repeats = len(run.summary.repeats)
    pooled = f" Pooled over the {repeats} repeats of each mode." if repeats > 1 and run.summary.bias else ""
    rows = [[cell(label), *(cell(_bias_figure(audits[m], key, fmt), numeric=True) for m in run.modes)]
            for label, key, fmt in BIAS_ROWS]  # fmt: skip
    rows += [[cell(f"trajectories {fate.replace('_', ' ')}"),
              *(cell("-" if audits[m] is None else audits[m]["fates"][fate], numeric=True) for m in run.modes)]
             for fate in FATES]  # fmt: skip
    quartiles = []
    for mode in run.modes:
        ranked = (audits[mode] or {}).get("quartiles") or []
        if not ranked:  # not recorded, or fewer than 4 decided trajectories
            quartiles.append([cell(mode), *(cell("-", numeric=True) for _ in range(7))])
        for n, q in enumerate(ranked, 1):
            quartiles.append([cell(mode), cell(f"Q{n}"), cell(f"{seconds(q['gym_s_min'])} - {seconds(q['gym_s_max'])}"),
                              cell(q["decided"], numeric=True), cell(q["trained"], numeric=True),
                              cell(f"{q['acceptance']:.0%}", numeric=True),
                              *(cell(_maybe_seconds(q.get(k)), numeric=True)
                                for k in ("predicted_gym_s_mean", "measured_gym_s_mean"))])  # fmt: skip
    return (
        f"<p>{escape(BIAS_NOTE + pooled)}</p>\n"
        + table(["figure", *run.modes], rows)
        + "\n"
        + table(["mode", "quartile (fastest first)", "gym latency", "decided", "trained", "acceptance",
                 "gym time predicted (mean)", "gym time measured (mean)"], quartiles)  # fmt: skip
    )


def _bias_figure(audit: dict[str, Any] | None, key: str, fmt: str) -> str:
    value = None if audit is None else audit.get(key)  # a key newer than the run: not recorded
    return "-" if value is None else format(value, fmt)


def _maybe_seconds(value: float | None) -> str:
    return "-" if value is None else seconds(value)


def _accounting(run: Run) -> str:
    rows = []
    for mode in run.modes:
        m = run.summary.modes[mode]
        acc = m.accounting
        counts = [acc.get(k, "-") for k in ("generated", "trained", "dropped_stale", "errored", "in_flight")]
        rows.append([cell(mode), *(cell(n, numeric=True) for n in counts),
                     cell("yes" if acc.get("balanced") else "NO"), cell(m.oscillation)])  # fmt: skip
    headers = ["mode", "generated", "trained", "dropped stale", "errored", "in flight", "balanced", "verdict"]
    return table(headers, rows)


def _provenance(s: RunSummary) -> str:
    git = s.git
    commit = str(git.get("commit") or "unknown") + (" (uncommitted changes)" if git.get("dirty") else "")
    hw = s.hardware
    rows: list[list[Cell]] = [
        [cell("run"), cell(s.run_id)],
        [cell("gym"), cell(s.gym)],
        [cell("git commit"), Cell(f"<span class=mono>{escape(commit)}</span>")],
        *([cell(f"hardware: {k}"), cell(_plain(v))] for k, v in sorted(hw.items())),
        *([cell(f"tool: {k}"), cell(v)] for k, v in sorted(s.tools.items())),
        *([cell(f"spec: {k}"), cell(_plain(v))] for k, v in sorted(s.spec.items())),
    ]
    if s.profile:
        rows += [[cell(f"profile: {k}"), cell(_plain(v))] for k, v in sorted(s.profile.items()) if k != "sources"]
        rows += [[cell(f"profile source: {k}"), cell(v)] for k, v in sorted(s.profile.get("sources", {}).items())]
    return table(["", ""], rows)


def _plain(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    return str(value)
