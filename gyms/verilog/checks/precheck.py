"""A fast check of the candidate alone, before any simulator runs: the lexical screen
(`screen.py`), then pyslang.

The screen refuses what a design has no business using, in every branch of the raw text:
macros and conditional compilation (so the simulators' preprocessors cannot show them code
the screen did not see), system tasks outside a small allow-list (file I/O, plusargs,
`$finish`, Verilator's `$c`, `$system`), DPI, escaped identifiers, force/release and dotted
(hierarchical) names. pyslang then catches syntax and elaboration errors (with line:col
messages), a missing module or a wrong interface. The verdict does not rest on any of this
(it comes from outputs compared on the host); the screen is defence in depth, and it keeps
the model's C++ and shell out of Verilator builds. The screen runs in the gym worker; pyslang,
whose cost is not linear in the text, runs in a forked child under CPU and memory limits
(`gyms/limited.py`). Neither reads a file.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from gyms.limited import LimitExceeded, call_limited
from gyms.verilog.checks.screen import screen
from gyms.verilog.checks.toolchain import PYSLANG_HINT, ToolMissing

try:
    import pyslang
    from pyslang import ast, parsing, syntax
except ImportError:  # VerilogGym.tools() reports it; a step then ends as an infrastructure error
    pyslang = None

DESIGN_FILE = "design.sv"
MAX_MESSAGES = 8

# System functions a synthesisable design (or its simulation-only checks) may use.
ALLOWED_SYSTEM_NAMES = frozenset(
    {
        "$clog2", "$signed", "$unsigned", "$bits", "$size", "$high", "$low", "$left", "$right",
        "$increment", "$dimensions", "$unpacked_dimensions", "$countones", "$countbits", "$onehot",
        "$onehot0", "$isunknown", "$rtoi", "$itor", "$realtobits", "$bitstoreal", "$floor", "$ceil",
        "$pow", "$ln", "$log10", "$exp", "$sqrt", "$abs", "$min", "$max", "$time", "$stime", "$realtime",
        "$typename",
    }
)  # fmt: skip
# Printing is harmless where the verdict comes from recorded outputs; testbenches that print
# a plain verdict (forgeable benches) could be fooled by it, so there it is refused too.
PRINTING = frozenset(
    {"$display", "$displayb", "$displayh", "$displayo", "$write", "$strobe", "$monitor", "$error", "$warning",
     "$info"}
)  # fmt: skip


@dataclass(frozen=True)
class PortSpec:
    name: str
    direction: str  # "input", "output" or "inout"
    width: int


@dataclass(frozen=True)
class Precheck:
    errors: tuple[str, ...]
    ports: tuple[PortSpec, ...] = ()  # of the checked module, when it elaborated

    @property
    def ok(self) -> bool:
        return not self.errors


_DIRECTIONS = {"In": "input", "Out": "output", "InOut": "inout"}


# pyslang's cost is not linear in the text (constant functions, wide parameters): it runs in a
# forked child with these limits (gyms/limited.py), so no answer can stall or grow a gym worker.
# A real design elaborates in milliseconds and a few MB; the wall time backs the CPU limit up.
ELABORATE_CPU_S = 2.0
ELABORATE_MEMORY_MB = 512
ELABORATE_WALL_S = 3 * ELABORATE_CPU_S + 1
TOO_COSTLY = "the design is too large or too slow to elaborate ({}); simplify it."

# Icarus 11's lexer (flex with REJECT) cannot grow its 16 KiB buffer: a token of more characters
# stops the compile with "input buffer overflow" (measured: docs/gyms/verilog.md). Icarus also
# refuses a default value on an input or inout port ("syntax error"), which slang accepts.
ICARUS_MAX_TOKEN_CHARS = 16382
ICARUS = "icarus"


def precheck(
    source: str,
    module: str,
    expected: Sequence[PortSpec] | None = None,
    allow_printing: bool = True,
    reserved: Collection[str] = (),
    simulator: str | None = None,
) -> Precheck:
    """Check `source` (the candidate alone), elaborating `module` as the top.

    `reserved` names the testbench's own modules: a design that redefined one (say, the
    reference model of a benchmark) could replace it, so that is refused. `simulator`: the one
    that will compile the design; its known limits are checked here, so that the feedback
    names them (None: no simulator's).
    """
    require_pyslang()
    icarus = simulator == ICARUS
    allowed = ALLOWED_SYSTEM_NAMES | PRINTING if allow_printing else ALLOWED_SYSTEM_NAMES
    screened = screen(source, allowed, ICARUS_MAX_TOKEN_CHARS if icarus else None)
    if screened:
        return Precheck(tuple(screened))
    expected = tuple(expected) if expected is not None else None
    try:
        return call_limited(_elaborate, source, module, expected, frozenset(reserved), icarus, cpu_s=ELABORATE_CPU_S,
                            memory_mb=ELABORATE_MEMORY_MB, wall_s=ELABORATE_WALL_S)  # fmt: skip
    except LimitExceeded as exc:
        return Precheck((TOO_COSTLY.format(exc),))


def _elaborate(
    source: str, module: str, expected: Sequence[PortSpec] | None, reserved: Collection[str], icarus: bool = False
) -> Precheck:
    """pyslang's parse and elaboration of the candidate (in the limited child)."""
    options = parsing.PreprocessorOptions()
    options.maxIncludeDepth = 0  # a macro that expands to `include is refused too
    compile_options = ast.CompilationOptions()
    compile_options.topModules = {module}
    compile_options.errorLimit = MAX_MESSAGES
    bag = pyslang.Bag([options, compile_options])
    sources = pyslang.SourceManager()
    try:
        return _compile(source, module, expected, reserved, bag, sources, icarus)
    except RuntimeError as exc:  # slang gives up on input it cannot handle (limits of its own)
        return Precheck((f"the design could not be parsed ({exc or 'too complex'}); simplify it.",))


def _compile(
    source: str,
    module: str,
    expected: Sequence[PortSpec] | None,
    reserved: Collection[str],
    bag: pyslang.Bag,
    sources: pyslang.SourceManager,
    icarus: bool = False,
) -> Precheck:
    tree = syntax.SyntaxTree.fromText(source, sources, DESIGN_FILE, "", bag)
    clashes = sorted(_declared_names(tree) & set(reserved))
    if clashes:
        return Precheck((f"module name {', '.join(clashes)} is used by the testbench; rename your module.",))
    defaults = _input_defaults(tree) if icarus else []
    if defaults:
        return Precheck(tuple(f"port `{name}` is an {direction} with a default value, which Icarus Verilog (the "
                              f"simulator here) rejects; drop the `= ...` and drive it from outside."
                              for direction, name in defaults[:MAX_MESSAGES]))  # fmt: skip
    compilation = ast.Compilation(bag)
    compilation.addSyntaxTree(tree)
    diagnostics = [d for d in compilation.getAllDiagnostics() if d.isError()]
    if any(str(d.code) == "DiagCode(InvalidTopModule)" for d in diagnostics):
        return Precheck((f"no module named {module} found: the design must define `module {module}`.",))
    if diagnostics:
        return Precheck(tuple(_report(sources, diagnostics)))
    if _uses_dpi(tree):
        return Precheck(("DPI imports and exports are not allowed here; write the logic in Verilog.",))
    top = next(inst for inst in compilation.getRoot().topInstances if inst.name == module)
    refused = port_kind_problems(top.body.portList)
    if refused:
        return Precheck(tuple(refused))
    ports = tuple(PortSpec(p.name, _DIRECTIONS[p.direction.name], p.type.bitWidth) for p in top.body.portList)
    if expected is not None:
        problems = interface_problems(module, ports, expected)
        if problems:
            return Precheck(tuple(problems), ports)
    return Precheck((), ports)


def port_kind_problems(ports: Sequence[Any]) -> list[str]:
    """Every port that is not what the benches drive and record, by name: each port must be a
    plain input, output or inout, declared directly (no interface port, no port expression
    such as `.x(a)` or `{a, b}` in the port list), of a packed bit-vector type, listed once."""
    problems, seen = [], set()
    for p in ports:
        name = getattr(p, "name", "") or "(unnamed)"
        if not isinstance(p, ast.PortSymbol):
            kind = "an interface port" if isinstance(p, ast.InterfacePortSymbol) else "a port expression"
            problems.append(f"port `{name}` is {kind}; declare each port as a plain input or output.")
        elif p.isNullPort or p.internalSymbol is None or p.internalSymbol.name != p.name:
            problems.append(f"port `{name}` is a port expression (`.{name}(...)`); declare each port directly.")
        elif p.direction.name not in _DIRECTIONS:
            problems.append(f"port `{name}` is a `{p.direction.name.lower()}` port; use input, output or inout.")
        elif not p.type.isIntegral or p.type.bitWidth < 1:
            problems.append(f"port `{name}` is of type `{p.type}`; ports must be packed bit vectors (logic [N:0]).")
        elif name in seen:
            problems.append(f"port `{name}` is listed twice.")
        seen.add(name)
    return problems[:MAX_MESSAGES]


def require_pyslang() -> None:
    if pyslang is None:
        raise ToolMissing(f"pyslang is not installed: {PYSLANG_HINT}")


def interface_problems(module: str, found: Sequence[PortSpec], expected: Sequence[PortSpec]) -> list[str]:
    have = {p.name: p for p in found}
    want = {p.name: p for p in expected}
    problems = []
    for p in expected:
        got = have.get(p.name)
        if got is None:
            problems.append(f"module {module} has no port `{p.name}` ({_declare(p)}).")
        elif got.direction != p.direction or got.width != p.width:
            problems.append(f"port `{p.name}` is `{_declare(got)}`; the task needs `{_declare(p)}`.")
    for p in found:
        if p.name not in want:
            problems.append(f"port `{p.name}` is not part of the required interface; remove it.")
    return problems[:MAX_MESSAGES]


def _declare(p: PortSpec) -> str:
    return f"{p.direction} [{p.width - 1}:0] {p.name}" if p.width > 1 else f"{p.direction} {p.name}"


_DECLARATIONS = ("ModuleDeclaration", "InterfaceDeclaration", "ProgramDeclaration", "PackageDeclaration")


def _declared_names(tree: syntax.SyntaxTree) -> set[str]:
    names: set[str] = set()

    def visit(node: object) -> bool:
        if not isinstance(node, parsing.Token) and node.kind.name in _DECLARATIONS:
            names.add(node.header.name.valueText)
        return True

    tree.root.visit(visit)
    return names


def _input_defaults(tree: syntax.SyntaxTree) -> list[tuple[str, str]]:
    """(direction, name) of each input or inout port declared with a default value, in any
    module: ANSI (`input a = 1'b0`, a port without a direction taking the previous one's) or not."""
    found: list[tuple[str, str]] = []
    direction = ""

    def visit(node: object) -> bool:
        nonlocal direction
        if isinstance(node, parsing.Token):
            return True
        kind = node.kind.name
        if kind == "AnsiPortList":
            direction = ""
        elif kind in ("ImplicitAnsiPort", "PortDeclaration"):
            written = getattr(node.header, "direction", None)
            if written is not None and written.valueText:
                direction = written.valueText
            # A declaration's list holds its declarators and the commas between them.
            declarators = node.declarators if kind == "PortDeclaration" else [node.declarator]
            found.extend((direction, d.name.valueText) for d in declarators if not isinstance(d, parsing.Token)
                         and d.initializer is not None and direction in ("input", "inout"))  # fmt: skip
        return True

    tree.root.visit(visit)
    return found


def _uses_dpi(tree: syntax.SyntaxTree) -> bool:
    found = False

    def visit(node: object) -> bool:
        nonlocal found
        if not isinstance(node, parsing.Token) and getattr(node, "kind", None) in (
            syntax.SyntaxKind.DPIImport,
            syntax.SyntaxKind.DPIExport,
        ):
            found = True
        return not found

    tree.root.visit(visit)
    return found


def _report(sources: pyslang.SourceManager, diagnostics: Sequence[pyslang.Diagnostic]) -> list[str]:
    """slang's own rendering (file:line:col, message, the source line and a caret), trimmed."""
    text = pyslang.DiagnosticEngine.reportAll(sources, list(diagnostics[:MAX_MESSAGES]))
    return [text.strip()]
