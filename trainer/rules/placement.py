"""Where the accelerator stages run, one meaning for `benchmark`, `simulate` and `plan`.

* colocated (the default): one pool of accelerators time-shares generation and training. Each
  accelerator is a rollout engine and a data-parallel trainer replica; a train step waits for
  the engine calls in progress, holds every accelerator, and no call starts until it ends.
* disaggregated: rollout engines and trainer replicas have accelerators of their own, so
  generation may overlap training.
"""

from __future__ import annotations

PLACEMENTS = {  # in the words every output uses
    "colocated": "one accelerator pool time-shares generation and training, which never overlap; "
    "only gym work overlaps them",
    "disaggregated": "rollout and training have accelerators of their own, so generation may overlap training",
}
DEFAULT_PLACEMENT = "colocated"


def engines_and_trainers(placement: str, accelerators: int) -> tuple[int, int]:
    """How `accelerators` become rollout engines and trainer replicas: all of them both
    (colocated), or half (at least one) engines and the rest trainers (disaggregated)."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement is colocated or disaggregated, got {placement!r}")
    if placement == "colocated":
        return accelerators, accelerators
    if accelerators < 2:
        raise ValueError("a disaggregated placement needs at least 2 accelerators: one to generate, one to train")
    engines = max(1, accelerators // 2)
    return engines, accelerators - engines
