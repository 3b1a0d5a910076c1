"""The answer-shape screen: is an extracted answer a value of the kind the answer key is?

math-verify is lenient on purpose: it reads the last value of `x=W \\lor x=G`, drops `\\approx`,
`\\neg` and `\\Rightarrow`, equates `50\\%` with both 0.5 and 50, and a one-element set with its
element. A reward maximiser finds each of these. So before math-verify sees an answer, this
screen reads it as LaTeX tokens (one linear pass, no regexes) and names its *features*: several
values, alternatives, ±, relations, negations, implications, ranges, percentages, ratios,
prose, unknown commands and unusual characters. An answer may only have the features its key
has (`0.0, 0.5909` allows several values; `3 \\pm \\sqrt 2` allows ±), and a percentage must
match a percentage. Structural faults (unbalanced braces, math delimiters or a box inside the
answer, deep nesting) always fail. The screen is defence in depth; math-verify still decides
equality.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_DEPTH = 16  # nested groups, brackets and parentheses; real answers use a few
MAX_PROSE_WORDS = 3  # words in \text{...}: units ("5 square cm") pass, sentences do not

# What each feature is called in the feedback ("Your final answer <phrase>").
SEVERAL, SET, ALTERNATIVES, PLUS_MINUS = "several", "set", "alternatives", "plus-minus"
RELATION, NEGATION, IMPLICATION, RANGE = "relation", "negation", "implication", "range"
PERCENT, RATIO, PROSE, EQUATION = "percent", "ratio", "prose", "equation"
# In the order feedback names them: the most specific first (`between 3 and 5` is a range).
_PHRASES = {
    ALTERNATIVES: "offers alternatives",
    PLUS_MINUS: "gives two values with ±",
    RELATION: "is a relation or an approximation, not a value",
    NEGATION: "is a negation",
    IMPLICATION: "is an implication",
    RANGE: "is a range",
    PERCENT: "is a percentage",
    RATIO: "is a ratio",
    SET: "is a set",
    SEVERAL: "gives several values",
    PROSE: "is prose, not a value",
    EQUATION: "is an equation other than `x = value`",
}
_ORDER = {feature: rank for rank, feature in enumerate(_PHRASES)}  # unknown commands and characters last

_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota",
    "kappa", "lambda", "mu", "nu", "xi", "rho", "varrho", "sigma", "varsigma", "tau", "upsilon", "phi",
    "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Upsilon", "Phi",
    "Psi", "Omega",
}  # fmt: skip
# Commands that write one value (`\pi` is a value too); anything else needs the key to use it.
_VALUE_COMMANDS = _GREEK | {
    "pi", "infty", "frac", "dfrac", "tfrac", "cfrac", "sqrt", "cdot", "times", "div", "binom", "dbinom",
    "tbinom", "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "log", "ln", "lg", "exp", "max", "min", "gcd", "lcm", "det", "left", "right", "big", "Big", "bigg", "Bigg",
    "bigl", "bigr", "Bigl", "Bigr", "text", "textbf", "textit", "textrm", "mathrm", "mathbf", "mathit",
    "operatorname", "mbox", "displaystyle", "circ", "degree", "prime", "overline", "bar", "hat", "vec",
    "lfloor", "rfloor", "lceil", "rceil", "vert", "lvert", "rvert", "\\$", "\\|",
}
# Spacing between tokens: skipped, so that `5 \quad 6` is two numbers in a row.
_SPACING = {"\\,", "\\;", "\\:", "\\!", "\\ ", "\\quad", "\\qquad", "~"}  # fmt: skip
_COMMAND_FEATURES = {
    **dict.fromkeys(["lor", "vee", "bigvee", "curlyvee", "cup", "bigcup", "sqcup", "uplus"], ALTERNATIVES),
    **dict.fromkeys(["land", "wedge", "bigwedge", "cap", "bigcap", "\\&", "\\\\", "begin", "end", "newline",
                     "setminus"], SEVERAL),  # fmt: skip
    **dict.fromkeys(["\\{", "\\}", "lbrace", "rbrace", "emptyset", "varnothing", "mathbb"], SET),
    **dict.fromkeys(["pm", "mp"], PLUS_MINUS),
    **dict.fromkeys(["lt", "gt", "le", "leq", "leqq", "leqslant", "ge", "geq", "geqq", "geqslant", "ne", "neq",
                     "approx", "sim", "simeq", "cong", "equiv", "propto", "ll", "gg", "prec", "succ", "in",
                     "notin", "ni", "subset", "subseteq", "supset", "supseteq", "lesssim", "gtrsim",
                     "coloneqq", "doteq"], RELATION),  # fmt: skip
    **dict.fromkeys(["neg", "lnot", "not", "nexists"], NEGATION),
    **dict.fromkeys(["Rightarrow", "rightarrow", "to", "implies", "impliedby", "iff", "Leftrightarrow",
                     "leftrightarrow", "Longrightarrow", "longrightarrow", "Longleftrightarrow", "Leftarrow",
                     "leftarrow", "gets", "mapsto", "longmapsto", "therefore", "because"], IMPLICATION),
    **dict.fromkeys(["dots", "ldots", "cdots", "dotsc", "dotsb", "vdots"], RANGE),
    **dict.fromkeys(["%", "\\%", "percent"], PERCENT),
}  # fmt: skip
_WORD_FEATURES = {
    **dict.fromkeys(["or", "either", "maybe", "perhaps", "possibly", "probably", "likely", "unsure"], ALTERNATIVES),
    **dict.fromkeys(["and", "both", "all", "each"], SEVERAL),
    **dict.fromkeys(["approximately", "approx", "about", "around", "roughly", "nearly", "almost", "least",
                     "most", "than", "less", "more", "greater", "fewer", "over", "under", "above", "below",
                     "exceeds", "exactly", "equals"], RELATION),  # fmt: skip
    **dict.fromkeys(["not", "no", "none", "never", "isnt", "cannot"], NEGATION),
    **dict.fromkeys(["implies", "then", "hence", "thus", "therefore", "so", "if", "iff"], IMPLICATION),
    **dict.fromkeys(["between", "to", "from", "through", "until", "till"], RANGE),
    **dict.fromkeys(["percent", "percentage", "pct", "per"], PERCENT),
}  # fmt: skip
_CHAR_FEATURES = {
    ",": SEVERAL, ";": SEVERAL, "&": SEVERAL, "<": RELATION, ">": RELATION, "%": PERCENT, ":": RATIO,
    "∨": ALTERNATIVES, "∪": ALTERNATIVES, "∧": SEVERAL, "∩": SEVERAL, "±": PLUS_MINUS, "∓": PLUS_MINUS,
    "≤": RELATION, "≥": RELATION, "≠": RELATION, "≈": RELATION, "≅": RELATION, "≡": RELATION, "∼": RELATION,
    "∈": RELATION, "∉": RELATION, "⊂": RELATION, "⊆": RELATION, "⩽": RELATION, "⩾": RELATION, "¬": NEGATION,
    "⇒": IMPLICATION, "→": IMPLICATION, "⇔": IMPLICATION, "↔": IMPLICATION, "⟹": IMPLICATION, "∴": IMPLICATION,
    "…": RANGE, "–": RANGE, "—": RANGE, "％": PERCENT, "‰": PERCENT,
}  # fmt: skip
# Characters math-verify reads as a value or an operator; other non-ASCII ones need the key.
_PLAIN_CHARS = frozenset("0123456789+-*/^_()[]{}.!'|=" "πק−")
_TEXT_COMMANDS = {"\\text", "\\textbf", "\\textit", "\\textrm", "\\mathrm", "\\mbox", "\\operatorname"}
_OPENERS, _CLOSERS = {"{", "(", "[", "\\{"}, {"}", ")", "]", "\\}"}
# Tokens that only group: `\text{x} = 5` names x.
_GROUPING = _TEXT_COMMANDS | {"{", "}", "\\left", "\\right"}
# Where one element of a list ends: the `=` rule applies to each element on its own.
_ELEMENT_ENDS = {",", ";", "\\lor", "\\vee", "or", "and", "\\\\", "&", "\\land", "\\wedge"}


@dataclass(frozen=True)
class Shape:
    features: frozenset[str]
    depth: int
    problem: str | None  # a structural fault: always fails


def screen(answer: str, key: str) -> str | None:
    """Why `answer` is not a value of the key's kind (feedback), or None when it may be one."""
    shape, wanted = shape_of(answer), shape_of(key)
    if shape.problem is not None:
        return f"Your final answer {shape.problem}."
    if shape.depth > max(MAX_DEPTH, wanted.depth):
        return f"Your final answer nests more than {max(MAX_DEPTH, wanted.depth)} levels deep."
    if PERCENT in wanted.features and PERCENT not in shape.features:
        return "Your final answer is not a percentage, but the problem asks for one."
    extra = sorted(shape.features - _allowed(wanted.features), key=lambda f: (_ORDER.get(f, len(_ORDER)), f))
    if not extra:
        return None
    return f"Your final answer {_phrase(extra[0])}; give one value, in the form the problem asks for."


