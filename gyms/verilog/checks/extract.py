"""Find the Verilog in a model's answer: a fenced code block, or a bare `module ... endmodule`.

Model output is untrusted and may be degenerate (hundreds of KB of repeated markup), so every
scan here is linear: literal searches that always move forward, and regexes without nested
or overlapping repetition. `Episode.step` has already capped the answer's size.
"""

from __future__ import annotations

import re

MAX_SOURCE_CHARS = 64 * 1024  # the answer cap (gyms/base.py): a design cannot be longer

_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE = "```"
_TAG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")
_CLOSE = re.compile(r"\n[ \t]*```")
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
    text = _without_think(normalise(answer))
    blocks, outside = _fenced(text)
    verilog = [body for tag, body in blocks if tag.lower() in _VERILOG_TAGS]
    with_modules = [b for b in verilog if _MODULE.search(b)]
    defining = [b for b in with_modules if module in _MODULE.findall(b)]
    if defining:
        return defining[-1].strip() + "\n"
    if with_modules:
        return with_modules[-1].strip() + "\n"
    return _bare(outside)  # code in a fence of another language is not the design


def normalise(answer: str) -> str:
    """The answer as every later stage sees it: one line ending (CRLF and lone CR become LF, so
    the screen, pyslang and the simulators agree on where a line, and a `//` comment, ends) and
    no byte-order mark in front."""
    return answer.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")


def _without_think(text: str) -> str:
    """`text` without its closed <think>...</think> sections (an unclosed one is kept)."""
    kept, pos = [], 0
    while True:
        opened = _THINK_OPEN.search(text, pos)
        closed = _THINK_CLOSE.search(text, opened.end()) if opened else None
        if closed is None:
            kept.append(text[pos:])
            return "".join(kept)
        kept.append(text[pos : opened.start()])
        pos = closed.end()


def _fenced(text: str) -> tuple[list[tuple[str, str]], str]:
    """(tag, body) of every fenced block, and the text outside them.

    A fence opens at ``` followed by a language tag and the end of its line, and closes at a
    line starting with ``` (or the end of the text: a cut-off answer, or ``` right after the
    last block's code).
    """
    blocks: list[tuple[str, str]] = []
    outside: list[str] = []
    pos = 0
    while True:
        start = text.find(_FENCE, pos)
        line_end = text.find("\n", start) if start >= 0 else -1
        if line_end < 0:  # no fence, or one whose line never ends: no later fence has a body either
            outside.append(text[pos:])
            return blocks, "".join(outside)
        outside.append(text[pos:start])
        tag = _TAG.match(text, start + len(_FENCE)).group(1)
        closed = _CLOSE.search(text, line_end + 1)
        body = text[line_end + 1 : closed.start() if closed else len(text)]
        if closed is None:  # the last block: its fence may close right after the code ("endmodule```")
            body = body.rstrip().removesuffix(_FENCE)
        blocks.append((tag, body))
        pos = closed.end() if closed else len(text)


def _bare(text: str) -> str | None:
    first = _MODULE_WORD.search(text)
    if first is None:
        return None
    last = None
    for last in _ENDMODULE.finditer(text, first.end()):
        pass
    return text[first.start() : last.end()] + "\n" if last else None
