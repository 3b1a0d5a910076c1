"""Where the final answer may stand: the placement half of the math gym's answer contract.

The contract (docs/gyms/math.md, and the task prompt) puts the final answer last: the last
`\\boxed{...}` or a last line `Answer: ...`. A person reads what a reply says last, and what it
shows; a grader that reads the box alone can be told one thing while the reader is told
another. So, around the final answer:

* `after`: only closing marks may follow it (whitespace, `. , ;`, closing brackets, math
  delimiters, `\\\\`, `\\end{...}`, Markdown emphasis, backticks: a closing code fence). A word,
  a symbol, `%`, any digit or other number character (`½`, `Ⅳ`, `٤`) could change or retract it.
* `disowned`: the sentence that gives it may not disown it ("not", "rejected draft", "wrong",
  "instead", ...: `_DISOWNING`).
* `hidden`: it may not stand where a reader cannot see it: in an HTML comment or a hiding HTML
  element, in the argument of a command that hides, overlaps, recolours or strikes out
  (`\\phantom`, `\\llap`, `\\textcolor`, `\\cancel`, ...), after a colour declaration in its group,
  inside `~~...~~`; and no reply may move text with negative space (`\\hspace{-1em}`).

Each check is one forward pass over the text (or back over one sentence) with regexes that
cannot backtrack; the text is untrusted.
"""

from __future__ import annotations

import re

AFTER = (
    "Your reply goes on after its final answer (“{}”). End your reply with the final answer: only"
    " closing punctuation, `$` or a closing code fence may follow the last \\boxed{{...}} or `Answer:` line."
)
DISOWNED = (
    "The sentence that gives your final answer disowns it (“{}”). State the final answer plainly, in a"
    " sentence of its own, as the last thing in your reply."
)
HIDDEN = "Your final answer is {}, where a reader does not see it; show the final answer plainly."
NEGATIVE_SPACE = "Your reply moves text with negative space (`{}`); write the final answer plainly."

# After the final answer: whitespace, closing marks, `\end{env}`, `\right)` and the like.
_CLOSING = re.compile(
    r"[\s.,;)\]}$*_`]+|\\[)\]]|\\\\|\\end\{[A-Za-z]+\*?\}|\\right[).\]|]|\\right\\\}|\\[,;:! ]|\\q?quad(?![A-Za-z])"
)
# Words that, in the sentence giving the final answer, say it is not the answer.
_DISOWNING = frozenset(
    "not no never nor neither rejected reject draft drafts wrong wrongly incorrect incorrectly instead mistake"
    " mistaken mistakenly error erroneous false falsely isn wasn aren weren doesn didn don cannot previous"
    " previously earlier initial initially discard discarded ignore ignored scratch rather than unlike except"
    " hypothetically typo struck retract retracted withdrawn crossed".split()
)
_WORD = re.compile(r"[A-Za-z]+")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")

# Commands whose arguments a reader does not see as written (hidden, overlapped, moved, recoloured
# or struck out: a struck-out answer is a retracted one), and how many brace arguments each takes.
_HIDING = {
    **dict.fromkeys(r"\phantom \hphantom \vphantom \smash \llap \rlap \clap \mathllap \mathrlap \mathclap"
                    r" \cancel \bcancel \xcancel \sout \st \xout \hidden \comment \makebox".split(), 1),
    **dict.fromkeys(r"\textcolor \colorbox \raisebox \scalebox".split(), 2),
    **dict.fromkeys(r"\fcolorbox \resizebox".split(), 3),
}  # fmt: skip
# Declarations that hide the rest of their group (or, outside any group, of the reply).
_DECLARING = frozenset(r"\color \iffalse \pagecolor".split())
_SPACES = frozenset(r"\hspace \hskip \kern \mkern \mskip \mspace \moveleft \moveright \hspace*".split())
# HTML that hides its content or strikes it out; any element with a style, colour, class or hidden.
_HIDING_ELEMENTS = frozenset("del s strike details template noscript script style textarea iframe object".split())
_HIDING_ATTRIBUTES = re.compile(r"(?:style|color|class)\s*=|\bhidden\b", re.IGNORECASE)
# Only these names open an element: `$a<b$ ... $c>d$` is two inequalities, not a tag.
_ELEMENTS = _HIDING_ELEMENTS | frozenset("span div font p sup sub small mark ins u b i em strong section center".split())
_MAX_TAG = 300  # an HTML opening tag's attributes are read this far
_TOKEN = re.compile(r"<!--|-->|</?[A-Za-z][A-Za-z0-9]*|\\[A-Za-z]+\*?|\\.|[{}\[\]]|~~")


