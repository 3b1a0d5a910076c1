"""Find the final answers in a model's reply, in time linear in its length.

The final answers are, in the order written, the contents of every `\\boxed{...}` (or
`\\fbox{...}`) and every line `Answer: ...` (the format DAPO-Math prompts ask for; a line whose
answer is in a box counts once, as its box). Every one is returned, not only the last: a reply
that states two different values hedges, and the gym fails it unless both are right. A box that
is never closed means the reply has no answer: its final answer is malformed.

The last final answer ends the reply: after it a reply may close, and may restate its answer,
but may not state another value (`\\boxed{7}. So the answer is 9.` has a final answer the grader
would not read), or the reply has a problem, NUMBER_AFTER. The rule, in one pass over the text
after the last final answer: a *number* is a run of digits (any script), with its decimals
(`2.50`), its thousands groups (`1,000`) and its sign (a `-` right before it that does not
follow a value: `is -2`, `= -2`, but not `x -2` or `\\boxed{-2} -2`), compared as written less
the commas and the trailing decimal zeros (`2.0` is `2`). Every number there must

* be one of the numbers written in the final answers (`\\boxed{42}. So 42 apples.` passes;
  `\\boxed{7}. So 9.`, `\\boxed{2}. So -2.`, `\\boxed{62} (or rather ٦١)` fail);
* stand alone: its nearest neighbour on either side, past whitespace, brackets and spacing
  commands (and after it, into a text group: `42\\text{ thousand}`), is not an operator: a
  symbol (`^ _ * / + - × ÷ ! ' % < > ≤ ±` ...), a command other than text (`\\text`,
  `\\mathrm`, ...), `\\$` and math delimiters (so `\\cdot`, `\\frac`, `\\%`, a brace-less
  `\\boxed` are), or a word that makes another number of it (`times`, `x`, `plus`, `per`,
  `percent`, `factorial`, a scale word such as `thousand`). So `\\boxed{2}^2`,
  `\\boxed{2} \\cdot 2`, `\\boxed{-2} - 2` and `\\boxed{2}. So 2 thousand.` fail, while
  `\\boxed{2}. So $x = 2$.` and Markdown emphasis (`**2**`) pass;
* after a box, have something besides whitespace and brackets between it and the box:
  `\\boxed{4} 2` and `\\boxed{2}(2)` read as one expression (`$\\boxed{2}$ (2 apples)` passes;
  an answer line ends with its line, so `Answer: 42` may be followed by a line `42`).

One exception: a unit's power, `^2` or `^3` (`^{2}`, `$^2$`, `²`) on a unit word (shape.py's
list, or `m`) or on a `\\text{...}` group of words, is part of the unit, not a number stated:
`\\boxed{25}\\text{ cm}^2` and `\\boxed{25} cm^2` pass. Numbers in words are not read
(`\\boxed{62}. Actually, sixty-one.` is not seen), and a restatement must be plain numbers:
`\\boxed{\\frac{1}{2}}. So 1/2.` fails (`/` is an operator), as does `\\boxed{42}. It is 42!`.

Model output is untrusted and may be degenerate (60 KB of `\\boxed{{\\boxed{...`): every scan
here visits each character a bounded number of times, and the only regexes are a literal
search and a two-character tokenizer, neither of which can backtrack.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gyms.math.shape import is_ascii_digit, is_ascii_letter, is_scale_word, is_unit_word, run_of

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
NUMBER_AFTER = (
    "Your reply states a number after its final answer that is not that answer; end your reply with the final"
    " answer, in \\boxed{...} (or on a last line `Answer: ...`)."
)


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
    # A byte-order mark and CR line ends are how some clients send text, not part of the answer.
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    boxes = _boxes(text)
    if boxes is None or isinstance(boxes, Extracted):
        return boxes
    stated = sorted(boxes + _answer_lines(text, boxes), key=lambda s: s.start)
    if not stated:
        return None
    if _states_another_number(text[stated[-1].end :], stated, after_box=not stated[-1].line):
        return Extracted(problem=NUMBER_AFTER)
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


# -- numbers after the last final answer (the rule is in the module docstring) -------------------

_WS, _NUM, _CMD, _WORD, _CHAR = range(5)
_START = -1  # the index "before the first token": the final answer, for the text after it
_OPENING = {"(", "[", "{", "\\{", "\\lbrace", "\\langle"}
_CLOSING = {")", "]", "}", "\\}", "\\rbrace", "\\rangle"}
# Passed over to find a number's neighbours, like whitespace.
_SPACING = {"~", "\\,", "\\;", "\\:", "\\!", "\\ ", "\\quad", "\\qquad", "\\left", "\\right", "\\big", "\\Big",
            "\\bigg", "\\Bigg", "\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\displaystyle", "\\textstyle"}  # fmt: skip
_TEXT_COMMANDS = {"\\text", "\\textbf", "\\textit", "\\textrm", "\\textnormal", "\\mathrm", "\\mathbf", "\\mathit",
                  "\\mbox", "\\emph"}  # fmt: skip
# After a number, a text group is looked into: `42\\text{ thousand}` is 42 thousand.
_SKIP_BEFORE, _SKIP_AFTER = _OPENING | _SPACING, _CLOSING | _SPACING | _TEXT_COMMANDS | {"{"}
# Commands next to a number that leave it as it is; any other command is an operator.
_PLAIN_COMMANDS = _TEXT_COMMANDS | {"\\$", "\\(", "\\)", "\\[", "\\]", "\\\\", "\\newline"}
_OPERATOR_CHARS = frozenset("^_*/+-−×÷·⋅∙!'′″%％‰±∓√<>≤≥≠≈∼≅≡⩽⩾")
# Words that make another number of the one next to them (besides scale words: `thousand`).
_OPERATOR_WORDS = {"x", "times", "plus", "minus", "over", "divided", "factorial", "power", "root", "reciprocal",
                   "inverse", "percent", "percentage", "pct", "per", "mod", "modulo"}  # fmt: skip
_MINUS = {"-", "−"}
# What a `-` after it subtracts from (`x - 2`, `) - 2`, the final answer itself); after anything
# else (`is -2`, `= -2`, `(-2`) a `-` is a sign.
_VALUE_ENDS = {")", "]", "}", "|", "!", "'", "\\}", "\\pi", "\\infty", "\\circ", "\\%"}
_UNIT_POWERS = {"2", "3"}
_UNIT_POWER_CHARS = {"²", "³"}


def _states_another_number(tail: str, stated: list[_Stated], after_box: bool) -> bool:
    """Whether `tail`, the text after the last final answer, states a number other than a
    restatement of the final answers (the module docstring has the rule). After a box, the text
    goes on the box's expression; after an answer line, a new line starts."""
    if not any(char.isdigit() for char in tail):
        return False
    tokens = _tokens(tail)
    unit_groups = _unit_text_groups(tokens)
    written = {number for s in stated for number, _, _ in _numbers(_tokens(s.answer), after_value=False)}
    for number, before, after in _numbers(tokens, after_value=after_box):
        if _is_unit_power(tokens, number, before, unit_groups):
            continue
        touches_the_box = after_box and before == _START
        if number not in written or touches_the_box or _is_operator(tokens, before) or _is_operator(tokens, after):
            return True
    return False


