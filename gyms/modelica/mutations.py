"""Known answers for a task: the reference, and realistic wrong variants of it.

Each task file names its own semantic mutations (a changed parameter, a sign error, a dropped
event, a blow-up, a sample period that never lets the simulation end). Three structural ones
are made here for every task: a syntax error, an unbalanced model (a variable without an
equation) and a missing equation (the first statement of the equation section dropped).
"""

from __future__ import annotations

import re

from gyms.base import Candidate
from gyms.modelica.catalog import TIMEOUT_LABELS, TaskSpec

_STATEMENT_START = re.compile(r"^\s*(?:when|elsewhen|else|if|elseif|for|while|end|equation|algorithm|initial)\b")


def candidates(spec: TaskSpec) -> list[Candidate]:
    found = [Candidate(as_answer(spec.reference), "pass", "reference")]
    if spec.equivalent is not None:
        found.append(Candidate(as_answer(spec.equivalent), "pass", "equivalent"))
    for label, (old, new) in spec.mutations.items():
        expect = "timeout" if label in TIMEOUT_LABELS else "fail"
        found.append(Candidate(as_answer(spec.reference.replace(old, new, 1)), expect, label))
    found.append(Candidate(as_answer(syntax_error(spec.reference)), "fail", "syntax-error"))
    found.append(Candidate(as_answer(unbalanced(spec.reference, spec.setup.model)), "fail", "unbalanced"))
    dropped = missing_equation(spec.reference)
    if dropped is not None:
        found.append(Candidate(as_answer(dropped), "fail", "missing-equation"))
    return found


def as_answer(source: str) -> str:
    """A model's answer as a language model would write it."""
    return f"Here is the model.\n\n```modelica\n{source.strip()}\n```\n"


def syntax_error(source: str) -> str:
    """The semicolon of the last statement before the final `end` dropped."""
    lines = source.rstrip().splitlines()
    for i in range(len(lines) - 2, -1, -1):
        if lines[i].rstrip().endswith(";"):
            lines[i] = lines[i].rstrip()[:-1]
            break
    return "\n".join(lines) + "\n"


def unbalanced(source: str, model: str) -> str:
    """A variable declared right after the model header and never given an equation."""
    header = re.search(rf"^[ \t]*model\s+{re.escape(model)}\b[^\n]*\n", source, re.MULTILINE)
    if header is None:
        raise ValueError(f"the reference has no line `model {model}`")
    return source[: header.end()] + "  Real unconstrained \"declared, but no equation defines it\";\n" + source[header.end() :]


def missing_equation(source: str) -> str | None:
    """The first one-line statement of the first equation section dropped (None if there is none)."""
    lines = source.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.fullmatch(r"\s*equation\s*", ln)), None)
    if start is None:
        return None
    for i in range(start + 1, len(lines)):
        if _STATEMENT_START.match(lines[i]):
            break
        if lines[i].strip().endswith(";") and lines[i - 1].strip().endswith((";", "equation")):
            return "".join(lines[:i] + lines[i + 1 :])
    return None
