"""Find the final answers in a model's reply, in time linear in its length.

The final answers are, in the order written, the contents of every `\\boxed{...}` (or
`\\fbox{...}`) and every line `Answer: ...` (the format DAPO-Math prompts ask for; a line whose
answer is in a box counts once, as its box). Every one is returned, not only the last: a reply
that states two different values hedges, and the gym fails it unless both are right. A box that
is never closed means the reply has no answer: its final answer is malformed.

The last final answer ends the reply, as the contract in the prompt says (docs/gyms/math.md):
only closing marks may follow it, the sentence that gives it may not disown it, and it may not
stand in markup a reader does not see. `gyms/math/contract.py` checks these three; a reply
that breaks one has a problem, whatever its boxes hold.

The reply is read as `gyms/answer_text.py` makes every gym read it: normalised (no byte-order
mark, LF line ends, Unicode digits as the ASCII digits they are: fullwidth `３` is 3) and
without its `<think>` reasoning, which no reader sees.

Model output is untrusted and may be degenerate (60 KB of `\\boxed{{\\boxed{...`): every scan
here visits each character a bounded number of times, and the only regexes are a literal
search and a two-character tokenizer, neither of which can backtrack.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gyms.answer_text import normalise, without_think
from gyms.math import contract

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
# Inside a box only backslash escapes and braces matter: `\{` neither opens nor closes a group.
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)
# Deeper than any real answer; degenerate output nests without end.
MAX_BRACE_DEPTH = 64
# A box directly inside a box (`\boxed{\boxed{5}}`) is unwrapped this many times at most.
_MAX_UNWRAP = 4
_LINE_PREFIX = " \t>*_"  # `**Answer:**`, `> Answer:`, `__Answer__:`
_LINE_TRIM = " \t*_`"  # and `Answer: `42``, or a code fence closed on the answer's line
_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))

TOO_DEEP = f"Your final answer nests braces more than {MAX_BRACE_DEPTH} deep."


@dataclass(frozen=True)
class _Stated:
    """A final answer as written: where it starts and ends in the reply, and its text."""

    start: int
    end: int
    answer: str
    line: bool = False  # an `Answer:` line, which ends with its line; else a box


@dataclass(frozen=True)
class Extracted:
    """The distinct final answers of a reply, in order, or why none could be read."""

    answers: tuple[str, ...] = ()
    problem: str | None = None  # feedback for a reply whose answer cannot be read


def extract_answers(text: str) -> Extracted | None:
    """The final answers in `text`, without boxes or math delimiters; None when there is none."""
    text = without_think(normalise(text, nfkc_digits=True))
    boxes = _boxes(text)
    if boxes is None or isinstance(boxes, Extracted):
        return boxes
    stated = sorted(boxes + _answer_lines(text, boxes), key=lambda s: s.start)
    if not stated:
        return None
    final = stated[-1]
    problem = (
        contract.after(text[final.end :])
        or contract.disowned(text, final.start)
        or contract.hidden(text, final.start)
    )
    if problem is not None:
        return Extracted(problem=problem)
    answers = _distinct(_clean(s.answer) for s in stated)
    return Extracted(answers) if answers else None


def _boxes(text: str) -> list[_Stated] | Extracted | None:
    """Every top-level box; None if a box is never closed; a problem if too deep."""
    boxes: list[_Stated] = []
    position = 0
    while (box := _BOX.search(text, position)) is not None:
        end = _closing_brace(text, box.end())
        if end is None:
            return None
        if end < 0:
            return Extracted(problem=TOO_DEEP)
        boxes.append(_Stated(box.start(), end + 1, _unwrap(text[box.end() : end])))
        position = end + 1  # boxes inside this one are part of its content
    return boxes


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


def _answer_lines(text: str, boxes: list[_Stated]) -> list[_Stated]:
    """Every line `Answer: ...` (any case, `Final answer:`, Markdown bold), but those inside a box
    and those with a box, which is their answer."""
    box_starts = [box.start for box in boxes]
    found = []
    start = 0
    for line in text.split("\n"):
        answer = _answer_of_line(line)
        if answer is not None and _BOX.search(line) is None and not _in_a_box(start, boxes, box_starts):
            found.append(_Stated(start, start + len(line), answer, line=True))
        start += len(line) + 1
    return found


def _in_a_box(position: int, boxes: list[_Stated], box_starts: list[int]) -> bool:
    before = bisect.bisect_right(box_starts, position) - 1
    return before >= 0 and boxes[before].end > position


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
