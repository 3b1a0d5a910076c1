"""The built-in tasks, one module per category; each module lists its tasks in `TASKS`.

To add a task, append a `DesignTask` to the `TASKS` list of its category module (see
docs/gyms/verilog.md), then run `python -m gyms.verilog.vet --write` to choose its mutants.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from gyms.sandbox import hide_from_sandboxes
from gyms.verilog.spec import DesignTask
from gyms.verilog.tasks import arithmetic, bus, combinational, fsm, memory, sequential

_MODULES = (combinational, arithmetic, sequential, fsm, memory, bus)
hide_from_sandboxes(Path(__file__).parent)  # the golden models: the answer key stays on the host


@cache
def builtin_tasks() -> dict[str, DesignTask]:
    """Every built-in task by id, in a stable order (category by category)."""
    tasks: dict[str, DesignTask] = {}
    for module in _MODULES:
        for task in module.TASKS:
            if task.id in tasks:
                raise ValueError(f"two built-in tasks share the id {task.id}")
            tasks[task.id] = task
    return tasks
