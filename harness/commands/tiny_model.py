"""`harness tiny-model`: a tiny Qwen3-architecture model built in code (trainer/policies/tiny_hf.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness import outputs
from harness.console import console
from harness.options import Seed


def tiny_model(
    out: Annotated[Path, typer.Argument(help="The directory to write (a transformers model directory).")],
    hidden: Annotated[int, typer.Option(min=8, help="Hidden size.")] = 128,
    layers: Annotated[int, typer.Option(min=1)] = 2,
    shape: Annotated[Optional[str], typer.Option(
        help="A real model's shape instead of --hidden and --layers, with random weights: qwen3-4b "
        "(4.02 B parameters, bfloat16, 8 GB on disk).")] = None,
    device: Annotated[str, typer.Option(help="Where the weights are initialised: cpu, or cuda for a large shape.")] = "cpu",
    seed: Seed = 0,
) -> None:
    """Build a tiny Qwen3-architecture model (random weights) and its tokenizer in code, for
    trying the hf and vllm policies without a download: --policy vllm:OUT."""
    from trainer.policies.tiny_hf import SHAPES, build

    if shape is not None and shape not in SHAPES:
        raise typer.BadParameter(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}", param_hint="--shape")
    size = SHAPES[shape] if shape else {"hidden": hidden, "layers": layers}
    outputs.check_writable(out, (9 * 1024 if shape else 16) * outputs.MB)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} exists and is not empty: name a new directory")
    build(out, **size, seed=seed, device=device)  # type: ignore[arg-type]
    console.print(f"written: {out} (use it with --policy vllm:{out} or --policy hf:{out})")
