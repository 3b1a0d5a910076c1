"""A linear-time approximation of Lean 4's lexer, for the text screen (defence in depth).

`code_only(text)` blanks out what is not code, keeping length and newlines (so positions in
the result are positions in `text`): line comments `--`, nested block comments `/- -/` (doc
comments `/--`, `/-!` included), string literals with escapes, raw strings `r"…"` and
`r#"…"#`, and character literals (`'"'`, `'\\''`, `'\\x41'`, `'\\u{41}'`). Quoted names
`«…»` are names: their guillemets are blanked and their text kept, so `«sorryAx»` reads as
`sorryAx`. A `'` inside a name (`h'`) is part of the name, not a character literal.

Each character is looked at a bounded number of times, so 400 KB of any input take
milliseconds. It is an approximation: where it and Lean disagree, the checker's own parse
(`programs/HeavyCheck.lean`) is what decides.
"""

from __future__ import annotations


def _name_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_'!?"


def code_only(text: str) -> str:
    out = list(text)
    n = len(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        ch = text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text.startswith("/-", i):
            end = _block_comment_end(text, i)
        elif ch == '"':
            end = _string_end(text, i + 1)
        elif ch == "r" and (i == 0 or not _name_char(text[i - 1])) and _raw_string_start(text, i) is not None:
            end = _raw_string_end(text, i)
        elif ch == "'" and (i == 0 or not _name_char(text[i - 1])):
            end = _char_end(text, i)
            if end < 0:
                i += 1
                continue
        elif ch == "«":
            close = text.find("»", i + 1)
            end = n if close < 0 else close + 1
            blank(i, i + 1)
            blank(end - 1, end)
            i = end
            continue
        else:
            i += 1
            continue
        blank(i, end)
        i = end
    return "".join(out)


def _block_comment_end(text: str, i: int) -> int:
    """End of the (nestable) block comment starting at `i`."""
    depth, j, n = 1, i + 2, len(text)
    while j < n and depth:
        if text.startswith("/-", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("-/", j):
            depth, j = depth - 1, j + 2
        else:
            j += 1
    return j


def _string_end(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return n


def _raw_string_start(text: str, i: int) -> int | None:
    """The number of `#`s of a raw string `r#…#"` starting at `i`, or None."""
    j = i + 1
    while j < len(text) and text[j] == "#":
        j += 1
    return j - i - 1 if j < len(text) and text[j] == '"' else None


def _raw_string_end(text: str, i: int) -> int:
    hashes = _raw_string_start(text, i) or 0
    close = '"' + "#" * hashes
    end = text.find(close, i + 2 + hashes)
    return len(text) if end < 0 else end + len(close)


def _char_end(text: str, i: int) -> int:
    """End of the character literal starting at `i` (a `'`), or -1 if there is none."""
    n = len(text)
    if i + 1 >= n:
        return -1
    if text[i + 1] != "\\":
        return i + 3 if i + 2 < n and text[i + 2] == "'" and text[i + 1] != "\n" else -1
    if text.startswith("u{", i + 2):
        close = text.find("}", i + 4, i + 12)
        return close + 2 if close > 0 and close + 1 < n and text[close + 1] == "'" else -1
    if i + 2 < n and text[i + 2] == "x":
        return i + 6 if i + 5 < n and text[i + 5] == "'" else -1
    return i + 4 if i + 3 < n and text[i + 3] == "'" else -1