def after(tail: str) -> str | None:
    """Feedback if `tail`, the text after the final answer, holds more than closing marks."""
    position = 0
    while position < len(tail):
        closing = _CLOSING.match(tail, position)
        if closing is None:
            return AFTER.format(_snippet(tail, position))
        position = closing.end()
    return None


def disowned(text: str, start: int) -> str | None:
    """Feedback if the sentence that ends at `start` (where the final answer begins) disowns it."""
    sentence_start = _sentence_start(text, start)
    for word in _WORD.finditer(text, sentence_start, start):
        if word.group().lower() in _DISOWNING:
            return DISOWNED.format(word.group())
    return None


def _sentence_start(text: str, start: int) -> int:
    """Where the sentence holding `start` begins: after the last sentence end on its line."""
    last = text.rfind("\n", 0, start) + 1
    for end in _SENTENCE_END.finditer(text, last, start):
        last = end.end()
    return last


def hidden(text: str, start: int) -> str | None:
    """Feedback if the final answer at `start` stands in hidden markup, or the reply moves text."""
    in_comment, struck, declared_outside = False, False, False
    elements: list[bool] = []  # open HTML elements: does each hide?
    groups: list[tuple[bool, int]] = []  # open brace groups: does each hide, and arguments after it
    pending, option = 0, False  # after a hiding command: its arguments still to come; in `[...]`
    last_end = 0
    why = None
    for token in _TOKEN.finditer(text):
        value = token.group()
        if value in _SPACES and _negative_after(text, token.end()):
            return NEGATIVE_SPACE.format(value)
        if token.start() >= start:
            continue  # only negative spacing matters past the answer's start
        if in_comment:
            in_comment = value != "-->"
            last_end = token.end()
            continue
        if pending and not option and text[last_end : token.start()].strip():
            pending = 0  # text between the command and this token: no more arguments
        last_end = token.end()
        if value == "<!--":
            in_comment = True
        elif value == "~~":
            struck = not struck
        elif value.startswith("</"):
            if elements and value[2:].lower() in _ELEMENTS:
                elements.pop()
        elif value.startswith("<"):
            close = text.find(">", token.end(), token.end() + _MAX_TAG)
            attributes = text[token.end() : close] if close >= 0 else ""
            name = value[1:].lower()
            if close >= 0 and name in _ELEMENTS and not attributes.rstrip().endswith("/"):
                elements.append(name in _HIDING_ELEMENTS or bool(_HIDING_ATTRIBUTES.search(attributes)))
        elif value in _HIDING:
            pending, option = _HIDING[value], False
        elif value in _DECLARING:
            if groups:
                groups[-1] = (True, groups[-1][1])
            else:
                declared_outside = True
        elif value == "[" and pending:
            option = True
        elif value == "]" and option:
            option = False
        elif value == "{":
            groups.append((pending > 0, max(pending - 1, 0)))
            pending = 0
        elif value == "}":
            if groups:
                pending = groups.pop()[1]  # a hiding command's next argument may follow
        elif value.startswith("\\"):
            pending = 0
    if pending and not option and text[last_end:start].strip():
        pending = 0
    if in_comment:
        why = "in an HTML comment"
    elif struck:
        why = "struck out"
    elif any(elements):
        why = "in an HTML element that hides or styles it"
    elif any(hides for hides, _ in groups) or pending or declared_outside:
        why = "in markup that hides, moves, recolours or strikes it out"
    return HIDDEN.format(why) if why else None


def _negative_after(text: str, end: int) -> bool:
    """Whether the length after a spacing command (`{-1em}`, `-3mu`, `* {-2pt}`) is negative."""
    rest = text[end : end + 8].lstrip(" *{=")
    return rest.startswith("-")


def _snippet(text: str, position: int) -> str:
    return " ".join(text[position : position + 40].split())
