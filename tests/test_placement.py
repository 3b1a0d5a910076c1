"""Placement of the replay policy's emulated accelerator stages: colocated generation and
training take turns on one accelerator pool; disaggregated ones overlap."""

from __future__ import annotations

import threading

import pytest
from toy_gyms import ToyGym

from gyms.pool import GymPool
from trainer.metrics import summarize
from trainer.pipeline import RunConfig, run
from trainer.policies import make_policy
from trainer.policies.profiles import HardwareProfile
from trainer.policies.replay import ReplayPolicy
from trainer.timeline import Span

FAST = HardwareProfile("test-fast", "test", 1e-5, 1e-5, 0.01, response_tokens=100, prompt_tokens=10)
GATE_S = 30.0  # a bound for a broken build only: the gate opens as soon as its event happens


class GatedReplay(ReplayPolicy):
    """Holds a training step open until a rollout thread asks for a generation while it trains
    (once per run), so every run below has generation that wants the accelerator during
    training. `asked` is set when an engine call asks for the accelerator during training
    (colocated: it then has to wait), `overlapped` when an engine call ends during training."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.training = threading.Event()
        self.asked = threading.Event()
        self.overlapped = threading.Event()

    def accelerator(self):
        if self.training.is_set():  # the trainer asks before it trains: this is the engine
            self.asked.set()
        return super().accelerator()

    def _record_engine_call(self, start, end, version):
        if self.training.is_set():  # the call ended (inside its hold of the accelerator) during training
            self.overlapped.set()
        return super()._record_engine_call(start, end, version)

    def train_step(self, groups):
        self.training.set()
        try:
            gate = self.asked if self.placement == "colocated" else self.overlapped
            gate.wait(GATE_S)
            return super().train_step(groups)
        finally:
            self.training.clear()


def overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def gated_run(placement: str):
    gym = ToyGym(max_turns=3, tasks=4)  # skill 0: every answer wrong, every episode three turns
    policy = GatedReplay(gym, FAST, skill=0.0, seed=0, placement=placement)
    with GymPool(workers=2, step_timeout_s=1.0) as pool:
        config = RunConfig(mode="async", steps=4, batch_groups=2, group_size=2, max_staleness=1)
        result = run(gym, policy, pool, config)
    tl = result.timeline
    generation = tl.select("rollout", "generate")
    training = tl.select("trainer", "actor_train") + tl.select("trainer", "update_weights")
    return policy, result, [(g, t) for g in generation for t in training if overlaps(g, t)]


@pytest.mark.slow
def test_colocated_async_never_overlaps_generation_with_training():
    policy, result, overlapping = gated_run("colocated")
    assert policy.asked.is_set(), "no generation was asked for during training: the test proves nothing"
    assert not policy.overlapped.is_set()
    assert not overlapping, overlapping[:3]
    # the trainer's wait for the accelerator is a span of its own, one per step
    assert len(result.timeline.select("trainer", "accelerator_wait")) == len(result.steps)
    summary = summarize(result)
    stage = summary["stage_per_step"]
    assert summary["placement"] == "colocated"
    assert summary["ideal_step_time"] == pytest.approx(max(stage["generate"] + stage["train"], stage["gym"]))


def test_disaggregated_async_overlaps_generation_with_training():
    policy, result, overlapping = gated_run("disaggregated")
    assert policy.overlapped.is_set()
    assert overlapping
    assert not result.timeline.select("trainer", "accelerator_wait")
    summary = summarize(result)
    stage = summary["stage_per_step"]
    assert summary["placement"] == "disaggregated"
    assert summary["ideal_step_time"] == pytest.approx(max(stage["generate"], stage["gym"], stage["train"]))


def test_placement_is_named_and_checked():
    gym = ToyGym()
    assert ReplayPolicy(gym, FAST).placement == "colocated"  # the default (docs/benchmarks.md)
    assert make_policy("replay", gym, FAST, placement="disaggregated").describe()["placement"] == "disaggregated"
    with pytest.raises(ValueError, match="colocated' or 'disaggregated"):
        ReplayPolicy(gym, FAST, placement="sideways")
    with pytest.raises(ValueError, match="placement is an option of the replay policy"):
        make_policy("tiny", gym, FAST, placement="colocated")



def test_the_report_names_the_placement_and_old_runs_read_as_disaggregated(tmp_path):
    import json

    from test_report import make_run

    from harness.report import write_report
    from harness.rundir import load_run

    old = make_run(tmp_path, "20260101T000000Z-toy")  # a summary from before the option
    assert load_run(old).placement == "disaggregated"
    assert "Placement <b>disaggregated</b>" in write_report(old).read_text()
    new = make_run(tmp_path, "20260102T000000Z-toy")
    summary = json.loads((new / "summary.json").read_text())
    (new / "summary.json").write_text(json.dumps({**summary, "placement": "colocated"}))
    assert "Placement <b>colocated</b>: one accelerator pool time-shares" in write_report(new).read_text()
    measured = make_run(tmp_path, "20260103T000000Z-toy", modes=("async",), profile=None)
    assert load_run(measured).placement is None and "Placement" not in write_report(measured).read_text()
