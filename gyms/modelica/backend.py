"""Which simulation backend a process uses (the types they share are in `simulation.py`)."""

from __future__ import annotations

import os

from gyms.base import ToolCheck
from gyms.modelica.openmodelica import OpenModelicaBackend, omc_tool
from gyms.modelica.rumoca_backend import RumocaBackend, rumoca_tool
from gyms.modelica.simulation import BACKENDS, Backend, BackendConfig

# One backend per configuration and process: a warm runner must not cross a fork.
_backends: dict[tuple[int, BackendConfig], Backend] = {}


def backend_for(config: BackendConfig) -> Backend:
    key = (os.getpid(), config)
    if key not in _backends:
        if config.kind == "rumoca":
            _backends[key] = RumocaBackend(config)
        elif config.kind == "openmodelica":
            _backends[key] = OpenModelicaBackend(config)
        else:
            raise ValueError(f"unknown Modelica backend {config.kind!r}; use one of {', '.join(BACKENDS)}")
    return _backends[key]


def tool_checks(kind: str) -> list[ToolCheck]:
    """Availability of the tools the chosen backend runs, without starting anything."""
    return [rumoca_tool() if kind == "rumoca" else omc_tool()]
