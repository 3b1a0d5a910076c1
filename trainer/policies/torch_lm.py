"""The `tiny` and `hf` policies: a torch `Learner` and a `TorchEngine` of the same model composed
(`ModelPolicy`). `tiny` is a small transformer built in code, `hf` any transformers causal LM
saved in a local directory; the vllm policy loads its learner here too (`transformers_model`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from trainer.policies import options
from trainer.policies.chat import ChatTemplate, PlainTemplate, text_encoder
from trainer.policies.learner import Learner
from trainer.policies.model_policy import ModelPolicy
from trainer.policies.torch_engine import TorchEngine

if TYPE_CHECKING:
    from trainer.policies.registry import PolicyContext

def tiny_policy(
    *, dim: int = 64, layers: int = 2, heads: int = 4, max_len: int = 256, seed: int = 0, **options: Any
) -> ModelPolicy:
    from trainer.policies.tiny_model import ByteTokenizer, TinyLM

    torch.manual_seed(seed)
    model = TinyLM(ByteTokenizer.vocab_size, dim, layers, heads, max_len)
    learner = Learner(model, ByteTokenizer(), logits=lambda m, ids: m(ids), max_len=max_len, seed=seed, **options)
    return ModelPolicy("tiny", learner, TorchEngine(learner, seed))


class HFTokenizer:
    """Adapts a transformers tokenizer to the small protocol the learner needs."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.eos_id = tok.eos_token_id
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        # Without a chat template, prompts and feedback are text all through: no added token's id.
        self.template = ChatTemplate(tok) if tok.chat_template else PlainTemplate(text_encoder(tok))

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, tokens: list[int]) -> str:
        return self.tok.decode(tokens, skip_special_tokens=True)


def hf_logits(model: Any, ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids).logits


def transformers_model(path: str, device: str, seed: int, **load: Any) -> tuple[torch.nn.Module, HFTokenizer, int]:
    """The causal LM saved at `path` (a local directory: nothing is downloaded), its tokenizer,
    and its context length (at most 4096). `load`: from_pretrained's options (dtype)."""
    # Checked here: transformers takes a missing directory for a Hub repo id and says so.
    wanted = ("pass a local directory holding a saved transformers model (its config.json and weights, e.g. "
              "from harness tiny-model); nothing is downloaded at run time")  # fmt: skip
    if not Path(path).is_dir():
        raise ValueError(f"no model directory at {path}: {wanted}")
    if not (Path(path) / "config.json").is_file():
        raise ValueError(f"{path} holds no config.json, so no saved transformers model: {wanted}")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if device.startswith("npu"):
        import torch_npu  # noqa: F401  (registers the npu device with torch)
    torch.manual_seed(seed)
    try:
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **load)
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except OSError as exc:
        raise ValueError(f"cannot load a transformers model from {path!r}: {exc}") from exc
    return model, HFTokenizer(tok), min(getattr(model.config, "max_position_embeddings", 2048), 4096)


def hf_policy(path: str, *, device: str = "cpu", seed: int = 0, max_len: int | None = None, **options: Any) -> ModelPolicy:
    """Any transformers causal LM saved at `path`."""
    model, tokenizer, context = transformers_model(path, device, seed)
    learner = Learner(model, tokenizer, logits=hf_logits, max_len=max_len or context, device=device, seed=seed, **options)
    return ModelPolicy("hf", learner, TorchEngine(learner, seed))


def tiny_from_spec(rest: str, context: PolicyContext) -> ModelPolicy:
    """`tiny[:OPTIONS]` (registry.py)."""
    context.on_real_hardware("tiny")
    return tiny_policy(seed=context.seed, **options.torch_only(context.options(rest)))


def hf_from_spec(rest: str, context: PolicyContext) -> ModelPolicy:
    """`hf:PATH[@DEVICE][:OPTIONS]` (registry.py); the device defaults to cpu."""
    context.on_real_hardware("hf")
    path, device, text = options.location(rest, "hf")
    return hf_policy(path, device=device or "cpu", seed=context.seed, **options.torch_only(context.options(text)))
