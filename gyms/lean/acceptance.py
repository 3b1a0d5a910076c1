"""When a proof counts: the acceptance rules, shared by every backend and mode.

A proof is accepted when
1. its text uses none of the forbidden tokens (outside comments and strings): `sorry`,
   compiled-code evaluation (`native_decide`, `Lean.ofReduceBool`, ...), new axioms,
   `implemented_by`/`extern`/`unsafe`, commands that change the language or run code
   (`macro`, `syntax`, `notation`, `#eval`, `#print`, ...), kernel-weakening options
   (`set_option debug.*`) and `import`;
2. Lean reports no error and no "declaration uses `sorry`" warning;
3. the theorem depends on no forbidden axiom (`sorryAx`, `Lean.ofReduceBool`,
   `Lean.ofReduceNat`, `Lean.trustCompiler`) and on no axiom the checked text declared.

The statement cannot change: the gym writes it, and the model supplies only the proof (see
`gyms.lean.extract`). Rule 1 is a cheap first line that also keeps a submission from
spoofing the `#print axioms` answer; rule 3 is the real check where the checker can list
axioms (not the cold wasm mode: see docs/gyms/lean.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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

_WHY = {
    "sorry": "an incomplete proof",
    "sorryAx": "an incomplete proof",
    "admit": "an incomplete proof",
    "native_decide": "trusting compiled code",
    "native": "trusting compiled code (`decide +native`)",
    "ofReduceBool": "trusting compiled code",
    "ofReduceNat": "trusting compiled code",
    "trustCompiler": "trusting compiled code",
    "axiom": "declaring an axiom",
    "implemented_by": "replacing the code of a definition",
    "extern": "replacing the code of a definition",
    "unsafe": "unsafe code",
    "import": "imports (the header is fixed)",
}
_COMMANDS = (
    "macro", "macro_rules", "syntax", "elab", "elab_rules", "notation", "infix", "infixl", "infixr",
    "prefix", "postfix", "declare_syntax_cat", "#eval", "#exit", "#print", "#check_failure", "run_cmd",
    "run_tac", "run_elab", "run_meta",
)  # fmt: skip
# Names that are dangerous however they are qualified (`Lean.ofReduceBool`, `_root_.sorryAx`).
_QUALIFIED = ("sorryAx", "ofReduceBool", "ofReduceNat", "trustCompiler")
# A token is a whole word: not part of a longer identifier, nor (except the names above) a
# field or namespace access such as `h.prefix`.
_TOKEN = re.compile(
    r"(?<![\w'!?#])(" + "|".join(_QUALIFIED) + r")(?![\w'!?])"
    r"|(?<![\w.'!?#])("
    + "|".join(re.escape(t) for t in sorted([*_WHY, *_COMMANDS], key=len, reverse=True))
    + r")(?![\w'!?])"
)
_DEBUG_OPTION = re.compile(r"\bset_option\s+debug\.")
_SORRY_WARNING = re.compile(r"declaration uses ['`]sorry['`]")


@dataclass(frozen=True)
class Judgement:
    accepted: bool
    problems: tuple[str, ...]  # why not, for the model
    errors: tuple[Message, ...]  # Lean's errors and sorry warnings


def screen(proof: str) -> list[str]:
    """Problems with the text of a proof itself (rule 1), before any Lean runs."""
    code = strip_comments_and_strings(proof)
    problems = []
    for token in dict.fromkeys(m.group(1) or m.group(2) for m in _TOKEN.finditer(code)):
        why = _WHY.get(token, "a command that changes the language or runs code")
        problems.append(f"`{token}` is not allowed ({why})")
    if _DEBUG_OPTION.search(code):
        problems.append("`set_option debug.*` is not allowed (it weakens the kernel check)")
    return problems


def judge(messages: Sequence[Message], axioms: Sequence[Axiom] | None, axioms_required: bool) -> Judgement:
    """Rules 2 and 3 on what the checker reported for the theorem."""
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


def strip_comments_and_strings(code: str) -> str:
    """`code` with comments and string literals blanked out: same length, newlines kept, so
    positions in the result are positions in `code`."""
    out = list(code)
    i, depth, n = 0, 0, len(code)

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        two = code[i : i + 2]
        if depth:  # inside a (nestable) block comment
            step = 2 if two in ("/-", "-/") else 1
            depth += 1 if two == "/-" else -1 if two == "-/" else 0
            blank(i, i + step)
            i += step
        elif two == "/-":
            depth = 1
            blank(i, i + 2)
            i += 2
        elif two == "--":
            end = code.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif code[i] == '"':
            end = _string_end(code, i + 1)
            blank(i, end)
            i = end
        else:
            i += 1
    return "".join(out)


def _string_end(code: str, i: int) -> int:
    while i < len(code):
        if code[i] == "\\":
            i += 2
        elif code[i] == '"':
            return i + 1
        else:
            i += 1
    return len(code)
