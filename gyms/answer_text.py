"""A model's reply as every gym reads it: the size cap, one normal form, `<think>` blocks, fences.

Model output is untrusted and may be degenerate (tens of kilobytes of repeated fences or tags),
so each function here visits every character a bounded number of times: literal searches that
only move forward, and no regex that can backtrack. Gyms call them in this order:

1. `oversize`: `Episode.step` refuses a reply over the cap before any parsing.
2. `normalise`: no byte-order mark, LF line ends (so every stage agrees where a line and a
   `//` comment end), and, where a gym asks, Unicode digits as the ASCII digits they are
   (`nfkc_digits`: fullwidth `３`, mathematical `𝟑`; never superscripts, which are powers).
3. `without_think`: the reply without its reasoning (`<think>...</think>`), which the user
   never sees and no grader reads.
4. `fenced_blocks`: the ``` code blocks, with their language tags, for gyms whose answer is code.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Longer than any answer a task here wants; the cap is in UTF-8 bytes, what travels and is stored.
MAX_ANSWER_BYTES = 64 * 1024

FENCE = "```"
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def oversize(text: str, limit: int = MAX_ANSWER_BYTES) -> int | None:
    """The reply's size in UTF-8 bytes if it is over `limit`, else None."""
    if len(text) * 4 <= limit:  # no character is more than 4 bytes: skip the encoding
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


def normalise(text: str, nfkc_digits: bool = False) -> str:
    """`text` without a leading byte-order mark (U+FEFF), with LF for every CRLF and lone CR;
    with `nfkc_digits`, every character whose NFKC form is an ASCII digit becomes that digit,
    except superscripts and subscripts (`x²` keeps its power)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if nfkc_digits and not text.isascii():
        text = "".join(_ascii_digit(char) for char in text)
    return text


def _ascii_digit(char: str) -> str:
    if char.isascii() or not char.isdigit():
        return char
    decomposition = unicodedata.decomposition(char)
    if decomposition.startswith(("<super>", "<sub>")):
        return char
    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 and folded.isascii() else char


def without_think(text: str) -> str:
    """`text` without its reasoning: every closed `<think>...</think>` block (any case), and all
    text before a `</think>` that no `<think>` opens (chat templates put the opening tag in the
    prompt). An unclosed `<think>` is kept: the reply was cut off while thinking."""
    lower = text.translate(_ASCII_LOWER)  # same length as `text`, so indexes carry over
    kept, position = [], 0
    first_close = lower.find(_THINK_CLOSE)
    if first_close >= 0 and lower.find(_THINK_OPEN, 0, first_close) < 0:
        position = first_close + len(_THINK_CLOSE)
    while True:
        opened = lower.find(_THINK_OPEN, position)
        closed = lower.find(_THINK_CLOSE, opened + len(_THINK_OPEN)) if opened >= 0 else -1
        if closed < 0:
            kept.append(text[position:])
            return "".join(kept)
        kept.append(text[position:opened])
        position = closed + len(_THINK_CLOSE)


@dataclass(frozen=True)
class Fence:
    """One fenced code block: its language tag (the first word after the opening ```, lower
    case, "" for none), its body, and where the whole block starts and ends in the text."""

    tag: str
    body: str
    start: int
    end: int
    closed: bool


def fenced_blocks(text: str) -> list[Fence]:
    """Every ``` block in `text`, in order, in one left-to-right pass.

    A fence opens at ``` anywhere in a line; the rest of that line is its info string (the tag
    is its first word). It closes at the next ``` (on a line of its own, or right after the code:
    "endmodule```"); the rest of the closing line is outside the block. A block that never closes
    runs to the end of the text (a cut-off reply), without a trailing ```.
    """
    blocks: list[Fence] = []
    position = 0
    while (start := text.find(FENCE, position)) >= 0:
        line_end = text.find("\n", start)
        if line_end < 0:  # an opening whose line never ends has no body
            break
        tag = _tag(text, start + len(FENCE), line_end)
        close = text.find(FENCE, line_end + 1)
        if close < 0:
            body = text[line_end + 1 :].rstrip().removesuffix(FENCE)
            blocks.append(Fence(tag, body, start, len(text), closed=False))
            break
        blocks.append(Fence(tag, text[line_end + 1 : close], start, close + len(FENCE), closed=True))
        position = close + len(FENCE)
    return blocks


def outside_fences(text: str, blocks: list[Fence]) -> str:
    """`text` less its fenced blocks (`blocks` from `fenced_blocks(text)`)."""
    parts, position = [], 0
    for block in blocks:
        parts.append(text[position : block.start])
        position = block.end
    parts.append(text[position:])
    return "".join(parts)


def _tag(text: str, start: int, end: int) -> str:
    """The first word of the info string `text[start:end]`: letters, digits, `_+-`."""
    i = start
    while i < end and text[i] in " \t":
        i += 1
    j = i
    while j < end and (text[j].isascii() and (text[j].isalnum() or text[j] in "_+-")):
        j += 1
    return text[i:j].lower()
