"""harness/gpu_usage.py: the CUDA devices a policy names, NVML's numbering, the summary of samples,
the sampler's not-measured paths on a machine without a GPU, and the figure in report and leaderboard."""

from __future__ import annotations

import csv
import json
import sys

import pytest
from test_leaderboard import md_tables
from test_report import make_run

from harness import gpu_usage
from harness.gpu_usage import MIB, NO_GPU, Sample, Sampler, devices_of, idle_line, idle_text, nvml_ids, summarize
from harness.leaderboard import CSV, MARKDOWN, publish
from harness.report import write_report
from trainer.buffer import Accounting
from trainer.pipeline import RunConfig, RunResult, StepRecord
from trainer.policies import make_policy
from trainer.policies.profiles import ZERO
from trainer.timeline import Timeline

GIB = 1024 * MIB


def samples(device: int, utilisations: list[int], used_gib: list[float], total_gib: float = 80.0) -> list[Sample]:
    return [Sample(100.0 + 0.1 * k, device, u, int(m * GIB), int(total_gib * GIB))
            for k, (u, m) in enumerate(zip(utilisations, used_gib))]  # fmt: skip


def test_devices_of_reads_the_cuda_devices_a_policy_describes():
    assert devices_of({"policy": "hf", "device": "cuda:0"}) == [0]
    assert devices_of({"device": "cuda"}) == [0]
    assert devices_of({"engine_device": "cuda:0", "learner_device": "cuda:1"}) == [0, 1]
    assert devices_of({"engine_device": "cuda:1", "learner_device": "cuda:1"}) == [1]  # engine and learner together
    assert devices_of({"engine_device": "cuda:2", "learner_device": "cpu"}) == [2]
    assert devices_of({"engine_device": "npu:0", "learner_device": "cpu"}) == []
    assert devices_of({"policy": "replay", "placement": "colocated", "profile": "cuda:0"}) == []  # not a device key
    # the real policies: the tiny torch policy on this machine's CPU, the replay policy with no device at all
    assert devices_of(make_policy("tiny", None, ZERO).describe()) == []  # type: ignore[arg-type]
    assert devices_of(make_policy("replay", None, ZERO).describe()) == []  # type: ignore[arg-type]


def test_nvml_ids_follow_cuda_visible_devices():
    assert nvml_ids([0, 1], None) == [0, 1]
    assert nvml_ids([0, 1], "3,1") == [3, 1]
    assert nvml_ids([1], " 2 , 5 ") == [5]
    uuid = "GPU-5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    assert nvml_ids([0, 1], f"{uuid},MIG-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9") == [
        uuid, "MIG-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"]  # fmt: skip
    with pytest.raises(ValueError, match=r"CUDA_VISIBLE_DEVICES='0' lists no device 1"):
        nvml_ids([1], "0")
    with pytest.raises(ValueError, match=r"CUDA_VISIBLE_DEVICES='' lists no device 0"):
        nvml_ids([0], "")
    assert nvml_ids([0, 1], "0,2,-1,1") == [0, 2]  # as in CUDA, the list ends at an entry that is no device
    with pytest.raises(ValueError, match=r"CUDA_VISIBLE_DEVICES='0,2,-1,1' lists no device 2"):
        nvml_ids([2], "0,2,-1,1")


def test_summarize_one_device():
    s = samples(0, [0, 50, 100, 0, 80, 90, 0, 70, 60, 50], [10, 12, 20, 20, 18, 18, 18, 19, 19, 11])
    gpu = summarize(s)
    assert gpu["measured"] is True and gpu["idle_ratio"] == pytest.approx(0.3)
    device = gpu["devices"]["cuda:0"]
    assert device["samples"] == 10 and device["idle_ratio"] == pytest.approx(0.3)
    assert device["utilisation_mean"] == pytest.approx(50.0)
    assert device["memory_used_peak_mib"] == 20 * 1024 and device["memory_total_mib"] == 80 * 1024
    assert idle_text(gpu) == "30.0%"


def test_summarize_two_devices_averages_their_idle():
    engine = samples(0, [0, 100, 100, 100], [70, 70, 71, 70])  # the engine: idle a quarter of the time
    learner = samples(1, [0, 0, 0, 100], [30, 40, 30, 30], total_gib=141.0)  # the learner: three quarters
    gpu = summarize(engine + learner)
    assert set(gpu["devices"]) == {"cuda:0", "cuda:1"}
    assert gpu["devices"]["cuda:0"]["idle_ratio"] == 0.25 and gpu["devices"]["cuda:1"]["idle_ratio"] == 0.75
    assert gpu["devices"]["cuda:1"]["memory_used_peak_mib"] == 40 * 1024
    assert gpu["devices"]["cuda:1"]["memory_total_mib"] == 141 * 1024
    assert gpu["idle_ratio"] == 0.5
    assert idle_text(gpu) == "50.0% (cuda:0 25.0%, cuda:1 75.0%)"


