"""What the loaders share: what a load returns, the answer instruction, reading a reference's
modules and interface."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gyms.base import Task
from gyms.verilog.checks.precheck import precheck, require_pyslang

try:
    from pyslang import parsing, syntax
except ImportError:  # require_pyslang() says how to install it
    pass


@dataclass(frozen=True)
class Loaded:
    """A benchmark read from disk: its tasks, and what could not be made a task, with why."""

    tasks: list[Task]
    unloadable: dict[str, str] = field(default_factory=dict)  # task id -> reason (path included)


def instruction(module: str) -> str:
    return (
        f"Answer with the complete SystemVerilog (or Verilog-2005) code of module {module} in one ```verilog "
        "code block. Do not write a testbench."
    )


def reference_ports(source: str, module: str) -> list[list[object]] | None:
    """The reference's ports as [name, direction, width] (plain lists: task metadata), if it elaborates."""
    checked = precheck(source, module)
    if not checked.ok or not checked.ports:
        return None
    return [[p.name, p.direction, p.width] for p in checked.ports]


def module_instances(source: str) -> dict[str, list[str]]:
    """Each module the source declares, in order, with the module types it instantiates (from
    the syntax tree: no elaboration, so a file that needs others still parses)."""
    require_pyslang()
    tree = syntax.SyntaxTree.fromText(source)  # kept alive while its nodes are read
    declarations = _nodes(tree.root, "ModuleDeclaration")
    return {m.header.name.valueText: [i.type.valueText for i in _nodes(m, "HierarchyInstantiation")]
            for m in declarations}  # fmt: skip


def _nodes(root: object, kind: str) -> list[object]:
    """The syntax nodes of `kind` at or below `root` (a file of one module is parsed to that module)."""
    found = []

    def visit(node: object) -> bool:
        if not isinstance(node, parsing.Token) and node.kind.name == kind:
            found.append(node)
        return True

    root.visit(visit)
    return found


def rename_module(source: str, old: str, new: str) -> str:
    """`old` renamed to `new` wherever it is a whole identifier (its declaration and any instance)."""
    return re.sub(rf"(?<![\w$]){re.escape(old)}(?![\w$])", new, source)
