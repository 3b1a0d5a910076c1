"""GPU utilisation and memory as NVML measures them, sampled while a benchmark mode runs.

The trainer idle ratio (Σ train_wait / Σ step_time) is timed in software; this is the GPU's own
account of the same run, read from the driver: for each CUDA device the policy runs on, NVML's
utilisation (the percentage of its last sample period in which a kernel ran) and memory in use,
every `period_s`; both are the whole device's, other processes' work included. A device is idle in a sample when that utilisation is 0 %. Without a CUDA
device, without nvidia-ml-py or without a driver, the summary says which, and nothing is measured.
"""

from __future__ import annotations

import os
import re
import statistics
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainer.pipeline import RunResult

PERIOD_S = 0.1  # NVML refreshes utilisation every 1/6 s to 1 s (by product): 0.1 s misses no update
NO_GPU = "not measured (no GPU)"
MIB = 2**20
_CUDA = re.compile(r"cuda(?::(\d+))?")


@dataclass(frozen=True)
class Sample:
    time: float  # time.monotonic() when read
    device: int  # the torch (CUDA) device index
    utilisation: int  # percent of NVML's last sample period in which a kernel ran
    memory_used: int  # bytes
    memory_total: int  # bytes


def devices_of(described: Mapping[str, str]) -> list[int]:
    """The CUDA device indices a policy runs on, from its `describe()`: `device` (the torch
    policies), `engine_device` and `learner_device` (the vllm policy). "cuda" alone is index 0;
    cpu, npu:N and the replay policy (no device at all) give none."""
    found = set()
    for key, value in described.items():
        match = _CUDA.fullmatch(str(value).strip()) if key == "device" or key.endswith("_device") else None
        if match:
            found.add(int(match.group(1) or 0))
    return sorted(found)


def nvml_ids(indices: Sequence[int], visible: str | None) -> list[int | str]:
    """What NVML calls torch's CUDA devices `indices`, given CUDA_VISIBLE_DEVICES (`visible`).

    NVML numbers every GPU of the machine in PCI bus order, whatever the process may see; torch's
    index i is the i-th entry of CUDA_VISIBLE_DEVICES when that is set: an index, or a GPU UUID,
    which NVML looks up by UUID (in full: CUDA also takes a UUID's prefix, NVML does not, and the
    sampler then says it found no such device). As in CUDA, the list ends at its first entry that is
    neither. Unset, the numbers agree as long as CUDA orders the GPUs as NVML does: CUDA's default
    order is fastest first, which for identical GPUs is bus order; with mixed GPUs set
    CUDA_DEVICE_ORDER=PCI_BUS_ID (integer entries of CUDA_VISIBLE_DEVICES follow that order too)."""
    if visible is None:
        return list(indices)
    listed: list[int | str] = []
    for entry in (e.strip() for e in visible.split(",")):
        if not (entry.isdigit() or entry.startswith(("GPU-", "MIG-"))):
            break
        listed.append(int(entry) if entry.isdigit() else entry)
    missing = [i for i in indices if i >= len(listed)]
    if missing:
        raise ValueError(f"CUDA_VISIBLE_DEVICES={visible!r} lists no device {missing[0]}")
    return [listed[i] for i in indices]