def test_not_measured_has_a_reason_and_no_figures():
    assert summarize([], NO_GPU) == {"measured": False, "reason": "not measured (no GPU)"}
    reason = "not measured (NVML: Not Supported)"
    assert summarize(samples(0, [0, 10], [1, 1]), reason) == {"measured": False, "reason": reason}  # failed midway
    assert summarize([])["reason"].startswith("not measured (no NVML sample")
    assert idle_text(summarize([], NO_GPU)) == NO_GPU
    assert gpu_usage.idle_ratio(summarize([], NO_GPU)) is None and gpu_usage.idle_ratio(None) is None


def test_a_sampler_without_a_device_measures_nothing_and_does_not_raise():
    with Sampler([]) as sampler:
        pass
    assert sampler.samples == [] and sampler.summary() == {"measured": False, "reason": NO_GPU}


def test_a_sampler_without_nvidia_ml_py_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # what Python does when the package is not installed
    with Sampler([0]) as sampler:
        pass
    assert sampler.summary() == {"measured": False, "reason": "not measured (nvidia-ml-py not installed)"}


def test_a_sampler_for_a_device_cuda_visible_devices_hides_says_so(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with Sampler([1]) as sampler:
        pass
    assert sampler.summary() == {"measured": False, "reason": "not measured (CUDA_VISIBLE_DEVICES='0' lists no device 1)"}


def test_the_summary_keeps_the_samples_of_the_measured_steps():
    timeline = Timeline()
    steps = [StepRecord(k, end, 2.0, 0.5, 1.0, 0.5, 0.0, 0.0, 4, 0.0, 0) for k, end in enumerate((3.0, 5.0, 7.0))]
    result = RunResult(RunConfig(mode="sync", steps=3), steps, timeline, Accounting(), {}, [], 1, 7.0)
    window = gpu_usage.measured_window(result)
    assert window == (timeline.origin + 3.0, timeline.origin + 7.0)  # after the warm-up step, to the last
    sampler = Sampler([0])
    at = [1.0, 2.9, 3.0, 4.0, 5.0, 6.0, 7.0, 7.5]  # seconds since the run began
    sampler.samples = [Sample(timeline.origin + t, 0, 0 if t < 3 else 100, GIB, 80 * GIB) for t in at]
    gpu = sampler.summary(window)
    assert gpu["devices"]["cuda:0"]["samples"] == 5 and gpu["idle_ratio"] == 0.0  # the idle warm-up is left out
    assert sampler.summary()["devices"]["cuda:0"]["samples"] == 8


def test_idle_line_per_mode_or_one_reason():
    measured = summarize(samples(0, [0, 0, 10, 10, 10], [1] * 5))
    assert idle_line({"sync": {"gpu": measured}, "async": {"gpu": summarize(samples(0, [0, 9, 9, 9], [1] * 4))}}) == (
        "GPU-measured idle (NVML): sync 40.0%, async 25.0%"
    )
    no_gpu = summarize([], NO_GPU)
    assert idle_line({"sync": {"gpu": no_gpu}, "async": {"gpu": no_gpu}}) == "GPU-measured idle (NVML): not measured (no GPU)"
    assert idle_line({"sync": {"gpu": measured}, "async": {"gpu": no_gpu}}) == (
        "GPU-measured idle (NVML): sync 40.0%, async not measured (no GPU)"
    )


def test_report_and_leaderboard_show_the_gpu_idle_or_why_not(tmp_path):
    gpu = {"sync": summarize(samples(0, [0, 0, 50, 50], [9] * 4)), "async": summarize([], NO_GPU)}
    for run_id, async_gpu in (("20260101T000000Z-toy", summarize(samples(0, [0, 90, 90, 90, 90, 90, 90, 90], [9] * 8))),
                              ("20260101T000000Z-cpu", gpu["async"])):  # fmt: skip
        path = make_run(tmp_path, run_id, gym=run_id.rsplit("-", 1)[1])
        summary = json.loads((path / "summary.json").read_text())
        summary["modes"]["sync"]["gpu"], summary["modes"]["async"]["gpu"] = gpu["sync"], async_gpu
        (path / "summary.json").write_text(json.dumps(summary))
    make_run(tmp_path, "20260101T000000Z-old", gym="old")  # recorded before NVML sampling

    page = write_report(tmp_path / "runs" / "20260101T000000Z-cpu").read_text()
    assert '<td>GPU-measured idle (NVML)</td><td class="num">50.0%</td><td class="num">not measured (no GPU)</td>' in (
        page.replace("\n", "")
    )
    old = write_report(tmp_path / "runs" / "20260101T000000Z-old").read_text().replace("\n", "")
    assert '<td>GPU-measured idle (NVML)</td><td class="num">-</td><td class="num">-</td>' in old

    publish(tmp_path)
    rows = {r["gym"]: r for r in csv.DictReader((tmp_path / CSV).read_text().splitlines())}
    assert {g: r["gpu_idle_async"] for g, r in rows.items()} == {"toy": "0.125000", "cpu": "", "old": ""}
    figures = md_tables((tmp_path / MARKDOWN).read_text())["All figures"]
    cells = {r["run"].split("-", 1)[1].split("]")[0]: r["GPU idle (NVML) async"] for r in figures}
    assert cells == {"toy": "12.5%", "cpu": "-", "old": "-"}
