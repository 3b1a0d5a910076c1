"""RTLLM 2.0 (github hkust-zhiyao/RTLLM): one folder per design below category folders, some
with spaces in their names (`Arithmetic/Adder/adder_8bit/`, `Control/Finite State Machine/fsm/`).
A design folder holds `design_description.txt` (the prompt, with a `Module name:` line),
`testbench.v` (prints `Your Design Passed` on success, so a task scores 0 or 1), the reference,
usually `verified_<design>.v`, and sometimes data files the testbench reads or a makefile.

What the shipped files do not make obvious, and this loader handles:
- the reference's design module is often named `verified_<design>` (or after its file) while
  the testbench instantiates `<design>`: it is renamed to the name the testbench uses, and the
  model is asked for that name;
- a reference may hold several modules (a FIFO and its RAM): the design is the one the
  testbench instantiates (or its `verified_` form), else the one no other module instantiates;
- a few references are named after a sub-block (`verified_booth4_mul.v` in `multi_booth_8bit/`):
  then the reference is the one .v file beside the testbench that defines the design.
A folder that cannot be made a task is reported with the reason, never dropped silently.
"""

from __future__ import annotations

import re
from pathlib import Path

from gyms.base import Task
from gyms.verilog.datasets.common import Loaded, instruction, module_instances, reference_ports, rename_module

DESCRIPTION, TESTBENCH = "design_description.txt", "testbench.v"
# "Module name:" then the name, on the same line or the next ("Module name:  \n   accu  \n").
_DESCRIBED = re.compile(r"^\s*Module name:[ \t]*\n?[ \t]*([A-Za-z_][\w$]*)[ \t]*$", re.MULTILINE | re.IGNORECASE)


class Unloadable(Exception):
    """Why a design folder cannot be made a task."""


def rtllm_tasks(root: Path) -> Loaded:
    tasks: list[Task] = []
    unloadable: dict[str, str] = {}
    folders = sorted({p.parent for name in (DESCRIPTION, TESTBENCH) for p in root.rglob(name) if p.is_file()})
    where: dict[str, Path] = {}
    for folder in folders:
        task_id = f"rtllm/{folder.name}"
        relative = folder.relative_to(root)
        if task_id in where:
            unloadable[f"{task_id} ({relative})"] = f"{relative}: another design folder has this name: {where[task_id]}"
            continue
        where[task_id] = relative
        try:
            tasks.append(_task(folder, task_id))
        except Unloadable as exc:
            unloadable[task_id] = f"{relative}: {exc}"
    if not tasks:
        found = "".join(f"; {reason}" for reason in list(unloadable.values())[:3])
        raise ValueError(
            f"no RTLLM designs under {root}: expected <design>/{DESCRIPTION} with {TESTBENCH} and the reference "
            f"(verified_<design>.v) beside it{found}"
        )
    return Loaded(tasks, unloadable)


def _task(folder: Path, task_id: str) -> Task:
    description, testbench = _read(folder / DESCRIPTION), _read(folder / TESTBENCH)
    module = design_module(description, testbench)
    reference_file = find_reference(folder, module)
    reference = as_design(reference_file, module)
    return Task(
        id=task_id,
        prompt=f"{description.strip()}\n\n{instruction(module)}",
        reference=reference,
        metadata={"kind": "rtllm", "dir": str(folder), "module": module, "reference_file": reference_file.name,
                  "ports": reference_ports(reference, module)},  # fmt: skip
    )


def design_module(description: str, testbench: str) -> str:
    """The module the design must define: the one the testbench instantiates and does not define.

    The description's `Module name:` should name the same module. Where they disagree, the
    testbench wins: it is what every answer is compiled against, so a design with the
    described name could never pass. The description only picks among several instantiated
    modules.
    """
    described = _DESCRIBED.search(description)
    tb = module_instances(testbench)
    instantiated = sorted({name for used in tb.values() for name in used} - set(tb))
    if described is not None and described.group(1) in instantiated:
        return described.group(1)
    if len(instantiated) == 1:
        return instantiated[0]
    if not instantiated:
        raise Unloadable(f"{TESTBENCH} instantiates no module it does not define itself")
    named = f"names {described.group(1)}" if described else "has no 'Module name:' line"
    raise Unloadable(f"{TESTBENCH} instantiates {', '.join(instantiated)} and {DESCRIPTION} {named}: "
                     "which one is the design is unclear")  # fmt: skip


def find_reference(folder: Path, module: str) -> Path:
    """`verified_<design>.v`, else the one .v file beside the testbench that defines the design."""
    conventional = folder / f"verified_{folder.name}.v"
    if conventional.is_file():
        return conventional
    files = sorted(p for p in folder.glob("*.v") if p.is_file() and p.name != TESTBENCH)
    names = {module, f"verified_{module}"}
    defining = [p for p in files if names & set(module_instances(_read(p)))]
    if len(defining) == 1:
        return defining[0]
    if not defining and len(files) == 1:
        return files[0]  # named after a sub-block, its module too: `as_design` finds the top
    if not files:
        raise Unloadable(f"no reference: no .v file beside {TESTBENCH}")
    raise Unloadable(f"no single reference: {', '.join(p.name for p in defining or files)} could each be it")


def as_design(reference_file: Path, module: str) -> str:
    """The reference with its design module named `module` (helper modules stay as they are)."""
    source = _read(reference_file)
    modules = module_instances(source)
    if module in modules:
        return source
    if f"verified_{module}" in modules:
        return rename_module(source, f"verified_{module}", module)
    # The top of the file's hierarchy: the module no other module of the file instantiates.
    tops = [m for m in modules if not any(m in used for used in modules.values())]
    if len(tops) != 1:
        declared = ", ".join(modules) or "no module"
        raise Unloadable(f"{reference_file.name} defines {declared}: none is {module} or verified_{module}, "
                         f"and {len(tops)} of them are not instantiated by another")  # fmt: skip
    return rename_module(source, tops[0], module)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        raise Unloadable(f"no {path.name}") from None
    except OSError as exc:
        raise Unloadable(f"{path.name} cannot be read ({exc.strerror})") from None
