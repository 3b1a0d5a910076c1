"""Notations of one value made one form before the screen and the checker read an answer.

A person writes 2646 as `2\\,646`, `2{,}646`, `2,646` or with a thin space, and 30 degrees as
`30°` or `30^\\circ`. The screen would read `2\\,646` as two numbers in a row and math-verify
does not know `°`, so both sides, answer and gold, are written one way first:

* thousands separators (`\\,`, `{,}`, `\\ `, `~`, a thin or no-break space, and `,` unless the
  gold is a list) between a group of 1-3 digits and groups of exactly 3 are dropped;
* `°` is `^\\circ`.

An ASCII space is not a separator here (`2 646` stays two numbers, which the screen refuses).
One pass over the answer; the caller has already capped its length.
"""

from __future__ import annotations

_SEPARATORS = ("{,}", "\\,", "\\ ", "~", "\u2009", "\u202f", "\u00a0", "\\thinspace ")


def canonical(answer: str, commas: bool = True) -> str:
    """`answer` with thousands separators dropped and `°` as `^\\circ`; `commas`: a plain `,` is
    a separator too (not where the gold is a list, whose commas part values)."""
    separators = (*_SEPARATORS, ",") if commas else _SEPARATORS
    out: list[str] = []
    i, n = 0, len(answer)
    while i < n:
        char = answer[i]
        if char == "°":
            out.append("^\\circ")
            i += 1
            continue
        if not _digit(char) or (i > 0 and (_digit(answer[i - 1]) or answer[i - 1] == ".")):
            out.append(char)
            i += 1
            continue
        end = _run(answer, i)
        out.append(answer[i:end])
        if end - i <= 3:
            end = _groups(answer, end, separators, out)
        i = end
    return "".join(out)


def _groups(text: str, position: int, separators: tuple[str, ...], out: list[str]) -> int:
    """After a lead group of digits: append each `separator + 3 digits` group's digits to `out`,
    and return where the last one ends."""
    while True:
        for separator in separators:
            if text.startswith(separator, position):
                digits = position + len(separator)
                if _run(text, digits) - digits == 3:
                    out.append(text[digits : digits + 3])
                    position = digits + 3
                    break
        else:
            return position


def _run(text: str, start: int) -> int:
    end = start
    while end < len(text) and _digit(text[end]):
        end += 1
    return end


def _digit(char: str) -> bool:
    return "0" <= char <= "9"