def _numbers(tokens: list[tuple[int, str]], after_value: bool) -> list[tuple[str, int, int]]:
    """Every number in `tokens`, normalised and signed, with the indexes of its neighbours, past
    whitespace, brackets and spacing (_START: none before it, len(tokens): none after it).
    `after_value`: the tokens go on after a value (a box), which a `-` at their start subtracts from."""
    found = []
    for index, (kind, token) in enumerate(tokens):
        if kind != _NUM:
            continue
        number, first = _normal(token), index
        if index > 0 and tokens[index - 1][1] in _MINUS and not _ends_a_value(tokens, index - 1, after_value):
            number, first = "-" + number, index - 1
        before = first - 1
        while before >= 0 and (tokens[before][0] == _WS or tokens[before][1] in _SKIP_BEFORE):
            before -= 1
        after = index + 1
        while after < len(tokens) and (tokens[after][0] == _WS or tokens[after][1] in _SKIP_AFTER):
            after += 1
        found.append((number, before, after))
    return found


def _ends_a_value(tokens: list[tuple[int, str]], minus: int, after_value: bool) -> bool:
    """Whether the token before the `-` at `minus` (past whitespace) ends a value it subtracts from."""
    before = minus - 1
    while before >= 0 and tokens[before][0] == _WS:
        before -= 1
    if before < 0:
        return after_value  # the box itself is a value
    kind, token = tokens[before]
    return kind == _NUM or (kind == _WORD and len(token) == 1) or token in _VALUE_ENDS


