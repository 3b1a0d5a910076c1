"""Published async-vs-sync tables as checks of the simulator (harness/published.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import published

# The tolerances the simulator is held to (issue 44): speedup within 10 %, trainer idle within 5 points.
SPEEDUP = 0.10
IDLE = 0.05

# Where a shipped setup misses, the documented distance (docs/simulate.md) instead, with why:
# npu-study-setup-1's async run oscillates (a 2-step cycle whose source the simulator does not
# model: it predicts a steady rollout-bound pipeline), so its mean of per-step idle ratios (14.3
# points over) and the oscillation are missed; its speedup is held to the tolerance.
# verl-one-step-off-megatron: its async generation (501 s a batch) and training (507 s a step) are
# balanced in the table's means, so the steady simulation never waits (0.0 %) while verl's trainer
# waited 59 s a step (10.4 %): the source's steps vary (a mean of per-step waits max(0, gen - train)
# over a run whose response lengths change), which a stationary simulation of the means does not
# have; its async step is predicted 10 % short and its speedup 11.6 % high (docs/simulate.md).
KNOWN_MISSES = {
    "npu-study-setup-1": {"async_idle": 0.15, "oscillation": False},
    "verl-one-step-off-megatron": {"async_idle": 0.11, "speedup": 0.12},
}


@pytest.mark.parametrize("name", published.names())
def test_the_simulator_reproduces_each_shipped_setup(name):
    result = published.compare(published.load(name))
    miss = KNOWN_MISSES.get(name, {})
    for mode in published.MODES:
        idle = result[mode]["trainer_idle"]
        allowed = miss.get(f"{mode}_idle", IDLE)
        assert abs(idle["predicted"] - idle["published"]) <= allowed, (mode, idle)
    speedup = result["speedup"]
    assert abs(speedup["predicted"] / speedup["published"] - 1) <= miss.get("speedup", SPEEDUP), speedup
    osc = result["async"]["oscillation"]
    if miss.get("oscillation", True):
        assert osc["predicted"] == osc["published"], osc


def test_the_study_setups_ship():
    assert {"npu-study-setup-1", "npu-study-setup-2"} <= set(published.names())


def test_other_systems_tables_ship_with_their_source():
    """At least two setups of another system than the study's, each citing a public URL."""
    others = [published.load(n) for n in published.names() if not n.startswith("npu-study")]
    assert len(others) >= 2
    for setup in others:
        assert setup.source["url"].startswith("https://")
        assert setup.of("placement", "sync") == "colocated" and setup.of("placement", "async") == "disaggregated"


def _quick(tmp_path: Path, name: str, **changes) -> published.Setup:
    data = json.loads((published.SHIPPED / f"{name}.json").read_text())
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({**data, "steps": 10, "seeds": 1, **changes}))
    return published.load(str(path))


def test_a_setup_may_carry_its_own_profile_and_a_placement_per_mode(tmp_path: Path):
    """verl's table: sync colocated on 8 engines, async disaggregated on 2, from an inline profile."""
    setup = _quick(tmp_path, "verl-one-step-off-fsdp2")
    assert isinstance(setup.profile, dict) and setup.hardware().decode_s_per_token
    assert (setup.of("engines", "sync"), setup.of("engines", "async")) == (8, 2)
    with pytest.raises(ValueError, match="engines and trainers must be equal"):
        _quick(tmp_path, "verl-one-step-off-fsdp2", trainers={"sync": 4, "async": 1})
    with pytest.raises(ValueError, match="placement is one value or one per mode"):
        _quick(tmp_path, "verl-one-step-off-fsdp2", placement={"sync": "colocated"})
    with pytest.raises(ValueError, match="profile:"):
        _quick(tmp_path, "verl-one-step-off-fsdp2", profile={"generate_s_per_token": 1e-5})
    with pytest.raises(ValueError, match="pause_engines_on_update is for disaggregated"):
        _quick(tmp_path, "verl-one-step-off-fsdp2", pause_engines_on_update=True,
               placement={"sync": "disaggregated", "async": "colocated"}, trainers={"sync": 8, "async": 2})


def test_one_call_per_start_is_what_keeps_a_batch_in_one_call(tmp_path: Path):
    """verl submits each batch as one generate call. Without the option, the simulated engine starts a
    call with the batch's first request and, once it is full, leaves the rest to a second call with a
    latency-bound tail of its own (321 s), which two async steps in three then pay."""
    steps = {}
    for one_call in (True, False):
        figures = published.predict(_quick(tmp_path, "verl-one-step-off-fsdp2", one_call_per_start=one_call))["figures"]
        steps[one_call] = (figures["sync"].step_time_s, figures["async"].step_time_s)
    assert steps[True][0] == pytest.approx(steps[False][0], rel=0.01)  # sync: 1,024 requests an engine, one call anyway
    assert steps[False][1] > steps[True][1] + 100


def test_a_bad_file_is_one_error_line(tmp_path: Path):
    good = json.loads((published.SHIPPED / "npu-study-setup-2.json").read_text())
    path = tmp_path / "setup.json"
    path.write_text(json.dumps({**good, "placement": "sideways"}))
    with pytest.raises(ValueError, match=r"is not a published setup: placement") as err:
        published.load(str(path))
    assert "\n" not in str(err.value)
    path.write_text(json.dumps({**good, "idle_statistic": {"sync": "median", "async": "ratio_of_means"}}))
    with pytest.raises(ValueError, match="idle_statistic.sync"):
        published.load(str(path))
    path.write_text("{not json")
    with pytest.raises(ValueError, match="is not a published setup"):
        published.load(str(path))
    with pytest.raises(ValueError, match="unknown published setup 'nope'"):
        published.load("nope")


def test_the_idle_statistic_is_the_sources(tmp_path: Path):
    """An oscillating series: the mean of per-step ratios sits below the ratio of means."""
    data = json.loads((published.SHIPPED / "npu-study-setup-1.json").read_text())
    means = {}
    for statistic in published.STATISTICS:
        path = tmp_path / f"{statistic}.json"
        path.write_text(json.dumps({**data, "steps": 12, "seeds": 1,
                                    "idle_statistic": {"sync": statistic, "async": statistic}}))  # fmt: skip
        means[statistic] = published.predict(published.load(str(path)))["figures"]["async"].trainer_idle
    assert means["mean_of_step_ratios"] < means["ratio_of_means"]


def test_a_setups_engine_pause_is_what_slows_its_async_steps(tmp_path: Path):
    """Setup 1 is rollout-bound: the engine's pause for each weight load lengthens every async step
    by about the load (2.9 s); sync's engine is idle during the load, so sync does not move."""
    data = json.loads((published.SHIPPED / "npu-study-setup-1.json").read_text())
    assert data["pause_engines_on_update"]
    steps = {}
    for pause in (False, True):
        path = tmp_path / f"{pause}.json"
        path.write_text(json.dumps({**data, "steps": 20, "seeds": 1, "pause_engines_on_update": pause}))
        figures = published.predict(published.load(str(path)))["figures"]
        steps[pause] = (figures["sync"].step_time_s, figures["async"].step_time_s)
    assert steps[True][0] == pytest.approx(steps[False][0])
    assert 2.0 < steps[True][1] - steps[False][1] < 3.5
