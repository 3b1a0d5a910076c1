"""Scoring trajectories: grids with event instants, tolerances, event windows, requirements."""

from __future__ import annotations

import numpy as np
import pytest

from gyms.modelica.compare import (
    Tolerance,
    check_requirement,
    dense_intervals,
    event_times,
    grid,
    match_trajectory,
    on_grid,
)

POINTS = grid(1.0, 10)


def bouncing(t_event: float, after: float = -1.0) -> tuple[list[float], list[float]]:
    """A trajectory on the 0.1 grid that jumps from t to `after` at an event off the grid."""
    time = [float(t) for t in POINTS if t < t_event] + [t_event, t_event] + [float(t) for t in POINTS if t > t_event]
    values = [t if t < t_event else after for t in time]
    values[len([t for t in POINTS if t < t_event])] = t_event  # the left limit at the event
    return time, values


def test_values_at_an_event_instant_are_taken_after_the_event():
    time = [0.0, 0.5, 0.5, 1.0]
    values = [0.0, 1.0, 5.0, 6.0]
    assert on_grid(time, values, np.array([0.0, 0.5, 1.0])).tolist() == [0.0, 5.0, 6.0]
    assert on_grid([0.0, 1.0], [0.0, 2.0], np.array([0.25])).tolist() == [0.5]  # off the samples: interpolated


def test_event_instants_are_repeated_or_off_grid_times():
    time, _ = bouncing(0.45)
    assert event_times(time, POINTS).tolist() == [0.45]
    assert event_times([float(t) for t in POINTS], POINTS).size == 0


def test_identical_trajectories_match_and_a_small_error_is_tolerated():
    time = POINTS.tolist()
    ref = np.sin(POINTS).tolist()
    near = (np.sin(POINTS) * (1 + 5e-4)).tolist()
    far = (np.sin(POINTS) * 1.01).tolist()
    tol = Tolerance(rtol=1e-3)
    assert match_trajectory("x", (time, ref), (time, ref), POINTS, tol, 1e-3).passed
    assert match_trajectory("x", (time, ref), (time, near), POINTS, tol, 1e-3).passed
    outcome = match_trajectory("x", (time, ref), (time, far), POINTS, tol, 1e-3)
    assert not outcome.passed
    assert "`x` differs from the expected trajectory from time 0.1" in outcome.detail


def test_the_absolute_floor_scales_with_the_range_so_zero_crossings_pass():
    time = POINTS.tolist()
    ref = np.cos(np.pi * POINTS)  # crosses zero at 0.5, where a pure relative bound is 0
    cand = ref + 1e-4  # 1e-4 of a range of 2
    assert match_trajectory("x", (time, ref.tolist()), (time, cand.tolist()), POINTS, Tolerance(), 1e-3).passed
    assert Tolerance(rtol=1e-3, atol_floor=1e-9).bound(np.zeros(3)).tolist() == [1e-9] * 3


def test_an_event_a_hair_later_passes_but_a_shifted_event_fails():
    reference = bouncing(0.45)
    assert match_trajectory("h", reference, bouncing(0.45 + 1e-6), POINTS, Tolerance(), 1e-4).passed
    late = bouncing(0.55)  # the grid point 0.5 now lies between the two events
    outcome = match_trajectory("h", reference, late, POINTS, Tolerance(), 1e-4)
    assert not outcome.passed and "from time 0.5 on" in outcome.detail


def test_only_reference_events_open_windows():
    reference = (POINTS.tolist(), POINTS.tolist())  # no events
    time, values = bouncing(0.5 - 1e-7, after=9.0)  # the candidate jumps just before a grid point
    outcome = match_trajectory("x", reference, (time, values), POINTS, Tolerance(), 1e-3)
    assert not outcome.passed


def test_nan_values_fail():
    time = POINTS.tolist()
    cand = [float("nan")] * len(time)
    assert not match_trajectory("x", (time, time), (time, cand), POINTS, Tolerance(), 1e-3).passed


STEP_TIME = np.linspace(0, 5, 501)
# A second-order step response towards 1 with 21 % overshoot, settled (2 %) after about 4.
STEP = 1 - np.exp(-STEP_TIME) * (np.cos(2 * STEP_TIME) + 0.5 * np.sin(2 * STEP_TIME))


@pytest.mark.parametrize(
    ("requirement", "passes", "found"),
    [
        ({"kind": "overshoot", "variable": "y", "target": 1.0, "max": 0.25}, True, "20.79%"),
        ({"kind": "overshoot", "variable": "y", "target": 1.0, "max": 0.1}, False, "(required: at most 10.00%)"),
        ({"kind": "settling_time", "variable": "y", "target": 1.0, "max": 4.5}, True, "settles within 2% of 1 after"),
        ({"kind": "settling_time", "variable": "y", "target": 1.0, "max": 1.0}, False, "after at most 1)"),
        ({"kind": "settling_time", "variable": "y", "target": 2.0, "max": 4.0}, False, "never settles"),
        ({"kind": "final_value", "variable": "y", "target": 1.0, "tolerance": 0.01}, True, "± 0.01"),
        ({"kind": "peak", "variable": "y", "max": 1.1}, False, "largest magnitude 1.2"),
    ],
)
def test_requirements(requirement, passes, found):
    outcome = check_requirement(requirement, STEP_TIME, STEP)
    assert outcome.passed is passes
    assert found in outcome.detail


def test_requirements_are_measured_from_from_time():
    delayed_time = np.concatenate([[0.0], STEP_TIME + 1.0])
    delayed = np.concatenate([[0.0], STEP])
    requirement = {"kind": "settling_time", "variable": "y", "target": 1.0, "max": 4.0, "from_time": 1.0}
    assert check_requirement(requirement, delayed_time, delayed).passed


def test_an_unknown_requirement_kind_says_which_exist():
    with pytest.raises(ValueError, match="use overshoot, settling_time, final_value or peak"):
        check_requirement({"kind": "rise_time", "variable": "y"}, STEP_TIME, STEP)


@pytest.mark.parametrize("secret", [0.05, 0.5, 0.95])
@pytest.mark.parametrize("intervals", [1, 7, 400, 1000])
def test_the_dense_grid_is_eight_to_nine_times_finer_and_never_a_refinement(intervals, secret):
    dense = dense_intervals(intervals, secret)
    assert 8 * intervals < dense <= 9 * intervals + 1
    assert intervals == 1 or dense % intervals != 0


def test_a_wobble_between_output_instants_passes_on_them_and_fails_densely():
    output = grid(20.0, 400)
    dense = grid(20.0, dense_intervals(400, 0.37))
    wobbly = lambda t: np.exp(-t / 5) + 0.5 * np.sin(np.pi * t / 0.05)  # noqa: E731
    exact = lambda t: np.exp(-t / 5)  # noqa: E731
    at_instants = match_trajectory("x", (output, exact(output)), (output, wobbly(output)), output, Tolerance(), 2e-3)
    assert at_instants.passed  # what the old, output-instant comparison saw
    densely = match_trajectory("x", (dense, exact(dense)), (dense, wobbly(dense)), dense, Tolerance(), 2e-3)
    assert not densely.passed and "compared points are off" in densely.detail
