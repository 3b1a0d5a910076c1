"""Executors: where the gym workers run. `local` (processes on this machine, no Ray needed) or
`ray` (actors on a Ray cluster, docs/ray.md). The trainer takes either pool unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gyms.pool import GymPool, SlotPool

EXECUTORS = ("local", "ray")


def make_pool(
    executor: str,
    gym: str,
    gym_options: dict[str, str] | None = None,
    workers: int | None = None,
    step_timeout_s: float = 10.0,
    ray_address: str | None = None,
    answer_keys: Sequence[Path] = (),
) -> SlotPool:
    """A gym pool for `gym` (a registered name or module:Class) on the chosen executor, whose
    workers mask `answer_keys` (the gym's `answer_keys()`; a Ray worker asks its own gym)."""
    check(executor, ray_address)
    if executor == "local":
        return GymPool(workers, step_timeout_s=step_timeout_s, answer_keys=answer_keys)
    from gyms.ray_pool import RayGymPool  # Ray is imported only when asked for

    return RayGymPool(gym, gym_options, workers, step_timeout_s=step_timeout_s, address=ray_address)


def check(executor: str, ray_address: str | None) -> None:
    """Refuse a bad choice before any work starts (raises ValueError)."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; use one of: {', '.join(EXECUTORS)}")
    if executor == "local" and ray_address is not None:
        raise ValueError("--ray-address needs --executor ray (the local executor runs on this machine)")
