"""The cluster `harness benchmark` predicts for (`--target`): accelerators and cores per node, and nodes."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_TARGET = "8x192"  # one node of 8 accelerators and 192 cores, a common GPU node
_TARGET = re.compile(r"(\d+)x(\d+)(?:x(\d+))?")


@dataclass(frozen=True)
class Target:
    accelerators: int  # per node
    cores: int  # per node
    nodes: int = 1

    @classmethod
    def parse(cls, text: str) -> Target:
        """ACCELERATORSxCORES[xNODES], e.g. 8x192 or 8x192x4."""
        found = _TARGET.fullmatch(text.strip())
        if not found or 0 in (numbers := [int(g) for g in found.groups() if g is not None]):
            raise ValueError(f"{text!r}: give ACCELERATORSxCORES[xNODES] per node, e.g. 8x192 or 8x192x4")
        return cls(*numbers)

    def __str__(self) -> str:
        nodes = f" x {self.nodes} nodes" if self.nodes > 1 else ""
        return f"{self.accelerators} accelerators and {self.cores} cores per node{nodes}"
