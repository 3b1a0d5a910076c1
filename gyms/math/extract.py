"""Find the final answer in a model's reply.

The answer is the content of the last `\\boxed{...}` (or `\\fbox{...}`). A reply without one
may give it on a last line `Answer: ...` (the format DAPO-Math prompts ask for). If the
last box is not closed, the reply has no answer: its final answer is malformed, and an
earlier box was not meant as the final one.
"""

from __future__ import annotations

import re

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
# `Answer: 42`, `**Answer:** 42`, `**Final answer: 42**`, `answer: $x+1$`, at the start of a line.
_ANSWER_LINE = re.compile(
    r"^[ \t>*_]*(?:final[ \t]+)?answer[ \t]*:[ \t*_]*(?P<answer>.*?)[ \t*_]*$", re.IGNORECASE | re.MULTILINE
)
# Math delimiters around a whole answer; the checker adds its own.
_DELIMITED = re.compile(r"^(?:\$\$([^$]*)\$\$|\$([^$]*)\$|\\\((.*)\\\)|\\\[(.*)\\\])$", re.DOTALL)


def extract_answer(text: str) -> str | None:
    """The final answer in `text`, without its box or delimiters; None when there is none."""
    boxes = list(_BOX.finditer(text))
    if boxes:
        answer = _braced(text, boxes[-1].end())
    else:
        lines = list(_ANSWER_LINE.finditer(text))
        answer = lines[-1].group("answer").rstrip(".") if lines else None
    if answer is None:
        return None
    answer = _strip_delimiters(answer.strip())
    return answer or None


def _braced(text: str, start: int) -> str | None:
    """The text from `start` up to the brace that closes the one just before it, or None."""
    depth = 1
    i = start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2  # an escaped character such as `\{` does not open or close a group
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return None


def _strip_delimiters(answer: str) -> str:
    match = _DELIMITED.match(answer)
    if match is None:
        return answer
    return next(group for group in match.groups() if group is not None).strip()