class Sampler:
    """`with Sampler(indices) as s:` reads the devices every `period_s` on a daemon thread until
    the block ends; `s.summary(window)` then summarizes them. Never raises into the run: what
    went wrong is kept in `reason`, and then nothing counts as measured."""

    def __init__(self, indices: Sequence[int], period_s: float = PERIOD_S) -> None:
        self.indices = list(indices)
        self.period_s = period_s
        self.samples: list[Sample] = []
        self.reason: str | None = None if self.indices else NO_GPU
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        if self.indices:
            self._thread = threading.Thread(target=self._sample, name="nvml-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def summary(self, window: tuple[float, float] | None = None) -> dict[str, Any]:
        """`summarize` of the samples read inside `window` (time.monotonic() bounds), all without."""
        inside = [s for s in self.samples if window is None or window[0] <= s.time <= window[1]]
        return summarize(inside, self.reason)

    def _sample(self) -> None:
        try:
            ids = nvml_ids(self.indices, os.environ.get("CUDA_VISIBLE_DEVICES"))
            import pynvml  # nvidia-ml-py, an optional extra: only runs on CUDA need it
        except ValueError as exc:
            self.reason = f"not measured ({exc})"
            return
        except ImportError:
            self.reason = "not measured (nvidia-ml-py not installed)"
            return
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:  # no driver, or no libnvidia-ml.so.1
            self.reason = f"not measured (NVML: {exc})"
            return
        nvml: int | str = ""  # the device being asked, for the reason when NVML fails
        try:
            devices = []
            for index, nvml in zip(self.indices, ids):
                get = pynvml.nvmlDeviceGetHandleByUUID if isinstance(nvml, str) else pynvml.nvmlDeviceGetHandleByIndex
                devices.append((index, nvml, get(nvml)))
            while True:
                for index, nvml, handle in devices:
                    utilisation = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
                    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
                    self.samples.append(Sample(time.monotonic(), index, utilisation, memory.used, memory.total))
                if self._stop.wait(self.period_s):
                    break
        except pynvml.NVMLError as exc:  # no such device, or one (a MIG slice) whose utilisation NVML does not report
            self.reason = f"not measured (NVML device {nvml}: {exc})"
        finally:
            pynvml.nvmlShutdown()


def measured_window(result: RunResult) -> tuple[float, float]:
    """The run's measured steps in time.monotonic(): from the warm-up step's end to the last
    step's, as `trainer.metrics.summarize` measures the trainer idle ratio (the whole run when it
    had one step). Keeping the samples inside it makes the two idles comparable, and it drops the
    first readings, whose NVML period reaches back before the run (model loading, the mode before)."""
    steps, origin = result.steps, result.timeline.origin
    start = steps[0].end if len(steps) > 1 else 0.0
    return origin + start, origin + steps[-1].end


def summarize(samples: Sequence[Sample], reason: str | None = None) -> dict[str, Any]:
    """Per device ("cuda:N"): samples, mean utilisation %, `idle_ratio` (the share of samples at
    0 %), peak memory used and total (MiB); overall `idle_ratio`, the mean over the devices.
    With a `reason`, or no samples: {"measured": False, "reason": ...}."""
    if reason is not None or not samples:
        return {"measured": False, "reason": reason or "not measured (no NVML sample in the measured steps)"}
    devices = {}
    for index in sorted({s.device for s in samples}):
        mine = [s for s in samples if s.device == index]
        devices[f"cuda:{index}"] = {
            "samples": len(mine),
            "utilisation_mean": statistics.fmean(s.utilisation for s in mine),
            "idle_ratio": sum(s.utilisation == 0 for s in mine) / len(mine),
            "memory_used_peak_mib": max(s.memory_used for s in mine) / MIB,
            "memory_total_mib": max(s.memory_total for s in mine) / MIB,
        }
    idle = statistics.fmean(d["idle_ratio"] for d in devices.values())
    return {"measured": True, "idle_ratio": idle, "devices": devices}


def idle_ratio(gpu: Mapping[str, Any] | None) -> float | None:
    """A mode's GPU-measured idle; None when not measured or recorded before NVML sampling."""
    return gpu["idle_ratio"] if gpu and gpu.get("measured") else None


def idle_text(gpu: Mapping[str, Any]) -> str:
    """'12.3%', with each device's when there are several ('12.3% (cuda:0 20.0%, cuda:1 4.6%)'),
    or why it was not measured."""
    idle = idle_ratio(gpu)
    if idle is None:
        return str(gpu.get("reason", "not measured"))
    devices = gpu.get("devices") or {}
    each = ", ".join(f"{name} {d['idle_ratio']:.1%}" for name, d in devices.items())
    return f"{idle:.1%}" + (f" ({each})" if len(devices) > 1 else "")


def idle_line(modes: Mapping[str, Mapping[str, Any]]) -> str:
    """The console's line: 'GPU-measured idle (NVML): sync 41.0%, async 12.3%', or the reason
    alone when every mode went unmeasured for the same one."""
    texts = {mode: idle_text(figures.get("gpu") or {}) for mode, figures in modes.items()}
    if len(set(texts.values())) == 1 and all(idle_ratio(f.get("gpu")) is None for f in modes.values()):
        return f"GPU-measured idle (NVML): {next(iter(texts.values()))}"
    return "GPU-measured idle (NVML): " + ", ".join(f"{mode} {text}" for mode, text in texts.items())
