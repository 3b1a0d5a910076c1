"""Realistic wrong designs made from a reference by mutation operators, and the two fixed
known-bad candidates (a design that does not compile, one that never finishes).

Mutations are edits at syntax-tree positions found with pyslang, so an operator swap never
touches a `<=` that is an assignment, and the port list is left alone (a wrong interface
is caught by the pre-check, which is not the realistic mistake we want). Mutants are
enumerated in a stable order; `mutant_vetting.py` simulates them and records which ones fail.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from gyms.verilog.checks.precheck import PortSpec, require_pyslang

try:
    import pyslang
    from pyslang import ast, parsing, syntax
except ImportError:  # require_pyslang() says what to install
    pass

# Binary operator swaps: arithmetic, logic, comparisons off by one, shifts.
_SWAPS = {
    "AddExpression": "-", "SubtractExpression": "+", "BinaryAndExpression": "|", "BinaryOrExpression": "&",
    "BinaryXorExpression": "|", "EqualityExpression": "!=", "InequalityExpression": "==",
    "LessThanExpression": "<=", "LessThanEqualExpression": "<", "GreaterThanExpression": ">=",
    "GreaterThanEqualExpression": ">", "LogicalShiftLeftExpression": ">>", "LogicalShiftRightExpression": "<<",
    "LogicalAndExpression": "||", "LogicalOrExpression": "&&",
}  # fmt: skip
OPERATORS = ("swap-op", "off-by-one", "reset-polarity", "clock-edge", "drop-case-item")


@dataclass(frozen=True)
class Mutant:
    op: str
    site: int  # index among this operator's sites, in source order
    text: str

    @property
    def label(self) -> str:
        return f"mutant:{self.op}#{self.site}"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    replacement: str


def mutants(reference: str, clock: str | None, reset: str | None) -> list[Mutant]:
    """Every single-edit mutant of `reference`, grouped by operator, in source order."""
    require_pyslang()
    tree = syntax.SyntaxTree.fromText(reference, "reference.sv")
    edits: dict[str, list[_Edit]] = {op: [] for op in OPERATORS}
    for node in _body_nodes(tree):
        kind = node.kind.name
        if kind in _SWAPS:
            token = node.operatorToken
            start = token.location.offset
            edits["swap-op"].append(_Edit(start, start + len(token.rawText), _SWAPS[kind]))
        elif kind in ("IntegerVectorExpression", "IntegerLiteralExpression"):
            edit = _off_by_one(node, kind)
            if edit is not None:
                edits["off-by-one"].append(edit)
        elif kind == "SignalEventExpression":
            name = node.expr.getFirstToken().valueText
            edge = node.edge
            if edge.kind.name in ("PosEdgeKeyword", "NegEdgeKeyword") and name in (clock, reset):
                flipped = "negedge" if edge.kind.name == "PosEdgeKeyword" else "posedge"
                op = "clock-edge" if name == clock else "reset-polarity"
                edits[op].append(_Edit(edge.location.offset, edge.location.offset + len(edge.rawText), flipped))
        elif kind == "ConditionalPredicate" and reset is not None:
            edits["reset-polarity"] += _invert_reset(node, reset, reference)
        elif kind == "StandardCaseItem":
            r = node.sourceRange
            edits["drop-case-item"].append(_Edit(r.start.offset, r.end.offset, ""))
    return [
        Mutant(op, site, _apply(reference, edit)) for op in OPERATORS for site, edit in enumerate(edits[op])
    ]


def _body_nodes(tree: syntax.SyntaxTree) -> Iterator[syntax.SyntaxNode]:
    """Syntax nodes outside module headers (the port list stays as the task defines it)."""
    nodes: list[syntax.SyntaxNode] = []
    headers: list[tuple[int, int]] = []

    def visit(node: object) -> bool:
        if not isinstance(node, parsing.Token):
            nodes.append(node)
            if node.kind.name == "ModuleHeader":
                headers.append((node.sourceRange.start.offset, node.sourceRange.end.offset))
        return True

    tree.root.visit(visit)
    return (n for n in nodes if not any(a <= n.sourceRange.start.offset < b for a, b in headers))


def _off_by_one(node: syntax.SyntaxNode, kind: str) -> _Edit | None:
    token = node.value if kind == "IntegerVectorExpression" else node.literal
    text = token.rawText
    base = node.base.rawText.lower()[-1] if kind == "IntegerVectorExpression" else "d"
    digits = text.replace("_", "")
    try:
        value = int(digits, {"d": 10, "h": 16, "b": 2, "o": 8}[base])
    except (KeyError, ValueError):  # x/z digits, or an unusual base
        return None
    if base == "b":
        new = format(value ^ 1, "b").rjust(len(digits), "0")
    else:
        new = format(value + 1, {"d": "d", "h": "x", "o": "o"}[base])
    start = token.location.offset
    return _Edit(start, start + len(text), new)


def _invert_reset(node: syntax.SyntaxNode, reset: str, text: str) -> list[_Edit]:
    """`if (rst ...)` -> `if (!rst ...)` and `if (!rst_n)` -> `if (rst_n)`."""
    r = node.sourceRange
    condition = text[r.start.offset : r.end.offset]
    edits = []
    for m in re.finditer(rf"(!\s*)?\b{re.escape(reset)}\b", condition):
        start, end = r.start.offset + m.start(), r.start.offset + m.end()
        edits.append(_Edit(start, end, reset if m.group(1) else f"!{reset}"))
    return edits


def _apply(text: str, edit: _Edit) -> str:
    return text[: edit.start] + edit.replacement + text[edit.end :]


def without_first_semicolon(reference: str) -> str:
    """The reference minus the first `;` of the module body: a syntax error, as in a sloppy answer."""
    require_pyslang()
    tree = syntax.SyntaxTree.fromText(reference, "reference.sv")
    header_end = None
    offsets: list[int] = []

    def visit(node: object) -> bool:
        nonlocal header_end
        if isinstance(node, parsing.Token):
            if node.kind.name == "Semicolon":
                offsets.append(node.location.offset)
        elif node.kind.name == "ModuleHeader" and header_end is None:
            header_end = node.sourceRange.end.offset
        return True

    tree.root.visit(visit)
    cut = next(o for o in offsets if header_end is not None and o >= header_end)
    return reference[:cut] + reference[cut + 1 :]


def never_finishing(reference: str, module: str, ports: Sequence[PortSpec]) -> str:
    """The reference wrapped so that its first output passes through a loop that never exits.

    The classic mistake: a while loop in combinational logic whose counter is never
    incremented. Simulators cannot see it at compile time; `always_comb` runs it at time 0,
    so the simulation hangs before the first sample and only the timeout ends it.

    The wrapper must reach the simulator wherever the reference does, so it keeps what a
    testbench relies on: the module's name, its ports in their order (RTLLM testbenches connect
    by position too) and its overridable parameters (a testbench may set one, as RTLLM's
    `multi_pipe_4bit #(.size(4))` does), passed on to the renamed reference. The module is
    renamed at its declaration in the syntax tree, so a comment or another module that mentions
    the name is left alone, whatever the port style; the wrapper comes after the reference, so a
    `timescale there covers both.
    """
    require_pyslang()
    tree = syntax.SyntaxTree.fromText(reference, "reference.sv")
    declared = _declared_modules(tree)
    if module not in declared:
        raise ValueError(f"the reference declares no module {module}")
    core = _unused(f"{module}_core", declared)
    start = declared[module]
    inner = reference[:start] + core + reference[start + len(module) :]
    parameters = _overridable_parameters(tree, module)
    own = _unused("hang_", [*parameters, *(p.name for p in ports)], prefix=True)  # the wrapper's names
    outputs = [p for p in ports if p.direction == "output"]
    first = outputs[0]
    rng = lambda p: f"[{p.width - 1}:0] " if p.width > 1 else ""  # noqa: E731
    # Net types spelled out: a `default_nettype none in the reference covers the wrapper too.
    header = ",\n".join(f"  {p.direction} wire {rng(p)}{p.name}" for p in ports)
    overrides = ", ".join(f".{name}({name})" for name in parameters)
    wires = "\n".join(f"  wire {rng(p)}{own}{p.name};" for p in outputs)
    conns = ", ".join(f".{p.name}({own if p.direction == 'output' else ''}{p.name})" for p in ports)
    passthrough = "\n".join(f"  assign {p.name} = {own}{p.name};" for p in outputs[1:])
    return f"""{inner.rstrip()}

module {module} {_parameter_list(parameters)}(
{header}
);
{wires}
  {core} {f"#({overrides}) " if parameters else ""}{own}core ({conns});
  logic {rng(first)}{own}folded;
  integer {own}i;
  always_comb begin
    {own}folded = {own}{first.name};
    {own}i = 0;
    while ({own}i < 2) {own}folded = {own}folded ^ {own}{first.name};
  end
  assign {first.name} = {own}folded;
{passthrough}
endmodule
"""


