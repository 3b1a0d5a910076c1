"""Finding the Modelica source in a model's answer.

The answer should hold the model in a ```modelica code block; the last such block wins (a
model that corrects itself writes the fixed version last). Failing that, the last fenced
block that defines a class, and failing that, the bare text from the first class header to
the last `end Name;`.
"""

from __future__ import annotations

import re

# Longer sources are not answers to these tasks, and would only load the compiler.
MAX_SOURCE_CHARS = 50_000

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CLASS_HEADER = re.compile(
    r"^[ \t]*(?:(?:partial|encapsulated|final|expandable)\s+)*"
    r"(?:model|block|package|class|connector|record|function|type)\s+[A-Za-z_]\w*",
    re.MULTILINE,
)
_END = re.compile(r"^[ \t]*end\s+[A-Za-z_][\w.]*\s*;[ \t]*$", re.MULTILINE)
_LABELS = {"modelica", "mo"}


def extract_source(answer: str) -> str | None:
    """The Modelica source of the answer, or None when there is none."""
    blocks = [(label.lower(), body) for label, body in _FENCE.findall(answer)]
    labelled = [body for label, body in blocks if label in _LABELS and _CLASS_HEADER.search(body)]
    if labelled:
        return labelled[-1].strip()
    defining = [body for _, body in blocks if _CLASS_HEADER.search(body) and _END.search(body)]
    if defining:
        return defining[-1].strip()
    # Prose can start a line with "model the plant as...": a header counts only if its end follows.
    for header in _CLASS_HEADER.finditer(answer):
        name = header.group(0).split()[-1]
        if re.search(rf"^[ \t]*end\s+{name}\s*;", answer[header.end() :], re.MULTILINE):
            last_end = list(_END.finditer(answer, header.end()))[-1]
            return answer[header.start() : last_end.end()].strip()
    return None


def defined_classes(source: str) -> list[str]:
    """Names of the classes the source defines, in order (for "you named it X" feedback)."""
    return [m.group(0).split()[-1] for m in _CLASS_HEADER.finditer(source)]