def _allowed(key_features: frozenset[str]) -> frozenset[str]:
    """What an answer may have, given its key's features."""
    allowed = set(key_features)
    if key_features & {SEVERAL, SET, PLUS_MINUS}:
        # A key with several values may be written as a list, a set, `x = 1 or x = 2`, or a ± pair.
        allowed |= {SEVERAL, SET, ALTERNATIVES, PLUS_MINUS}
    return frozenset(allowed)


def _phrase(feature: str) -> str:
    if feature.startswith("\\"):
        return f"uses `{feature}`, which the grader does not read here"
    if feature.startswith("U+"):
        return f"contains the character {feature}, which the grader does not read"
    return _PHRASES[feature]


@functools.lru_cache(maxsize=4096)
def shape_of(latex: str) -> Shape:
    """The features of `latex`, its nesting depth, and any structural fault."""
    features: set[str] = set()
    depth = deepest = 0
    braces = 0
    text_group = -1  # brace depth of the \text{...} group we are in, or -1
    prose = 0
    element: list[str] = []
    previous = ""
    for token in _tokens(latex):
        if token in _SPACING:
            continue
        fault = _structural_fault(token)
        if fault is not None:
            return Shape(frozenset(features), deepest, fault)
        if token in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif token in _CLOSERS:
            depth -= 1
        if token == "{":
            braces += 1
            if previous in _TEXT_COMMANDS and text_group < 0:
                text_group = braces
        elif token == "}":
            if braces == text_group:
                text_group = -1
            braces -= 1
            if braces < 0:
                return Shape(frozenset(features), deepest, "has a `}` that closes nothing")
        feature = _feature(token, previous)
        if feature is not None:
            features.add(feature)
        if _is_digit(token[0]) and _is_digit(previous[:1]):
            features.add(SEVERAL)  # `5 6`: math-verify would add them up
        if text_group > 0 and token[0].isalpha() and len(token) > 1:
            prose += 1
        if token in _ELEMENT_ENDS:
            features |= _equation_features(element)
            element = []
        else:
            element.append(token)
        previous = token
    if braces:
        return Shape(frozenset(features), deepest, "has a `{` that is never closed")
    features |= _equation_features(element)
    if prose > MAX_PROSE_WORDS:
        features.add(PROSE)
    return Shape(frozenset(features), deepest, None)