def _is_operator(tokens: list[tuple[int, str]], index: int) -> bool:
    if not 0 <= index < len(tokens):
        return False
    kind, token = tokens[index]
    if kind == _CMD:
        return token not in _PLAIN_COMMANDS
    if kind == _WORD:
        return token.lower() in _OPERATOR_WORDS or is_scale_word(token)
    if kind == _CHAR and len(token) > 1:
        return False  # Markdown emphasis: `**42**`, `__42__`
    return kind == _CHAR and token in _OPERATOR_CHARS


def _is_unit_power(tokens: list[tuple[int, str]], number: str, before: int, unit_groups: set[int]) -> bool:
    """`cm^2`, `\\text{ cm}^{2}`, `cm$^2$`, `cm²`: a power of a unit, not a number stated."""
    if number in _UNIT_POWER_CHARS:
        base = before
    elif number in _UNIT_POWERS and before >= 0 and tokens[before][1] == "^":
        base = before - 1
        while base >= 0 and tokens[base][1] == "$":
            base -= 1
    else:
        return False
    if base < 0:
        return False
    kind, token = tokens[base]
    return base in unit_groups or (kind == _WORD and (is_unit_word(token) or token == "m"))


def _unit_text_groups(tokens: list[tuple[int, str]]) -> set[int]:
    """The indexes of the `}` that close a `\\text{...}` group of words only (`\\text{ cm}`)."""
    closing: set[int] = set()
    opened, words, previous = -1, 0, ""
    for index, (kind, token) in enumerate(tokens):
        if token == "{" and previous in _TEXT_COMMANDS:
            opened, words = index, 0
        elif opened >= 0 and kind == _WORD:
            words += 1
        elif opened >= 0 and token == "}" and words:
            closing.add(index)
            opened = -1
        elif opened >= 0 and kind != _WS:
            opened = -1
        if kind != _WS:
            previous = token
    return closing


def _tokens(text: str) -> list[tuple[int, str]]:
    """`text` as (kind, token): a run of whitespace, a number, a command, an ASCII word, a run of
    `*` or `_`, or one other character. Each character is looked at a bounded number of times."""
    tokens: list[tuple[int, str]] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            end, kind = run_of(text, i, str.isspace), _WS
        elif char.isdigit() or (char == "." and text[i + 1 : i + 2].isdigit()):
            end, kind = _number_end(text, i), _NUM
        elif char == "\\" and i + 1 < n and not text[i + 1].isdigit():
            end = run_of(text, i + 1, is_ascii_letter)
            end, kind = (end if end > i + 1 else i + 2), _CMD
        elif is_ascii_letter(char):
            end, kind = run_of(text, i, is_ascii_letter), _WORD
        elif char in "*_":
            end, kind = run_of(text, i, char.__eq__), _CHAR
        else:
            end, kind = i + 1, _CHAR
        tokens.append((kind, text[i:end]))
        i = end
    return tokens


def _number_end(text: str, start: int) -> int:
    """Where the number at `start` ends: digits, `,ddd` thousands groups after 1–3 ASCII digits,
    then a decimal point and digits."""
    end = run_of(text, start, str.isdigit)
    if 1 <= end - start <= 3 and all(is_ascii_digit(c) for c in text[start:end]):
        while (
            text[end : end + 1] == ","
            and len(text[end + 1 : end + 4]) == 3
            and all(is_ascii_digit(c) for c in text[end + 1 : end + 4])
            and not text[end + 4 : end + 5].isdigit()
        ):
            end += 4
    if text[end : end + 1] == "." and text[end + 1 : end + 2].isdigit():
        end = run_of(text, end + 1, str.isdigit)
    return end


def _normal(number: str) -> str:
    """A number as compared: without thousands commas and trailing decimal zeros (`2.50` is 2.5)."""
    number = number.replace(",", "")
    if "." in number:
        number = number.rstrip("0").rstrip(".") or "0"
        if number.startswith("."):
            number = "0" + number
    return number
