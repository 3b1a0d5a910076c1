"""Small inline SVG charts for the leaderboard page: a figure's mean as a dot with its 95 %
interval as a bar, the run on the upper lane and its control (the instant gym) on the lower one.

The SVG is text written here, with no script and nothing fetched, so the page works offline and
the same figures give the same bytes. Every row's chart of a figure shares one axis (`Axis`), so
rows compare at a glance; the speedup's holds every mean, and an interval bound beyond the axis
(two repeats give wide ones) is drawn to its edge without an end cap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 200, 46
LEFT, RIGHT = 12, 188  # the axis' ends, room for the end labels
RUN_Y, CONTROL_Y, AXIS_Y = 10, 24, 33
RUN, SYNC, IDEAL, CONTROL, GRID = "#2166ac", "#b2182b", "#d08700", "#888", "#ccc"


@dataclass(frozen=True)
class Estimate:
    """A figure's mean and its 95 % interval (None: one repeat, no spread to show)."""

    mean: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Axis:
    low: float
    high: float
    ticks: tuple[float, ...]
    label: Callable[[float], str]
    log: bool = False

    def x(self, value: float) -> float:
        """The value's position, clipped to the axis."""
        scale = math.log if self.log else float
        share = (scale(value) - scale(self.low)) / (scale(self.high) - scale(self.low))
        return LEFT + (RIGHT - LEFT) * min(max(share, 0.0), 1.0)

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


IDLE_AXIS = Axis(0.0, 1.0, (0.0, 0.5, 1.0), lambda v: f"{v:.0%}")


def speedup_axis(values: Sequence[float | None]) -> Axis:
    """A log axis of powers of two holding 0.5x to 2x and every value given, within 1/16x to 16x."""
    shown = [v for v in values if v is not None and v > 0]
    low = max(min([0.5, *shown]), 1 / 16)
    high = min(max([2.0, *shown]), 16.0)
    lo, hi = math.floor(math.log2(low)), math.ceil(math.log2(high))
    return Axis(2.0**lo, 2.0**hi, tuple(2.0**k for k in range(lo, hi + 1)), lambda v: f"{v:g}x", log=True)


def speedup_chart(axis: Axis, speedup: Estimate, ideal: float | None, control: Estimate, title: str) -> str:
    """The speedup and its interval against its ideal (a diamond) and 1x (the dashed line), the
    control's speedup below."""
    one = axis.x(1.0)
    marks = [(f'<line class="null" x1="{one:.1f}" y1="2" x2="{one:.1f}" y2="{AXIS_Y}" stroke="{GRID}" '
              'stroke-dasharray="3 2"/>')]
    if ideal is not None:  # under the mean's dot, which covers its middle when the run is at its ideal
        x = axis.x(ideal)
        marks.append(f'<path class="ideal" d="M{x:.1f} {RUN_Y - 5} l4 5 l-4 5 l-4 -5 z" fill="none" stroke="{IDEAL}" '
                     'stroke-width="1.5"/>')  # fmt: skip
    marks += _estimate(axis, speedup, RUN_Y, RUN, "run")
    if control.mean is None:
        marks.append(_NO_CONTROL)
    else:
        marks += _estimate(axis, control, CONTROL_Y, CONTROL, "control", hollow=True)
    return _svg(axis, marks, title)


def idle_chart(run: tuple[Estimate, Estimate], control: tuple[Estimate, Estimate], title: str) -> str:
    """Trainer idle, sync (red) -> async (blue), each with its interval; the control's below."""
    marks = _sync_to_async(run, RUN_Y, hollow=False)
    if all(e.mean is None for e in control):
        marks.append(_NO_CONTROL)
    else:
        marks += _sync_to_async(control, CONTROL_Y, hollow=True)
    return _svg(IDLE_AXIS, marks, title)


def legend() -> str:
    """What the marks mean, once above the table: each mark drawn as in the charts, then its words."""
    icons = [
        ((f'<line x1="1" y1="6" x2="15" y2="6" stroke="{RUN}" stroke-width="2"/>'
          f'<circle cx="8" cy="6" r="3.5" fill="{RUN}"/>'), "mean and 95% interval"),
        (f'<path d="M8 1 l4 5 l-4 5 l-4 -5 z" fill="none" stroke="{IDEAL}" stroke-width="1.5"/>', "ideal speedup"),
        (f'<line x1="8" y1="0" x2="8" y2="12" stroke="{GRID}" stroke-dasharray="3 2"/>', "1x: no speedup"),
        (f'<circle cx="8" cy="6" r="3.5" fill="{SYNC}"/>', "sync"),
        (f'<circle cx="8" cy="6" r="3.5" fill="{RUN}"/>', "async"),
        (f'<circle cx="8" cy="6" r="3" fill="#fff" stroke="{CONTROL}" stroke-width="1.5"/>',
         "lower lane: the control (instant gym)"),
    ]  # fmt: skip
    return "".join(f'<span><svg width="16" height="12" viewBox="0 0 16 12" aria-hidden="true">{icon}</svg> '
                   f"{escape(words)}</span>" for icon, words in icons)  # fmt: skip


