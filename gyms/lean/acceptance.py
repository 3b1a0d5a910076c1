"""When a proof counts: the acceptance rules, shared by every backend and checker kind.

A proof is accepted when
1. the screen finds none of the forbidden words in its text (outside comments and strings,
   see `gyms.lean.lexer`): holes (`sorry`), compiled-code evaluation (`native_decide`,
   `ofReduceBool`, ...), new axioms, `implemented_by`/`extern`/`unsafe`, `IO`, commands
   (every `#` command, `macro`, `syntax`, `elab`, `run_tac`, ...), declaration modifiers
   and attributes, options other than a few limits, and `import`;
2. on the wasm backend, the checker's own parse accepts it: Lean's parser must read it as
   one term (a `by` block is a term) after the gym's `<statement> :=`, using none of the
   syntax that runs or trusts code (`programs/HeavyCheck.lean`). This, not the screen, is
   what keeps the proof's code from running;
3. Lean reports no error and no "declaration uses `sorry`" warning;
4. the theorem depends on no forbidden axiom (`sorryAx`, `Lean.ofReduceBool`,
   `Lean.ofReduceNat`, `Lean.trustCompiler`) and on no axiom the checked text declared.

The statement cannot change: the gym writes it, and the model supplies only the proof (see
`gyms.lean.extract`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gyms.lean.lexer import code_only
from gyms.lean.protocol import Axiom, Message

FORBIDDEN_AXIOMS = {
    "sorryAx": "it uses `sorry`",
    "Lean.ofReduceBool": "it trusts compiled code (`native_decide`, Lean.ofReduceBool)",
    "Lean.ofReduceNat": "it trusts compiled code (Lean.ofReduceNat)",
    "Lean.trustCompiler": "it trusts the compiler (Lean.trustCompiler)",
}
# What `#print axioms` may list in a sound proof when the checker cannot tell imported
# axioms from declared ones.
STANDARD_AXIOMS = {"propext", "Classical.choice", "Quot.sound"}
# The options `set_option ... in` may set inside a proof (the checker allows the same).
ALLOWED_OPTIONS = {"maxRecDepth", "maxHeartbeats", "synthInstance.maxHeartbeats", "synthInstance.maxSize"}

_COMPILED = "trusting compiled code"
_COMMAND = "a command: the proof must be a term or a `by` block"
# Names refused however they are qualified (`Lean.ofReduceBool`, `_root_.sorryAx`, `«IO»`).
_NAMES = {
    "sorryAx": "an incomplete proof",
    "native_decide": _COMPILED,
    "native": f"{_COMPILED} (`decide +native`)",
    "ofReduceBool": _COMPILED,
    "ofReduceNat": _COMPILED,
    "reduceBool": _COMPILED,
    "reduceNat": _COMPILED,
    "trustCompiler": _COMPILED,
    "implemented_by": "replacing the code of a definition",
    "implementedBy": "replacing the code of a definition",
    "unsafeCast": "unsafe code",
    "unsafeBaseIO": "running IO",
    "unsafeIO": "running IO",
    "unsafeEIO": "running IO",
    "IO": "running IO",
    "EIO": "running IO",
    "BaseIO": "running IO",
    "RealWorld": "running IO",
}
# Words refused where they stand alone (not as a field, `h.prefix`, nor inside a longer name).
_KEYWORDS = {
    "sorry": "an incomplete proof",
    "admit": "an incomplete proof",
    "axiom": "declaring an axiom",
    "extern": "replacing the code of a definition",
    "unsafe": "unsafe code",
    "import": "imports (the header is fixed)",
    "include_str": "reading files",
    "config": "a tactic configuration term, which Lean evaluates (use `+opt`, `-opt` or `(opt := literal)`)",
    **dict.fromkeys(
        ["macro", "macro_rules", "syntax", "elab", "elab_rules", "notation", "infix", "infixl", "infixr",
         "prefix", "postfix", "declare_syntax_cat", "run_cmd", "run_tac", "run_elab", "run_meta", "by_elab",
         "initialize", "builtin_initialize"],
        "a command or tactic that changes the language or runs code",
    ),
    **dict.fromkeys(
        ["private", "protected", "noncomputable", "partial", "nonrec", "local", "scoped", "attribute",
         "instance", "deriving", "namespace", "section", "universe", "variable", "def", "abbrev", "opaque",
         "structure", "inductive", "class", "example", "theorem", "lemma", "mutual", "export"],
        _COMMAND,
    ),
}  # fmt: skip
# A name, possibly qualified, or a `#` command (`#eval!` included).
_WORD = re.compile(r"#?[^\W\d][\w'!?]*(?:\.[^\W\d][\w'!?]*)*")
_OPTION = re.compile(r"\bset_option\s+([\w.]*)")
_SORRY_WARNING = re.compile(r"declaration uses ['`]sorry['`]")


@dataclass(frozen=True)
class Judgement:
    accepted: bool
    problems: tuple[str, ...]  # why not, for the model
    errors: tuple[Message, ...]  # Lean's errors and sorry warnings


def screen(proof: str) -> list[str]:
    """Problems with the text of a proof itself (rule 1), before any Lean runs; linear time."""
    code = code_only(proof)
    found: dict[str, str] = {}
    for match in _WORD.finditer(code):
        word = match.group()
        field = match.start() > 0 and code[match.start() - 1] == "."
        if word.startswith("#"):
            found.setdefault(word.split(".")[0], _COMMAND)
            continue
        for part in word.split("."):
            if part in _NAMES:
                found.setdefault(part, _NAMES[part])
        if not field and word in _KEYWORDS:
            found.setdefault(word, _KEYWORDS[word])
    if "@[" in code:
        found.setdefault("@[...]", "attributes: the proof must be a term or a `by` block")
    problems = [f"`{token}` is not allowed ({why})" for token, why in found.items()]
    for option in dict.fromkeys(m.group(1) for m in _OPTION.finditer(code)):
        if option not in ALLOWED_OPTIONS:
            problems.append(f"`set_option {option}` is not allowed (only {', '.join(sorted(ALLOWED_OPTIONS))})")
    return problems


def judge(
    messages: Sequence[Message], axioms: Sequence[Axiom] | None, axioms_required: bool, refused: str | None = None
) -> Judgement:
    """Rules 2 to 4 on what the checker reported for the theorem."""
    if refused:
        return Judgement(False, (f"Lean's parser refused the proof: {refused}",), ())
    errors = tuple(m for m in messages if m.severity == "error" or _SORRY_WARNING.search(m.data))
    problems = []
    if errors:
        problems.append(
            "Lean reported errors" if any(m.severity == "error" for m in errors) else "the proof uses `sorry`"
        )
    elif axioms is None:
        if axioms_required:
            problems.append("the theorem was not declared (check that the proof ends cleanly)")
    else:
        problems += axiom_problems(axioms)
    return Judgement(not problems, tuple(problems), errors)


def axiom_problems(axioms: Sequence[Axiom]) -> list[str]:
    problems = []
    for axiom in axioms:
        if axiom.name in FORBIDDEN_AXIOMS:
            problems.append(f"the theorem depends on {axiom.name}: {FORBIDDEN_AXIOMS[axiom.name]}")
        elif axiom.imported is False or (axiom.imported is None and axiom.name not in STANDARD_AXIOMS):
            problems.append(
                f"the theorem depends on the axiom {axiom.name}, which the standard library does not provide"
            )
    return problems
