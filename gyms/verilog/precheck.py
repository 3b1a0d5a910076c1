"""A fast check of the candidate alone with pyslang, before any simulator runs.

It catches syntax and elaboration errors (with line:col messages), a missing module or a
wrong interface, and system tasks a design has no business calling. The last is what keeps
the verdict honest: a design that could read files or plusargs could learn the testbench's
nonce or expected values, one that could call `$finish` could end the test early, and
Verilator's `$c`/DPI would run C++ of the model's choosing. Everything here runs in the gym
worker, outside the sandbox, so `include is refused (it would read host files).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from gyms.verilog.toolchain import PYSLANG_HINT, ToolMissing

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
        "$error", "$warning", "$info", "$typename",
    }
)  # fmt: skip
# Printing is harmless where the testbench's verdict carries a nonce; benchmark testbenches
# print a plain verdict a design could forge, so there it is refused too.
PRINTING = frozenset({"$display", "$displayb", "$displayh", "$displayo", "$write", "$strobe", "$monitor"})


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


_DIRECTIONS = {"In": "input", "Out": "output", "InOut": "inout", "Ref": "ref"}


def precheck(
    source: str,
    module: str,
    expected: Sequence[PortSpec] | None = None,
    allow_printing: bool = True,
    reserved: Collection[str] = (),
) -> Precheck:
    """Check `source` (the candidate alone), elaborating `module` as the top.

    `reserved` names the testbench's own modules: a design that redefined one (say, the
    reference model of a benchmark) could replace it, so that is refused.
    """
    require_pyslang()
    if "`include" in source:
        return Precheck(("`include is not allowed: put all of your code in the one answer.",))
    options = parsing.PreprocessorOptions()
    options.maxIncludeDepth = 0  # a macro that expands to `include is refused too
    compile_options = ast.CompilationOptions()
    compile_options.topModules = {module}
    compile_options.errorLimit = MAX_MESSAGES
    bag = pyslang.Bag([options, compile_options])
    sources = pyslang.SourceManager()
    tree = syntax.SyntaxTree.fromText(source, sources, DESIGN_FILE, "", bag)
    forbidden = _forbidden_system_names(tree, allow_printing)
    if forbidden:
        names = ", ".join(sorted(forbidden))
        return Precheck((f"{names} may not be used in a design here (no file, plusarg, simulation-control "
                         f"{'' if allow_printing else 'or printing '}system tasks, no DPI); remove "
                         f"{'it' if len(forbidden) == 1 else 'them'}.",))  # fmt: skip
    clashes = sorted(_declared_names(tree) & set(reserved))
    if clashes:
        return Precheck((f"module name {', '.join(clashes)} is used by the testbench; rename your module.",))
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
    ports = tuple(
        PortSpec(p.name, _DIRECTIONS.get(p.direction.name, p.direction.name.lower()), p.type.bitWidth)
        for p in top.body.portList
    )
    if expected is not None:
        problems = interface_problems(module, ports, expected)
        if problems:
            return Precheck(tuple(problems), ports)
    return Precheck((), ports)


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


def _forbidden_system_names(tree: syntax.SyntaxTree, allow_printing: bool) -> set[str]:
    allowed = ALLOWED_SYSTEM_NAMES | PRINTING if allow_printing else ALLOWED_SYSTEM_NAMES
    found: set[str] = set()

    def visit(node: object) -> bool:
        # Tokens are seen after macro expansion, so `$``fopen` is caught as $fopen.
        if isinstance(node, parsing.Token) and node.kind == parsing.TokenKind.SystemIdentifier:
            if node.valueText not in allowed:
                found.add(node.valueText)
        return True

    tree.root.visit(visit)
    return found


_DECLARATIONS = ("ModuleDeclaration", "InterfaceDeclaration", "ProgramDeclaration", "PackageDeclaration")


def _declared_names(tree: syntax.SyntaxTree) -> set[str]:
    names: set[str] = set()

    def visit(node: object) -> bool:
        if not isinstance(node, parsing.Token) and node.kind.name in _DECLARATIONS:
            names.add(node.header.name.valueText)
        return True

    tree.root.visit(visit)
    return names


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
