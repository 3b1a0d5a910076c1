"""Compiler and simulator messages, rewritten for the model that wrote the code.

Backends report errors in their own words, and rumoca leaves out the line of many of them
(unresolved names, failed asserts, non-finite values). Where the line can be found in the
answer's source it is added, with the line itself quoted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gyms.modelica.simulation import SOURCE_NAME

# Feedback longer than this is cut: the model needs the first errors, not all of them.
MAX_MESSAGE_CHARS = 2000
# Compiler messages quote the answer: they are cut to this before any pattern runs over them,
# and at most this many unknown names are located (each is one pass over the source).
MAX_INPUT_CHARS = 8000
MAX_UNRESOLVED = 5

_LOCATION = re.compile(rf"\[{re.escape(SOURCE_NAME)}:(\d+):(\d+)\]")
_UNRESOLVED = re.compile(r"unresolved (?:component reference|function call|type reference): '([\w.]+)'")
_SPAN = re.compile(r"\s{0,8}@ Span \{[^}]{0,400}?start: BytePos\((\d+)\), end: BytePos\((\d+)\)[^}]{0,400}\}")
_ASSERT = re.compile(r"assert failed at t=([-+0-9.eE]+): (.*)", re.DOTALL)
_UNBALANCED = re.compile(r"unbalanced model: (\d+) equations, (\d+) unknowns")
_STAGE_PREFIX = re.compile(
    r"^(?:\w+ failed: )?\w+ failed in \w+: |^\w+ could not be compiled: |^solve-IR evaluation failed: "
)
_RELATED = re.compile(r"\nRelated failures \(showing \d+\):.*", re.DOTALL)


def describe_failure(status: str, message: str, source: str, diagnostics: Sequence[Mapping[str, Any]] = ()) -> str:
    """Readable feedback for a model that did not compile or simulate."""
    message = message[:MAX_INPUT_CHARS]
    diagnostics = [{"message": str(d.get("message", ""))[:MAX_INPUT_CHARS]} for d in diagnostics[:MAX_UNRESOLVED]]
    if status == "timeout":
        text = (
            f"The model did not finish compiling and simulating in time ({_plain(message)}). Look for "
            "events that fire ever faster (a tiny sample() period, a chattering condition), a very "
            "stiff system, or a model far larger than the task needs."
        )
    elif status == "unbalanced":
        text = _unbalanced(message)
    elif status == "compile-error":
        text = "The model does not compile:\n" + _compile_error(message, source, diagnostics)
    elif status == "simulation-error":
        text = "The model compiles, but its simulation failed:\n" + _simulation_error(message, source)
    elif status == "crash":
        text = f"The compiler failed on this model ({_plain(message)}); try writing it more simply."
    else:
        raise ValueError(f"no feedback for status {status!r}")
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "\n[... more errors cut ...]"


def _quote(source: str, line: int) -> str:
    lines = source.splitlines()
    return f"  {line} | {lines[line - 1].strip()}" if 1 <= line <= len(lines) else ""


def _plain(message: str) -> str:
    return _RELATED.sub("", _STAGE_PREFIX.sub("", message.strip())).strip()


def _compile_error(message: str, source: str, diagnostics: Sequence[Mapping[str, Any]]) -> str:
    located = [_from_diagnostic(d["message"], source) for d in diagnostics]
    if any(located):
        return "\n".join(text for text in located if text)
    found = _LOCATION.search(message)
    text = _LOCATION.sub("", _plain(message)).strip()
    if found:
        return _at(int(found.group(1)), int(found.group(2)), text, source)
    unresolved = list(dict.fromkeys(_UNRESOLVED.findall(message)))[:MAX_UNRESOLVED]
    if unresolved:
        return "\n".join(dict.fromkeys(_unresolved(name, source) for name in unresolved))
    return text


def _from_diagnostic(rendered: str, source: str) -> str:
    """`line L, column C: headline` from a rendered (miette) diagnostic, or "" without a location."""
    found = _LOCATION.search(rendered) or re.search(rf"{re.escape(SOURCE_NAME)}:(\d+):(\d+)", rendered)
    headline = next((ln.strip(" ×") for ln in rendered.splitlines() if ln.strip().startswith("×")), "")
    if not found or not headline:
        return ""
    if headline.startswith("unexpected"):
        headline += " (is a `;` missing at the end of the statement before it?)"
    return _at(int(found.group(1)), int(found.group(2)), headline, source)


def _at(line: int, column: int, text: str, source: str) -> str:
    quoted = _quote(source, line)
    return f"line {line}, column {column}: {text}" + (f"\n{quoted}" if quoted else "")


def _unresolved(name: str, source: str) -> str:
    """Where an unknown name is first used: its first component (`r` of `r.p`) may be the culprit."""
    line = _first_use(name, source) or _first_use(name.split(".")[0], source)
    what = f"unknown name `{name}`"
    if line is None:
        return f"{what} (not declared, or not in the component library)"
    return f"line {line}: {what} (not declared, or not in the component library)\n{_quote(source, line)}"


def _first_use(name: str, source: str, after: int = 0) -> int | None:
    """The number of the first line after line `after` that mentions `name` outside a comment."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    for number, text in enumerate(source.splitlines(), 1):
        if number > after and pattern.search(text.split("//")[0]):
            return number
    return None


