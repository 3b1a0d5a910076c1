"""harness/charts.py: the leaderboard's inline SVG charts put each mark where its figure is."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from harness.charts import IDLE_AXIS, LEFT, RIGHT, Estimate, idle_chart, speedup_axis, speedup_chart


def marks(svg: str, cls: str) -> list[ET.Element]:
    """The elements whose class list holds every word of `cls`."""
    wanted = set(cls.split())
    return [e for e in ET.fromstring(svg).iter() if wanted <= set(e.get("class", "").split())]


@pytest.mark.parametrize("values, low, high", [
    ([1.1, 1.3, None], 0.5, 2.0),  # 0.5x to 2x at least
    ([0.33, 5.57], 0.25, 8.0),  # powers of two around every value
    ([1e-6, 100.0], 1 / 16, 16.0),  # never beyond 1/16x to 16x
])  # fmt: skip
def test_the_speedup_axis_holds_every_value_on_powers_of_two(values, low, high):
    axis = speedup_axis(values)
    assert (axis.low, axis.high) == (low, high) and axis.ticks[0] == low and axis.ticks[-1] == high
    assert [axis.label(t) for t in speedup_axis([1.0]).ticks] == ["0.5x", "1x", "2x"]


def test_a_speedup_chart_puts_the_mean_interval_ideal_and_control_where_they_are():
    axis = speedup_axis([0.5, 2.0])  # 0.5x to 2x: 1x in the middle, on the log scale
    svg = speedup_chart(axis, Estimate(1.5, 1.2, 1.9), 1.8, Estimate(1.0, 0.9, 1.1), "a title")
    assert math.isclose(axis.x(1.0), (LEFT + RIGHT) / 2)
    (mean,) = marks(svg, "mean run")
    assert float(mean.get("cx")) == round(axis.x(1.5), 1)
    (interval,) = marks(svg, "interval run")
    bar, *caps = list(interval)
    assert (float(bar.get("x1")), float(bar.get("x2"))) == (round(axis.x(1.2), 1), round(axis.x(1.9), 1))
    assert len(caps) == 2
    (ideal,) = marks(svg, "ideal")
    assert ideal.get("d").startswith(f"M{axis.x(1.8):.1f} ")
    (control,) = marks(svg, "mean control")
    assert float(control.get("cx")) == round(axis.x(1.0), 1) and control.get("fill") == "#fff"
    (null,) = marks(svg, "null")
    assert float(null.get("x1")) == round(axis.x(1.0), 1)
    assert ET.fromstring(svg).find("title").text == "a title" and not marks(svg, "none")


def test_a_bound_beyond_the_axis_reaches_its_edge_without_a_cap_and_no_control_says_so():
    axis = speedup_axis([1e-9, 1.4])  # the low bound is cut at 1/16x
    svg = speedup_chart(axis, Estimate(1.4, 1e-9, 1.6), None, Estimate(None), "t")
    bar, *caps = list(marks(svg, "interval run")[0])
    assert float(bar.get("x1")) == LEFT and len(caps) == 1 and float(caps[0].get("x1")) == round(axis.x(1.6), 1)
    assert not marks(svg, "ideal") and not marks(svg, "control")
    assert [t.text for t in marks(svg, "none")] == ["no control run"]


def test_an_idle_chart_draws_sync_to_async_with_an_arrow_and_the_control_below():
    svg = idle_chart((Estimate(0.5, 0.4, 0.6), Estimate(0.1, 0.05, 0.15)), (Estimate(0.4), Estimate(0.3)), "t")
    sync, asyn = marks(svg, "mean sync")[0], marks(svg, "mean async")[0]
    assert (float(sync.get("cx")), float(asyn.get("cx"))) == (round(IDLE_AXIS.x(0.5), 1), round(IDLE_AXIS.x(0.1), 1))
    line, head = marks(svg, "shift")[:2]
    assert float(line.get("x1")) == float(sync.get("cx")) > float(line.get("x2")) > float(asyn.get("cx"))
    tip = float(head.get("d").split()[0].removeprefix("M"))  # the arrow's head points at async's dot
    assert float(line.get("x2")) > tip > float(asyn.get("cx"))
    controls = marks(svg, "mean control")
    assert len(controls) == 2 and {c.get("cy") for c in controls} != {sync.get("cy")}
    assert not marks(svg, "interval control")  # the control ran once: no interval to draw
    # the async mean at 0 sits on the axis' left end
    flat = idle_chart((Estimate(0.4), Estimate(0.0)), (Estimate(None), Estimate(None)), "t")
    assert float(marks(flat, "mean async")[0].get("cx")) == LEFT and marks(flat, "none")
