"""The figures of a run report, drawn with matplotlib's object API on the Agg canvas.

No pyplot, so no GUI backend and no figure manager to leak figures into. Every figure is drawn
under matplotlib's default style (plus STYLE) whatever the user's matplotlibrc says, and saved
without Software/date metadata, so the same run gives the same bytes.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from harness.rundir import Run, bias_of, service_stats, service_times
from trainer.timeline import Span

MODE_COLOURS = {"sync": "#d62728", "async": "#1f77b4"}
KIND_COLOURS = {
    "generate": "#2ca02c",
    "gym_step": "#ff7f0e",
    "actor_train": "#9467bd",
    "update_weights": "#e377c2",
}
EMULATED_KINDS = ("generate", "actor_train", "update_weights")  # what the replay policy only waits for
# Spans kept for the wait attribution only (trainer/attribution.py): they overlap each other, so the
# timeline leaves them out.
UNDRAWN_KINDS = ("group", "gym_queue", "generate_request")
WAIT_COLOURS = {  # the parts of the trainer's wait, in PARTS order, coloured as the stages they wait on
    "generation": "#2ca02c",
    "gym_queue": "#ffbb78",
    "gym_service": "#ff7f0e",
    "weight_sync": "#e377c2",
    "other": "#c7c7c7",
}
DPI = 110
STYLE = {"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False,
         "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 8, "legend.frameon": False}  # fmt: skip


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem: figures/<name>.png
    title: str
    caption: str
    draw: Callable[[Run], Figure]


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes, without metadata that would change from one render to the next."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


@contextmanager
def style() -> Iterator[None]:
    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # ignore the user's matplotlibrc: same run, same picture
        matplotlib.rcParams.update(STYLE)
        yield


def _mode_title(run: Run, mode: str) -> str:
    figures = run.summary.modes[mode]
    staleness = figures.config.get("max_staleness", 0) if mode != "sync" else 0
    return (
        f"{mode} (max_staleness {staleness}): step time {figures.step_time_mean:.2f} s, "
        f"trainer idle {figures.trainer_idle_ratio:.0%}"
    )


def render(spec: FigureSpec, run: Run) -> bytes:
    """One figure of `run` as PNG; every figure of an emulated run says so in its top line."""
    with style():
        fig = spec.draw(run)
        if run.emulated_label:
            fig.suptitle(f"generation, training and weight sync: {run.emulated_label}, {run.placement} placement",
                         x=0.99, ha="right", fontsize=8, color="#555555")  # fmt: skip
        return png(fig)


def _resources(spans: list[Span]) -> list[str]:
    """trainer, rollout, then gym workers in numeric order (gym-10 after gym-9)."""
    names = {s.resource for s in spans}
    fixed = [r for r in ("trainer", "rollout") if r in names]

    def natural(name: str) -> tuple:
        return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))

    return fixed + sorted(names - set(fixed), key=natural)


def _drawn(spans: list[Span]) -> list[Span]:
    return [s for s in spans if s.kind not in UNDRAWN_KINDS]


def timeline(run: Run) -> Figure:
    modes = run.modes
    resources = _resources([s for m in modes for s in _drawn(run.spans[m])])
    cut = {m: warmup_end(run, m) for m in modes}
    horizon = max(s.end - cut[m] for m in modes for s in _drawn(run.spans[m]))
    height = min(2.0 + 0.32 * len(resources), 9.0)
    fig = Figure(figsize=(11, 0.4 + height * len(modes)), layout="constrained")
    axes = fig.subplots(len(modes), 1, sharex=True, squeeze=False)[:, 0]
    label_every = max(1, len(resources) // 24)  # keep labels legible on a large gym pool
    for ax, mode in zip(axes, modes):
        _timeline_panel(ax, run, mode, resources, label_every, cut[mode])
        ax.set_xlim(0, horizon * 1.01)
    cut_any = any(cut.values())
    axes[-1].set_xlabel("wall time since the warm-up step ended (s); warm-up step cut" if cut_any
                        else "wall time since the mode started (s)")  # fmt: skip
    handles = [Patch(facecolor="white", edgecolor="#999999", hatch="////", label="train_wait (trainer idle)")]
    for kind, colour in KIND_COLOURS.items():
        label = f"{kind} (emulated)" if run.emulated_label and kind in EMULATED_KINDS else kind
        handles.append(Patch(facecolor=colour, label=label))
    fig.legend(handles=handles, loc="outside lower center", ncol=3)
    return fig


def warmup_end(run: Run, mode: str) -> float:
    """When a mode's warm-up step (the first, kept out of every mean: trainer/metrics.py) ended,
    where its timeline starts; 0 for a mode of one step, which has nothing else to show."""
    steps = run.steps[mode]
    return steps[0].end if len(steps) > 1 else 0.0


def _timeline_panel(ax: Axes, run: Run, mode: str, resources: list[str], label_every: int, cut: float) -> None:
    """One mode's spans, shifted by `cut` (its warm-up's end): what ran before it is off the axis."""
    spans = _drawn(run.spans[mode])
    row = {r: i for i, r in enumerate(resources)}
    for s in run.steps[mode]:  # optimizer steps: in sync everything lines up behind them
        ax.axvline(s.end - cut, color="#444444", lw=0.6, ls=":", zorder=1)
    bars: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for s in spans:
        bars.setdefault((s.resource, s.kind), []).append((s.start - cut, s.duration))
    for (resource, kind), xs in sorted(bars.items(), key=lambda item: (row[item[0][0]], item[0][1])):
        y = (row[resource] - 0.35, 0.7)
        if kind == "train_wait":  # idle, but attributed: a hatched outline, still reads as a gap
            ax.broken_barh(xs, y, facecolor="white", edgecolor="#999999", hatch="////", lw=0.4, zorder=2)
        else:
            colour = KIND_COLOURS.get(kind, "#7f7f7f")  # a kind added later still shows, in grey
            ax.broken_barh(xs, y, facecolor=colour, edgecolor=colour, lw=0.3, zorder=3)
    ax.set_yticks(range(0, len(resources), label_every), resources[::label_every])
    ax.set_ylim(len(resources) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    ax.set_title(_mode_title(run, mode), loc="left")


def step_time(run: Run) -> Figure:
    fig, ax = _single()
    for mode in run.modes:
        rows = run.steps[mode]
        ax.plot([r.step for r in rows], [r.step_time for r in rows], marker="o", color=MODE_COLOURS.get(mode),
                label=f"{mode}: mean {run.summary.modes[mode].step_time_mean:.2f} s")  # fmt: skip
    if "async" in run.summary.modes:
        ideal = run.summary.modes["async"].ideal_step_time
        ax.axhline(ideal, color=MODE_COLOURS["async"], ls="--", lw=1, label=f"async ideal {ideal:.2f} s")
    _warmup_band(ax)
    ax.set(xlabel="optimizer step (0 = warm-up, not in the means)", ylabel="step time (s)")
    ax.set_ylim(bottom=0)
    ax.legend()
    return fig


def train_wait(run: Run) -> Figure:
    fig, ax = _single()
    modes = run.modes
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        rows = run.steps[mode]
        offset = (i - (len(modes) - 1) / 2) * width
        ax.bar([r.step + offset for r in rows], [r.train_wait for r in rows], width, color=MODE_COLOURS.get(mode),
               label=f"{mode}: idle ratio {run.summary.modes[mode].trainer_idle_ratio:.0%}")  # fmt: skip
    _warmup_band(ax)
    ax.set(xlabel="optimizer step (0 = warm-up, not in the means)", ylabel="trainer wait for a batch (s)")
    ax.legend()
    return fig


def wait_split(run: Run) -> Figure:
    modes = run.modes
    fig = Figure(figsize=(7, 0.6 + 2.6 * len(modes)), layout="constrained")
    axes = fig.subplots(len(modes), 1, sharex=True, squeeze=False)[:, 0]
    for ax, mode in zip(axes, modes):
        figures = run.summary.modes[mode]
        per_step = figures.wait_split_per_step
        if not per_step:  # recorded before wait attribution, or a timeline without the spans it needs
            ax.text(0.5, 0.5, "no wait split recorded for this mode", ha="center", va="center",
                    transform=ax.transAxes, color="#555555")  # fmt: skip
            ax.set_axis_off()
            ax.set_title(mode, loc="left")
            continue
        xs = [row["step"] for row in per_step]
        bottom = [0.0] * len(per_step)
        for part, colour in WAIT_COLOURS.items():
            heights = [float(row.get(part, 0.0)) for row in per_step]
            ax.bar(xs, heights, 0.7, bottom=bottom, color=colour, label=part)
            bottom = [b + h for b, h in zip(bottom, heights)]
        top = 1.15 * max(bottom[1:], default=0.0)
        if top > 0 and bottom[0] > top:  # a slow warm-up (workers starting) would flatten the measured bars
            ax.set_ylim(0, top)
            ax.text(xs[0], 0.97 * top, f"warm-up {bottom[0]:.2f} s, cut", ha="center", va="top", fontsize=8)
        ax.xaxis.get_major_locator().set_params(integer=True)
        share = figures.gym_wait_share
        words = "gym share of the wait: -" if share is None else f"gym share of the wait {share:.0%}"
        ax.set_title(f"{mode}: train_wait {figures.train_wait_mean:.2f} s per step, {words}", loc="left")
        ax.set_ylabel("trainer wait (s)")
        _warmup_band(ax)
    axes[-1].set_xlabel("optimizer step (0 = warm-up, not in the means)")
    handles = [Patch(facecolor=c, label=p.replace("_", " ")) for p, c in WAIT_COLOURS.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles))
    return fig


def buffer_depth(run: Run) -> Figure:
    fig, ax = _single()
    for mode in run.modes:
        series = run.depth.get(mode, [])
        if series:
            ax.step([t for t, _ in series], [d for _, d in series], where="post", color=MODE_COLOURS.get(mode),
                    label=mode)  # fmt: skip
    ax.set(xlabel="wall time since the mode started (s)", ylabel="ready groups in the buffer")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend()
    return fig


def staleness(run: Run) -> Figure:
    fig, ax = _single()
    modes = run.modes
    versions = sorted({int(k) for m in modes for k in run.summary.modes[m].staleness_histogram} or {0})
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        figures = run.summary.modes[mode]
        counts = [figures.staleness_histogram.get(str(v), 0) for v in versions]
        dropped = figures.accounting.get("dropped_stale", 0)
        offset = (i - (len(modes) - 1) / 2) * width
        ax.bar([v + offset for v in versions], counts, width, color=MODE_COLOURS.get(mode),
               label=f"{mode}: mean {figures.staleness_mean:.2f}, dropped stale {dropped}")  # fmt: skip
    ax.set_xticks(versions)
    ax.set(xlabel="staleness (trainer version - sample's policy version)", ylabel="trained trajectories")
    ax.legend()
    return fig


def reward(run: Run) -> Figure:
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    by_samples, by_time = fig.subplots(1, 2, sharey=True)
    for mode in run.modes:
        rows = run.steps[mode]
        colour = MODE_COLOURS.get(mode)
        trained = list(itertools.accumulate(r.trajectories for r in rows))
        by_samples.plot(trained, [r.reward_mean for r in rows], marker="o", color=colour, label=mode)
        by_time.plot([r.end for r in rows], [r.reward_mean for r in rows], marker="o", color=colour, label=mode)
    by_samples.set(xlabel="trained samples at the step's end", ylabel="mean reward of the step's batch",
                   title="per trained sample")  # fmt: skip
    by_time.set(xlabel="wall time at the step's end (s)", title="per wall second")
    by_samples.set_ylim(-0.05, 1.05)
    by_time.legend()
    return fig


def gym_service(run: Run) -> Figure:
    fig, ax = _single()
    for mode in run.modes:
        times = service_times(run.spans[mode])
        stats = service_stats(times)
        if stats is None:
            continue
        floor = 1e-4  # log axis: a call faster than 0.1 ms is drawn at 0.1 ms
        xs = [max(t, floor) for t in times]
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        colour = MODE_COLOURS.get(mode)
        ax.step(xs, ys, where="post", color=colour,
                label=f"{mode} ({stats.count} calls): p50 {seconds(stats.p50)}, p95 {seconds(stats.p95)}, "
                      f"p99 {seconds(stats.p99)}, max {seconds(stats.max)}")  # fmt: skip
        marks = [stats.p50, stats.p95, stats.p99, stats.max]
        ax.plot([max(x, floor) for x in marks], [0.5, 0.95, 0.99, 1.0], ls="none", marker="D", ms=4, color=colour)
    ax.set_xscale("log")
    ax.set(xlabel="gym service time per call (s, log scale)", ylabel="fraction of calls at most this long")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right")
    return fig


def slow_sample_bias(run: Run) -> Figure:
    fig, ax = _single()
    audits = {mode: bias_of(run.summary, mode) for mode in run.modes}
    drawn = [m for m in run.modes if audits[m] and audits[m]["quartiles"]]
    if not drawn:
        why = "fewer than 4 decided trajectories" if any(audits.values()) else "no bias audit recorded for this run"
        ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, color="#555555")
        ax.set_axis_off()
        return fig
    width = 0.8 / len(drawn)
    for i, mode in enumerate(drawn):
        audit = audits[mode]
        ratio = audit["slow_fast_acceptance"]
        words = "-" if ratio is None else f"{ratio:.2f}"
        offset = (i - (len(drawn) - 1) / 2) * width
        ax.bar([q + offset for q in range(4)], [q["acceptance"] for q in audit["quartiles"]], width,
               color=MODE_COLOURS.get(mode), label=f"{mode}: slowest / fastest acceptance {words}")  # fmt: skip
    ax.set_xticks(range(4), ["Q1 (fastest)", "Q2", "Q3", "Q4 (slowest)"])
    ax.set(xlabel="quartile of gym latency (the trajectory's gym service time, summed)",
           ylabel="acceptance: trained / decided")  # fmt: skip
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1], ["0%", "25%", "50%", "75%", "100%"])
    ax.set_ylim(0, 1.3)  # room for the legend above full bars
    ax.legend(loc="upper center", ncol=len(drawn))
    return fig


def seconds(x: float) -> str:
    """A duration for people: 0.4 ms, 12 ms, 1.23 s, 95.1 s."""
    if x < 0.01:
        return f"{x * 1e3:.1f} ms"
    if x < 1:
        return f"{x * 1e3:.0f} ms"
    return f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def _single() -> tuple[Figure, Axes]:
    fig = Figure(figsize=(7, 3.4), layout="constrained")
    return fig, fig.subplots()


def _warmup_band(ax: Axes) -> None:
    ax.axvspan(-0.5, 0.5, color="#eeeeee", zorder=0)


FIGURES = (
    FigureSpec("timeline", "Timeline", "One row per resource, sync above async on the same time axis. Coloured "
               "spans are busy time, gaps are idle; the trainer's hatched spans are train_wait, the trainer "
               "blocked on the ready buffer. Dotted lines are optimizer steps: in sync, rollout and the gym "
               "pool fall silent while the trainer trains (the barrier); in async they keep working under it "
               "(the overlap). The warm-up step (the first, in no mean) is cut: each mode's axis starts where it "
               "ended, so the measured steps fill the width.", timeline),
    FigureSpec("step_time", "Step time per step", "Time between consecutive optimizer steps. The dashed line "
               "is async's ideal step time, max(generation, gym work / workers, train time) per step.",
               step_time),
    FigureSpec("train_wait", "Trainer wait per step", "Seconds the trainer was blocked on the ready buffer "
               "before each step; their sum over the step times is the trainer idle ratio.", train_wait),
    FigureSpec("wait_split", "What the trainer waited on", "Each step's train_wait split along the critical "
               "path of the group that completed its batch: generation (that group's, or the one engine busy "
               "with other groups while it waits), its slowest answer's wait for a free gym worker (gym queue) "
               "and the check on it (gym service), weight sync, and other (admission, bookkeeping). The parts "
               "add up to the step's train_wait.", wait_split),
    FigureSpec("buffer_depth", "Ready-buffer depth", "Complete groups waiting for the trainer, sampled when "
               "a group arrives and when the trainer takes a batch. In sync the buffer is empty while the "
               "trainer trains; in async it fills with the next batch meanwhile.", buffer_depth),
    FigureSpec("staleness", "Staleness", "How many versions behind the trainer each trained trajectory's "
               "policy was. Sync is 0 by construction; async is bounded by max_staleness.", staleness),
    FigureSpec("reward", "Reward", "Mean reward of each step's batch, against the samples trained by the step's "
               "end and against the wall time of that end: with a policy that learns, the left panel shows what "
               "staleness costs per sample, the right what async gains per second (replay rewards are a fixed mix).",
               reward),
    FigureSpec("gym_service", "Gym service time", "Cumulative distribution of the time one gym call took on "
               "its worker (the gym_step spans; queue wait excluded), with p50, p95, p99 and max marked.",
               gym_service),
    FigureSpec("slow_sample_bias", "Slow-sample bias", "Of the trajectories the trainer decided on (trained or "
               "dropped as stale), the share trained in each quartile of gym latency, fastest first, per mode "
               "(pooled over the run's repeats). Level bars: staleness drops slow and fast answers alike; bars "
               "falling to the right: the slow answers are the ones dropped.", slow_sample_bias),
)  # fmt: skip
