"""Find the Verilog in a model's answer: a fenced code block, or a bare `module ... endmodule`."""

from __future__ import annotations

import re

MAX_SOURCE_CHARS = 100_000  # far above any task here; beyond it the answer is not a design

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# A fence's language tag, then the body up to the closing fence (or the end: a cut-off answer).
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
_VERILOG_TAGS = {"", "verilog", "systemverilog", "sv", "v", "vlog"}
_MODULE = re.compile(r"\bmodule\s+([A-Za-z_][A-Za-z0-9_$]*)")
_BARE = re.compile(r"\bmodule\b.*\bendmodule\b", re.DOTALL)


def extract_verilog(answer: str, module: str) -> str | None:
    """The code to check, or None when the answer holds no module at all.

    Among fenced blocks with a Verilog (or no) language tag, the last one that defines
    `module` wins (a model often drafts first and corrects later); failing that, the last
    block that defines any module. Otherwise, outside fences, the text from the first `module`
    to the last `endmodule`.
    """
    text = _THINK.sub("", answer)
    blocks = [body for tag, body in _FENCE.findall(text) if tag.lower() in _VERILOG_TAGS]
    with_modules = [b for b in blocks if _MODULE.search(b)]
    defining = [b for b in with_modules if module in _MODULE.findall(b)]
    if defining:
        return defining[-1].strip() + "\n"
    if with_modules:
        return with_modules[-1].strip() + "\n"
    bare = _BARE.search(_FENCE.sub("", text))  # code in a fence of another language is not the design
    return bare.group(0) + "\n" if bare else None
