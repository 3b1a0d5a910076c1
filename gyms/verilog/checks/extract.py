"""Find the Verilog in a model's answer: a fenced code block, or a bare `module ... endmodule`.

The reply is read as `gyms/answer_text.py` makes every gym read it (normalised, without its
`<think>` reasoning, fences by its one scanner).

Model output is untrusted and may be degenerate (hundreds of KB of repeated markup), so every
scan here is linear: literal searches that always move forward, and regexes without nested
or overlapping repetition. `Episode.step` has already capped the answer's size.
"""

from __future__ import annotations

import re

from gyms.answer_text import MAX_ANSWER_BYTES, fenced_blocks, normalise, outside_fences, without_think

MAX_SOURCE_CHARS = MAX_ANSWER_BYTES  # the answer cap: a design cannot be longer
_VERILOG_TAGS = {"", "verilog", "systemverilog", "sv", "v", "vlog"}
_MODULE = re.compile(r"\bmodule\s+([A-Za-z_][A-Za-z0-9_$]*)")
_MODULE_WORD = re.compile(r"\bmodule\b")
_ENDMODULE = re.compile(r"\bendmodule\b")


def extract_verilog(answer: str, module: str) -> str | None:
    """The code to check, or None when the answer holds no module at all.

    Among fenced blocks with a Verilog (or no) language tag, the last one that defines
    `module` wins (a model often drafts first and corrects later); failing that, the last
    block that defines any module. Otherwise, outside fences, the text from the first `module`
    to the last `endmodule`.
    """
    text = without_think(normalise(answer))
    blocks = fenced_blocks(text)
    outside = outside_fences(text, blocks)
    verilog = [block.body for block in blocks if block.tag in _VERILOG_TAGS]
    with_modules = [b for b in verilog if _MODULE.search(b)]
    defining = [b for b in with_modules if module in _MODULE.findall(b)]
    if defining:
        return defining[-1].strip() + "\n"
    if with_modules:
        return with_modules[-1].strip() + "\n"
    return _bare(outside)  # code in a fence of another language is not the design


def _bare(text: str) -> str | None:
    first = _MODULE_WORD.search(text)
    if first is None:
        return None
    last = None
    for last in _ENDMODULE.finditer(text, first.end()):
        pass
    return text[first.start() : last.end()] + "\n" if last else None