def _estimate(axis: Axis, e: Estimate, y: int, colour: str, name: str, hollow: bool = False) -> list[str]:
    return _interval(axis, e, y, colour, name) + _dot(axis, e, y, colour, name, hollow)


def _interval(axis: Axis, e: Estimate, y: int, colour: str, name: str) -> list[str]:
    """The interval's bar, with end caps where its bounds lie on the axis."""
    if e.mean is None or e.low is None or e.high is None:
        return []
    x1, x2 = axis.x(e.low), axis.x(e.high)
    caps = "".join(f'<line x1="{x:.1f}" y1="{y - 3}" x2="{x:.1f}" y2="{y + 3}" stroke="{colour}"/>'
                   for x, bound in ((x1, e.low), (x2, e.high)) if axis.holds(bound))  # fmt: skip
    bar = f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" stroke="{colour}" stroke-width="1.5"/>'
    return [f'<g class="interval {name}">{bar}{caps}</g>']


def _dot(axis: Axis, e: Estimate, y: int, colour: str, name: str, hollow: bool) -> list[str]:
    if e.mean is None:
        return []
    fill, r = ("#fff", 3) if hollow else (colour, 3.5)
    return [(f'<circle class="mean {name}" cx="{axis.x(e.mean):.1f}" cy="{y}" r="{r}" fill="{fill}" '
             f'stroke="{colour}" stroke-width="1.5"/>')]


def _sync_to_async(pair: tuple[Estimate, Estimate], y: int, hollow: bool) -> list[str]:
    """Sync's and async's estimates on one lane, with an arrow from sync's mean towards async's.
    Sync's interval runs just above the lane and async's just below, so that both show where they
    overlap; the dots go on top."""
    sync, asyn = pair
    marks = []
    lanes = [(sync, CONTROL if hollow else SYNC, "control sync" if hollow else "sync", -2),
             (asyn, CONTROL if hollow else RUN, "control async" if hollow else "async", 2)]  # fmt: skip
    for estimate, colour, name, dy in lanes:
        marks += _interval(IDLE_AXIS, estimate, y + dy, colour, name)
    if sync.mean is not None and asyn.mean is not None:
        x1, x2 = IDLE_AXIS.x(sync.mean), IDLE_AXIS.x(asyn.mean)
        if abs(x2 - x1) > 10:  # an arrow shorter than the dots says nothing
            step = 1 if x2 > x1 else -1
            tip, colour = x2 - 4 * step, CONTROL if hollow else "#555"
            marks.append(f'<line class="shift" x1="{x1:.1f}" y1="{y}" x2="{tip - 3 * step:.1f}" y2="{y}" '
                         f'stroke="{colour}"/><path class="shift" d="M{tip:.1f} {y} l{-5 * step} -3 v6 z" '
                         f'fill="{colour}"/>')  # fmt: skip
    for estimate, colour, name, _ in lanes:
        marks += _dot(IDLE_AXIS, estimate, y, colour, name, hollow)
    return marks


_NO_CONTROL = (f'<text class="none" x="{(LEFT + RIGHT) // 2}" y="{CONTROL_Y + 3}" text-anchor="middle" '
               f'fill="{CONTROL}">no control run</text>')  # fmt: skip


def _svg(axis: Axis, marks: list[str], title: str) -> str:
    ticks = "".join(
        f'<line x1="{axis.x(t):.1f}" y1="{AXIS_Y}" x2="{axis.x(t):.1f}" y2="{AXIS_Y + 3}" stroke="#999"/>'
        f'<text x="{axis.x(t):.1f}" y="{HEIGHT - 1}" text-anchor="middle">{escape(axis.label(t))}</text>'
        for t in axis.ticks
    )
    return (
        f'<svg class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" font-size="9" fill="#666"><title>{escape(title)}</title>'
        f'<line x1="{LEFT}" y1="{AXIS_Y}" x2="{RIGHT}" y2="{AXIS_Y}" stroke="#999"/>{ticks}{"".join(marks)}</svg>'
    )
