"""RTLLM 2.0: one directory per design (nested under category folders), holding
`design_description.txt`, `testbench.v` and `verified_<design>.v`, plus any data files the
testbench reads. The candidate defines the module named in the reference; the testbench
prints `Your Design Passed` on success, so a task scores 0 or 1.
"""

from __future__ import annotations

import re
from pathlib import Path

from gyms.base import Task
from gyms.verilog.loaders.common import instruction, reference_ports

_MODULE = re.compile(r"^\s*module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.MULTILINE)


def rtllm_tasks(root: Path) -> list[Task]:
    tasks = []
    for description in sorted(root.rglob("design_description.txt")):
        folder = description.parent
        design = folder.name
        verified = folder / f"verified_{design}.v"
        if not (verified.is_file() and (folder / "testbench.v").is_file()):
            continue
        reference = verified.read_text(errors="replace")
        names = _MODULE.findall(reference)
        module = design if design in names else (names[0] if names else design)
        tasks.append(
            Task(
                id=f"rtllm/{design}",
                prompt=f"{description.read_text(errors='replace').strip()}\n\n{instruction(module)}",
                reference=reference,
                metadata={"kind": "rtllm", "dir": str(folder), "module": module,
                          "ports": reference_ports(reference, module)},  # fmt: skip
            )
        )
    if not tasks:
        raise ValueError(
            f"no RTLLM designs under {root}: expected <design>/design_description.txt with testbench.v and "
            "verified_<design>.v beside it"
        )
    return tasks
