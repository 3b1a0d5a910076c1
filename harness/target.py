"""The cluster a prediction is for (`--target`): accelerators and cores per node, accelerator nodes,
and the cores of the CPU-only gym nodes the plan may add."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_TARGET = "8x192"  # one node of 8 accelerators and 192 cores, a common GPU node
_TARGET = re.compile(r"(\d+)x(\d+)(?:x(\d+))?(?:\+(\d+))?")
FORM = "ACCELERATORSxCORES[xNODES][+GYM_NODE_CORES] per node, e.g. 8x192, 8x192x4 or 8x192x4+64"


@dataclass(frozen=True)
class Target:
    accelerators: int  # per node
    cores: int  # per node
    nodes: int = 1  # accelerator nodes
    gym_node_cores: int = 0  # CPU-only gym nodes of this many cores may be added; 0: none

    @classmethod
    def parse(cls, text: str) -> Target:
        """ACCELERATORSxCORES[xNODES][+GYM_NODE_CORES], e.g. 8x192, 8x192x4 or 8x192+64."""
        found = _TARGET.fullmatch(text.strip())
        if not found:
            raise ValueError(f"{text!r}: give {FORM}")
        accelerators, cores, nodes, gym = found.groups()
        numbers = [int(accelerators), int(cores), int(nodes or 1)]
        if 0 in numbers or gym is not None and int(gym) == 0:
            raise ValueError(f"{text!r}: give {FORM}")
        return cls(*numbers, int(gym or 0))

    def __str__(self) -> str:
        nodes = f" x {self.nodes} nodes" if self.nodes > 1 else ""
        gym = f", and CPU-only gym nodes of {self.gym_node_cores} cores" if self.gym_node_cores else ""
        return f"{self.accelerators} accelerators and {self.cores} cores per node{nodes}{gym}"
