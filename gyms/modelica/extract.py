"""Finding the Modelica source in a model's answer, in time linear in the answer's length.

The answer should hold the model in a ```modelica code block; the last such block wins (a
model that corrects itself writes the fixed version last). Failing that, the last fenced
block that defines a class, and failing that, the bare text from the first class header to
the last `end Name;`.

The reply is read as `gyms/answer_text.py` makes every gym read it: normalised once (no
byte-order mark, LF line ends), without its `<think>` reasoning, with fences found by its one
scanner. The source the compiler gets, and the OpenModelica screen reads, is cut from that text.

Model output is untrusted and may be degenerate (tens of kilobytes of repeated fences or
headers), so every pattern here is anchored to one line and nothing is searched once per
match: fences are found by one pass, headers and `end` lines by one regex pass each. `Episode.step` caps the answer's size before any of this runs.
"""

from __future__ import annotations

import re

from gyms.answer_text import fenced_blocks as _fences
from gyms.answer_text import normalise, without_think

# Longer sources are not answers to these tasks, and would only load the compiler.
MAX_SOURCE_CHARS = 50_000

# A class header on one line (keywords and name on the same line, as every answer writes them).
_CLASS_HEADER = re.compile(
    r"^[ \t]*(?:(?:partial|encapsulated|final|expandable)[ \t]+)*"
    r"(?:model|block|package|class|connector|record|function|type)[ \t]+([A-Za-z_]\w*)",
    re.MULTILINE,
)
_END = re.compile(r"^[ \t]*end[ \t]+([A-Za-z_][\w.]*)[ \t]*;", re.MULTILINE)
_LABELS = {"modelica", "mo"}


def extract_source(answer: str) -> str | None:
    """The Modelica source of the answer, or None when there is none."""
    answer = without_think(normalise(answer))
    blocks = fenced_blocks(answer)
    labelled = [body for label, body in blocks if label in _LABELS and _CLASS_HEADER.search(body)]
    if labelled:
        return labelled[-1].strip()
    defining = [body for _, body in blocks if _CLASS_HEADER.search(body) and _END.search(body)]
    if defining:
        return defining[-1].strip()
    return _bare_source(answer)


def fenced_blocks(answer: str) -> list[tuple[str, str]]:
    """(label, body) of every ``` block, in order; an unclosed block runs to the end."""
    return [(block.tag, block.body) for block in _fences(answer)]


def _bare_source(answer: str) -> str | None:
    """From the first class header whose `end Name;` follows it to the last `end ...;` line.

    Prose can start a line with "model the plant as...": a header counts only if its end follows.
    """
    ends = list(_END.finditer(answer))
    if not ends:
        return None
    last_end_of = {m.group(1): m.end() for m in ends}  # later matches overwrite earlier ones
    for header in _CLASS_HEADER.finditer(answer):
        if last_end_of.get(header.group(1), -1) > header.end():
            return answer[header.start() : ends[-1].end()].strip()
    return None


def defined_classes(source: str) -> list[str]:
    """Names of the classes the source defines, in order (for "you named it X" feedback)."""
    return [m.group(1) for m in _CLASS_HEADER.finditer(source)]