def _declared_modules(tree: syntax.SyntaxTree) -> dict[str, int]:
    """Each module's name and the offset of its name token."""
    found: dict[str, int] = {}

    def visit(node: object) -> bool:
        if not isinstance(node, parsing.Token) and node.kind.name == "ModuleDeclaration":
            name = node.header.name
            found.setdefault(name.valueText, name.location.offset)
        return True

    tree.root.visit(visit)
    return found


def _overridable_parameters(tree: syntax.SyntaxTree, module: str) -> dict[str, str]:
    """The parameters a testbench may set, each with its elaborated default as a literal (which
    carries width and signedness: the wrapper declares them untyped and only passes them on)."""
    options = ast.CompilationOptions()
    options.topModules = {module}
    compilation = ast.Compilation(pyslang.Bag([options]))
    compilation.addSyntaxTree(tree)
    top = next((i for i in compilation.getRoot().topInstances if i.name == module), None)
    if top is None:
        return {}
    return {p.name: str(p.value) for p in top.body.parameters if not p.isLocalParam}


def _parameter_list(parameters: dict[str, str]) -> str:
    if not parameters:
        return ""
    return "#(\n" + ",\n".join(f"  parameter {name} = {value}" for name, value in parameters.items()) + "\n) "


def _unused(name: str, taken: Collection[str], prefix: bool = False) -> str:
    """`name`, with underscores added until no name in `taken` is it (or, as a prefix, starts with it)."""
    while any(t.startswith(name) if prefix else t == name for t in taken):
        name += "_"
    return name
