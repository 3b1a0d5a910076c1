"""`harness tiny-model`: a tiny Qwen3-architecture model built in code (trainer/policies/tiny_hf.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness import outputs
from harness.console import console
from harness.options import Seed


def tiny_model(
    out: Annotated[Path, typer.Argument(help="The directory to write (a transformers model directory).")],
    hidden: Annotated[int, typer.Option(min=8, help="Hidden size.")] = 128,
    layers: Annotated[int, typer.Option(min=1)] = 2,
    seed: Seed = 0,
) -> None:
    """Build a tiny Qwen3-architecture model (random weights) and its tokenizer in code, for
    trying the hf and vllm policies without a download: --policy vllm:OUT."""
    from trainer.policies.tiny_hf import build

    outputs.check_writable(out, 16 * outputs.MB)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} exists and is not empty: name a new directory")
    build(out, hidden=hidden, layers=layers, seed=seed)
    console.print(f"written: {out} (use it with --policy vllm:{out} or --policy hf:{out})")
