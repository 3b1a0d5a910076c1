"""What the loaders share: the answer instruction and reading a reference's interface."""

from __future__ import annotations

from gyms.verilog.precheck import precheck


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
