"""What a checker reports about one proof (both backends, warm and cold)."""

from __future__ import annotations

from dataclasses import dataclass

from gyms.lean.protocol import Axiom, Message


@dataclass(frozen=True)
class Checked:
    messages: tuple[Message, ...]
    axioms: tuple[Axiom, ...] | None  # None: the checker could not list them
    axioms_required: bool  # whether `axioms is None` means the theorem was never declared
    seconds: float
    peak_rss_mb: float | None = None  # cold checks: the lean process's peak memory
    refused: str | None = None  # the checker refused the proof's syntax before elaborating it: why
    refused_at: tuple[int, int] | None = None  # (line, column) of what it refused, in the checked text
    cpu_s: float | None = None  # CPU time the checker's processes spent on the check
