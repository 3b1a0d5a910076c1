"""A tiny Qwen3-architecture model and tokenizer, built in code and saved as a transformers
model directory, so the `hf` and `vllm` policies can be run and tested without a download.

The tokenizer is a byte-level BPE trained on a small built-in corpus (digits, arithmetic and
the words of the math gym's prompts), with a chat template; the model has random weights.
`SHAPES` names real models' shapes, so a hardware profile can be timed at a real model's cost
(scripts/gpu-profile.sh): the model then has the real vocabulary's embedding rows, beyond the
small tokenizer's (ids it cannot decode are dropped from the text, as a real tokenizer's padding
rows are).
"""

from __future__ import annotations

from pathlib import Path

EOS = "<|im_end|>"
PAD = "<|endoftext|>"
# A ChatML template, as Qwen3's tokenizers carry (without tools or thinking).
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_CORPUS = [
    "What is 3 + 4? Put the final answer in \\boxed{}.",
    "Solve for x: 2x + 5 = 17. The answer is \\boxed{6}.",
    "Compute the sum, the product and the difference of the numbers.",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 + - * / = ( ) [ ] { } ^ . , : ; ? !",
    "Let n be a positive integer such that the remainder is 3 when divided by 7.",
    "Find the value of the expression. Answer: \\boxed{42}",
]


# Qwen3-4B's config.json: 36 layers, 32 query and 8 key-value heads of 128, hidden 2560, MLP 9728,
# a 151936-token vocabulary and tied embeddings: 4.02 B parameters. The context is cut to 4096.
SHAPES: dict[str, dict[str, object]] = {
    "qwen3-4b": dict(hidden=2560, layers=36, heads=32, kv_heads=8, head_dim=128, intermediate=9728,
                     model_vocab=151936, max_len=4096, dtype="bfloat16"),
}  # fmt: skip


def build(path: str | Path, *, seed: int = 0, device: str = "cpu", **shape: object) -> Path:
    """Write a tokenizer and a randomly initialised Qwen3 causal LM of `shape` (`model_config`'s
    options) to `path`; returns it. `device` is where the weights are initialised (a GPU
    initialises billions in seconds)."""
    import torch
    from transformers import Qwen3ForCausalLM

    path = Path(path)
    tok = tokenizer(int(shape.pop("vocab", 512)), int(shape.get("max_len", 1024)))  # type: ignore[call-overload]
    config = model_config(tok, **shape)  # type: ignore[arg-type]
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(config.dtype)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def tokenizer(vocab: int = 512, max_len: int = 1024):  # type: ignore[no-untyped-def]
    """A byte-level BPE of at most `vocab` tokens, trained on the built-in corpus, with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    specials = [PAD, "<|im_start|>", EOS]
    bpe.train_from_iterator(
        _CORPUS * 4,
        trainers.BpeTrainer(vocab_size=vocab, special_tokens=specials,
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
    )  # fmt: skip
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOS, pad_token=PAD, bos_token=None)
    tok.chat_template = CHAT_TEMPLATE
    tok.model_max_length = max_len
    return tok


def model_config(tok, *, hidden: int = 128, layers: int = 2, heads: int = 4, kv_heads: int = 2,  # type: ignore[no-untyped-def]
                 max_len: int = 1024, head_dim: int | None = None, intermediate: int | None = None,
                 model_vocab: int | None = None, dtype: str = "float32"):  # fmt: skip
    """The Qwen3 config of a model for `tok`: `model_vocab` (at least the tokenizer's size) is its
    embedding rows."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=max(len(tok), model_vocab or 0), hidden_size=hidden, intermediate_size=intermediate or 2 * hidden,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        head_dim=head_dim or hidden // heads, max_position_embeddings=max_len, tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None, dtype=dtype,
    )  # fmt: skip
