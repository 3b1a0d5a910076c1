"""The built-in tasks, in two suites; each task module lists its tasks in `TASKS`.

- `core` (the default): one module per category, small designs whose check takes milliseconds.
- `heavy` (`-o suite=heavy`, the `heavy_*.py` modules): designs of realistic size (a pipelined
  RV32I core, a UART, SHA-256, a cache, ...) checked over 10^5 or more cycles, so that a check
  costs what real hardware verification costs (seconds of simulation).

To add a task, append a `DesignTask` to the `TASKS` list of its module (see
docs/gyms/verilog.md), then run `python -m gyms.verilog.answers.mutant_vetting --write` (`--suite heavy` for the
heavy suite) to choose its mutants.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from gyms.verilog.spec import DesignTask
from gyms.verilog.tasks import (
    arithmetic,
    bus,
    combinational,
    fsm,
    heavy_comm,
    heavy_cpu,
    heavy_crypto,
    heavy_dsp,
    heavy_mem,
    memory,
    sequential,
)

_SUITES = {
    "core": (combinational, arithmetic, sequential, fsm, memory, bus),
    "heavy": (heavy_cpu, heavy_comm, heavy_crypto, heavy_mem, heavy_dsp),
}
SUITES = tuple(_SUITES)
TASK_DIR = Path(__file__).parent  # the golden models: an answer key (`VerilogGym.answer_keys`)


@cache
def suite_tasks(suite: str) -> dict[str, DesignTask]:
    """The tasks of one suite by id, in a stable order (module by module)."""
    if suite not in _SUITES:
        raise ValueError(f"verilog suite={suite!r}: use one of {', '.join(SUITES)}")
    tasks: dict[str, DesignTask] = {}
    for module in _SUITES[suite]:
        for task in module.TASKS:
            if task.id in tasks:
                raise ValueError(f"two built-in tasks share the id {task.id}")
            tasks[task.id] = task
    return tasks


def builtin_tasks() -> dict[str, DesignTask]:
    """Every task of the core suite by id, in a stable order (category by category)."""
    return suite_tasks("core")


@cache
def all_tasks() -> dict[str, DesignTask]:
    """The tasks of every suite by id (the ids of different suites never collide)."""
    found: dict[str, DesignTask] = {}
    for suite in SUITES:
        for task_id, task in suite_tasks(suite).items():
            if task_id in found:
                raise ValueError(f"two built-in tasks share the id {task_id}")
            found[task_id] = task
    return found


def design_task(task_id: str) -> DesignTask:
    """The built-in task (of any suite) with this id."""
    return all_tasks()[task_id]


def suite_of(task_id: str) -> str:
    return next(s for s in SUITES if task_id in suite_tasks(s))