def _unbalanced(message: str) -> str:
    counts = _UNBALANCED.search(message)
    if not counts:
        return "The model is not balanced: " + _plain(message)
    equations, unknowns = int(counts.group(1)), int(counts.group(2))
    surplus = equations - unknowns
    which = f"{surplus} equation(s) too many" if surplus > 0 else f"{-surplus} equation(s) missing"
    return (
        f"The model is not balanced: {equations} equations for {unknowns} unknowns ({which}). "
        "Every unknown variable needs exactly one equation; parameters and constants need none."
    )


def _simulation_error(message: str, source: str) -> str:
    text = _plain(message)
    failed_assert = _ASSERT.search(text)
    if failed_assert:
        at, said = failed_assert.group(1), failed_assert.group(2).strip()
        line = next((n for n, ln in enumerate(source.splitlines(), 1) if "assert" in ln and said in ln), None)
        where = f" (line {line})\n{_quote(source, line)}" if line else ""
        return f"an assert failed at t={at} s: {said}{where}"
    span = _SPAN.search(text)
    if span:
        text = _SPAN.sub("", text)
        line = _line_of_span(source, int(span.group(1)), int(span.group(2)), text)
        if line is not None:
            name = re.search(r"`([\w.\[\]]+)`", text).group(1)  # _line_of_span found it
            text += f" (declared on line {line})"
            used = _first_equation_use(name, source)
            if used is not None:
                text += f"; its first use in an equation:\n{_quote(source, used)}"
    if "disagreement exceeds" in text or "non-finite" in text:
        text += "\nA value ran away or became undefined: check the signs, divisions and square roots."
    return text


def _first_equation_use(name: str, source: str) -> int | None:
    lines = source.splitlines()
    section = next((n for n, ln in enumerate(lines, 1) if re.match(r"\s*(?:initial\s+)?equation\b", ln)), None)
    return None if section is None else _first_use(name, source, after=section)


def _line_of_span(source: str, start: int, end: int, message: str) -> int | None:
    """The answer's line holding a byte span, if the span is in the answer at all.

    rumoca does not say which file a span belongs to: trust it only when the text there
    names the variable that the message is about.
    """
    data = source.encode()
    named = re.search(r"`([\w.\[\]]+)`", message)
    if end > len(data) or named is None or named.group(1).split(".")[-1] not in data[start:end].decode(errors="replace"):
        return None
    return data[:start].count(b"\n") + 1