def _structural_fault(token: str) -> str | None:
    if token in ("$", "\\(", "\\)", "\\[", "\\]"):
        return "has math delimiters inside it"
    if token in ("\\boxed", "\\fbox"):
        return "has a box inside the box"
    return None


def _feature(token: str, previous: str) -> str | None:
    """The feature one token adds, if any."""
    if token.startswith("\\") and len(token) > 1:
        name = token[1:] if token[1:].isalpha() else token
        if name in _COMMAND_FEATURES:
            return _COMMAND_FEATURES[name]
        return None if name in _VALUE_COMMANDS else token
    if token[0].isascii() and token[0].isalpha():
        return _WORD_FEATURES.get(token.lower())
    if token == "." and previous == ".":
        return RANGE  # `3..5`, `1, 2, ...`
    if len(token) == 1 and token not in _PLAIN_CHARS:
        return _CHAR_FEATURES.get(token, f"U+{ord(token):04X}")
    return None


def _equation_features(element: list[str]) -> set[str]:
    """`x = 5` is a value named; a chain `x = y = 5` or `2 + 3 = 5` is not."""
    equals = element.count("=")
    if equals == 0:
        return set()
    lhs = [t for t in element[: element.index("=")] if t not in _GROUPING]
    if equals > 1 or not _is_name(lhs):
        return {EQUATION}
    return set()


def _is_name(tokens: list[str]) -> bool:
    """`x`, `x_1`, `x_{n}`, `x'`, `\\alpha`, `f(x)`: a letter, then only subscripts and primes."""
    if not tokens:
        return False
    first = tokens[0]
    if not _is_letter(first) and not (first.startswith("\\") and first[1:] in _GREEK):
        return False
    return all(t in ("_", "'", "{", "}", "(", ")") or _is_letter(t) or t.isdigit() for t in tokens[1:])


def _is_letter(token: str) -> bool:
    return len(token) == 1 and token.isascii() and token.isalpha()


def _tokens(latex: str) -> Iterator[str]:
    """LaTeX tokens: `\\name`, `\\` + one character, an ASCII word, a number, or one character.

    A number keeps its thousands separators (`1,000,000`), which math-verify reads as one value.
    Whitespace separates tokens and is dropped. Each character is looked at a bounded number of times.
    """
    i, n = 0, len(latex)
    while i < n:
        char = latex[i]
        if char.isspace() and char.isascii():
            i += 1
            continue
        if char == "\\":
            j = i + 1
            while j < n and latex[j].isascii() and latex[j].isalpha():
                j += 1
            end = j if j > i + 1 else min(i + 2, n)
        elif char.isascii() and char.isalpha():
            end = _run(latex, i, _is_ascii_letter)
        elif char.isascii() and char.isdigit():
            end = _number_end(latex, i)
        else:
            end = i + 1
        yield latex[i:end]
        i = end


def _run(text: str, start: int, accepts: Callable[[str], bool]) -> int:
    end = start
    while end < len(text) and accepts(text[end]):
        end += 1
    return end


def _is_ascii_letter(char: str) -> bool:
    return char.isascii() and char.isalpha()


def _is_digit(char: str) -> bool:
    return char.isascii() and char.isdigit()


def _number_end(text: str, start: int) -> int:
    """Where the digits starting at `start` end, taking in `,ddd` thousands groups after 1–3 digits."""
    end = _run(text, start, _is_digit)
    if end - start > 3:
        return end
    while (
        text[end : end + 1] == ","
        and len(text[end + 1 : end + 4]) == 3
        and all(_is_digit(c) for c in text[end + 1 : end + 4])
        and not _is_digit(text[end + 4 : end + 5] or "x")
    ):
        end += 4
    return end
