"""Which simulation backend a process uses (the types they share are in `simulation.py`)."""

from __future__ import annotations

from gyms.base import ToolCheck
from gyms.modelica.openmodelica import OpenModelicaBackend, omc_tool
from gyms.modelica.rumoca_backend import RumocaBackend, rumoca_tool
from gyms.modelica.simulation import BACKENDS, Backend, BackendConfig
from gyms.resources import per_process


def backend_for(config: BackendConfig) -> Backend:
    """This process's backend for `config` (`gyms.resources.per_process`: its warm runners are
    shut down when the process ends)."""
    if config.kind not in BACKENDS:
        raise ValueError(f"unknown Modelica backend {config.kind!r}; use one of {', '.join(BACKENDS)}")
    kind = RumocaBackend if config.kind == "rumoca" else OpenModelicaBackend
    return per_process(("modelica", config), lambda: kind(config))


def tool_checks(kind: str) -> list[ToolCheck]:
    """Availability of the tools the chosen backend runs, without starting anything."""
    return [rumoca_tool() if kind == "rumoca" else omc_tool()]
