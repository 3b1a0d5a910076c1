"""Find the final answers in a model's reply, in time linear in its length.

The final answers are the contents of every `\\boxed{...}` (or `\\fbox{...}`) of the reply.
A reply without a box may give them on lines `Answer: ...` (the format DAPO-Math prompts ask
for). A box that is never closed means the reply has no answer: its final answer is
malformed. Every answer is returned, not only the last: a reply that boxes two different
values hedges, and the gym fails it unless both are right.

Model output is untrusted and may be degenerate (60 KB of `\\boxed{{\\boxed{...`): every scan
here visits each character a bounded number of times, and the only regexes are a literal
search and a two-character tokenizer, neither of which can backtrack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
# Inside a box only backslash escapes and braces matter: `\{` neither opens nor closes a group.
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)
# Deeper than any real answer; degenerate output nests without end.
MAX_BRACE_DEPTH = 64
# A box directly inside a box (`\boxed{\boxed{5}}`) is unwrapped this many times at most.
_MAX_UNWRAP = 4
_LINE_PREFIX = " \t>*_"  # `**Answer:**`, `> Answer:`, `__Answer__:`
_LINE_TRIM = " \t*_"
_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))

TOO_DEEP = f"Your final answer nests braces more than {MAX_BRACE_DEPTH} deep."


@dataclass(frozen=True)
class Extracted:
    """The distinct final answers of a reply, in order, or why none could be read."""

    answers: tuple[str, ...] = ()
    problem: str | None = None  # feedback for a reply whose answer cannot be read


def extract_answers(text: str) -> Extracted | None:
    """The final answers in `text`, without boxes or math delimiters; None when there is none."""
    boxes = _box_contents(text)
    if isinstance(boxes, Extracted):
        return boxes
    raw = boxes if boxes else _answer_lines(text)
    if raw is None:
        return None
    answers = _distinct(_clean(answer) for answer in raw)
    return Extracted(answers) if answers else None


def _box_contents(text: str) -> list[str] | Extracted | None:
    """Every top-level box's content; None if a box is never closed; a problem if too deep."""
    contents: list[str] = []
    position = 0
    while (box := _BOX.search(text, position)) is not None:
        end = _closing_brace(text, box.end())
        if end is None:
            return None
        if end < 0:
            return Extracted(problem=TOO_DEEP)
        contents.append(_unwrap(text[box.end() : end]))
        position = end + 1  # boxes inside this one are part of its content
    return contents


def _closing_brace(text: str, start: int) -> int | None:
    """Index of the brace closing the group opened just before `start`: None if it never
    closes, -1 if the group nests deeper than MAX_BRACE_DEPTH."""
    depth = 1
    for token in _BRACE_TOKEN.finditer(text, start):
        char = token.group()
        if char == "{":
            depth += 1
            if depth > MAX_BRACE_DEPTH:
                return -1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return token.start()
    return None


def _unwrap(content: str) -> str:
    """`\\boxed{\\boxed{5}}` means 5; any other box inside a box stays (and fails the screen)."""
    for _ in range(_MAX_UNWRAP):
        stripped = content.strip()
        box = _BOX.match(stripped)
        if box is None or _closing_brace(stripped, box.end()) != len(stripped) - 1:
            break
        content = stripped[box.end() : -1]
    return content


def _answer_lines(text: str) -> list[str] | None:
    """The answer of every line `Answer: ...` (any case, `Final answer:`, Markdown bold)."""
    found = [answer for line in text.split("\n") if (answer := _answer_of_line(line)) is not None]
    return found or None


def _answer_of_line(line: str) -> str | None:
    rest = line.lstrip(_LINE_PREFIX)
    if rest[:5].lower() == "final" and rest[5:6] in (" ", "\t"):
        rest = rest[5:].lstrip(" \t")
    if rest[:6].lower() != "answer":
        return None
    rest = rest[6:].lstrip(" \t")
    if not rest.startswith(":"):
        return None
    return rest[1:].strip(_LINE_TRIM).rstrip(".")


def _clean(answer: str) -> str:
    """The answer without surrounding whitespace and one pair of math delimiters."""
    answer = answer.strip()
    for opening, closing in _DELIMITERS:
        inner = answer[len(opening) : len(answer) - len(closing)]
        if (
            len(answer) >= len(opening) + len(closing)
            and answer.startswith(opening)
            and answer.endswith(closing)
            and (opening[0] != "$" or "$" not in inner)
        ):
            return inner.strip()
    return answer


def _distinct(answers: Iterable[str]) -> tuple[str, ...]:
    """Non-empty answers, each once; answers differing only in whitespace are the same."""
    seen: dict[str, str] = {}
    for answer in answers:
        key = "".join(answer.split())
        if key and key not in seen:
            seen[key] = answer
    return tuple(seen.values())
