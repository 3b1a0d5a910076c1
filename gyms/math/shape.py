"""The answer-shape screen: is an extracted answer a value of the kind the answer key is?

math-verify is lenient on purpose: it reads the last value of `x=W \\lor x=G`, drops `\\approx`,
`\\neg` and `\\Rightarrow`, equates `50\\%` with both 0.5 and 50, and a one-element set with its
element. A reward maximiser finds each of these. So before math-verify sees an answer, this
screen reads it as LaTeX tokens (one linear pass, no regexes) and names its *features*: several
values, alternatives, ±, relations, negations, implications, ranges, percentages, ratios,
prose, unknown commands and unusual characters, and the marks that change what a number is
worth: a scale word (`5\\text{ thousand}`), a number base (`101_2`), a prime (`5'`, feet or
minutes). An answer may only have the features its key has (`0.0, 0.5909` allows several
values; `3 \\pm \\sqrt 2` allows ±), and a percentage must match a percentage. Units after the
value (`5 \\text{ cm}`, or a bare unit word from a finite list, `5 cm`: `_BARE_UNITS`; any other
bare word is variables, so `2mn` stays a product) must be the key's, where the key has units; the
checker reads none, so `value_of` strips them from both. Structural faults (unbalanced braces,
math delimiters or a box inside the answer, deep nesting) always fail. The screen is defence in
depth; math-verify still decides equality.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_DEPTH = 16  # nested groups, brackets and parentheses; real answers use a few
MAX_PROSE_WORDS = 3  # words in \text{...}: units ("5 square cm") pass, sentences do not
MAX_SUBSCRIPT_TOKENS = 8  # a number base is short (`_2`, `_{16}`); reading no further keeps the pass linear

# What each feature is called in the feedback ("Your final answer <phrase>").
SEVERAL, SET, ALTERNATIVES, PLUS_MINUS = "several", "set", "alternatives", "plus-minus"
RELATION, NEGATION, IMPLICATION, RANGE = "relation", "negation", "implication", "range"
PERCENT, RATIO, PROSE, EQUATION = "percent", "ratio", "prose", "equation"
WORD = "word"  # carries the word: "word:factorial"
# Marks that change what a number is worth; a scale and a base carry their text: "scale:thousand".
SCALE, BASE, PRIME = "scale", "base", "prime"
# In the order feedback names them: the most specific first (`between 3 and 5` is a range).
_PHRASES = {
    SCALE: "scales a number with “{}”",
    BASE: "writes a number in a base (`_{}`) other than the one the problem asks for",
    PRIME: "marks a number with a prime (feet, minutes), which the problem does not ask for",
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
    WORD: "has the word “{}”, which is not part of a value (only units from the grader's list are)",
    EQUATION: "is an equation other than `x = value`",
}
_ORDER = {feature: rank for rank, feature in enumerate(_PHRASES)}  # unknown commands and characters last
# Magnitudes and parts that scale the number before them: `5\text{ thousand}` is 5000, not 5.
_SCALE_WORDS = {
    "hundred", "thousand", "million", "billion", "trillion", "quadrillion", "lakh", "crore", "myriad", "grand",
    "dozen", "gross", "score", "half", "halve", "third", "quarter", "fourth", "fifth", "sixth", "seventh",
    "eighth", "ninth", "tenth", "hundredth", "thousandth", "millionth", "billionth", "squared", "cubed",
    "permille", "ppm", "ppb",
}  # fmt: skip
# Abbreviations that scale only as text (`5\text{k}`); bare, `k` or `mn` is a variable or a product.
_SCALE_MARKS = {"k", "K", "M", "B", "bn", "mn", "mln"}
# Units a bare word may name after a value (`5 cm`, `12 dollars`, `5 square cm^2`), compared lower
# case and singular (`_singular`) and then read as a `\text{...}` unit is. A finite list: any other
# bare word is variables, as LaTeX sets it, so `2mn`, `3xy` and `5t` keep their meaning. Left out
# on purpose: one-letter units (`5m` may be 5·m), two-letter ones that are common products or
# words (`mg`, `ms`, `hr`, `in`), counts (`apples`: a generic word is not read as a unit, since a
# word after a number can change its value, `5 factorial`, and a symbolic gold `3xyz` would lose
# its letters), and `cent`, a hundredth of the money a problem most often asks for.
_BARE_UNITS = {
    # length
    "mm", "cm", "km", "metre", "meter", "millimetre", "millimeter", "centimetre", "centimeter", "kilometre",
    "kilometer", "inch", "ft", "foot", "feet", "yard", "yd", "mile",
    # mass
    "kg", "gram", "kilogram", "milligram", "pound", "lb", "ounce", "oz", "ton", "tonne",
    # time
    "sec", "second", "min", "minute", "hour", "day", "week", "month", "year",
    # money
    "dollar", "euro", "yen", "yuan", "rupee",
    # angle
    "degree", "deg", "radian",
    # area and volume
    "unit", "acre", "hectare", "liter", "litre", "milliliter", "millilitre", "gallon",
    # speed
    "mph", "kph",
}  # fmt: skip
# Words that only qualify the unit word after them: `5 square cm`, `8 cubic units`, `5 sq ft`.
_UNIT_MODIFIERS = {"square", "sq", "cubic"}
# Words an answer may hold whatever its gold: units, their modifiers, and functions written
# without a backslash (`sqrt(2)`); words with a feature (`or`, `and`) are held to the gold's features. Any other word (in `\text{...}`, or bare and 3 letters or
# more: `2mn` stays a product) must be one of the gold's own, so no word is dropped unread:
# `3\text{ factorial}` and `3 apples` fail for 3, `\text{Monday}` passes for `\text{Monday}`.
_NEUTRAL_WORDS = _BARE_UNITS | _UNIT_MODIFIERS | {
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "log", "ln",
    "exp", "sqrt", "max", "min", "gcd", "lcm", "det", "pi",
}  # fmt: skip

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
# Between two numbers, these leave them side by side: math-verify drops them, then adds or joins
# the numbers (`1\text{ }2` and `1'2` are 12, `1\displaystyle 2` was 3). So does any \text{...} group.
_SEPARATORS_DROPPED = _TEXT_COMMANDS | {"'", "\\$", "\\displaystyle"}
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
    value: str  # the answer without its units: what the checker compares
    units: str = ""  # the units after the value, normalised ("cm ^2", "square unit"); "" for none
    words: frozenset[str] = frozenset()  # its words (in text groups, or bare of 3 letters or more), singular


def screen(answer: str, key: str) -> str | None:
    """Why `answer` is not a value of the key's kind (feedback), or None when it may be one."""
    shape, wanted = shape_of(answer), shape_of(key)
    if shape.problem is not None:
        return f"Your final answer {shape.problem}."
    if shape.depth > max(MAX_DEPTH, wanted.depth):
        return f"Your final answer nests more than {max(MAX_DEPTH, wanted.depth)} levels deep."
    if PERCENT in wanted.features and PERCENT not in shape.features:
        return "Your final answer is not a percentage, but the problem asks for one."
    extra = sorted(shape.features - _allowed(wanted.features), key=_feedback_order)
    if extra:
        return f"Your final answer {_phrase(extra[0])}; give one value, in the form the problem asks for."
    unread = sorted(shape.words - _NEUTRAL_WORDS - _WORD_FEATURES.keys() - wanted.words)
    if unread:
        return f"Your final answer {_phrase(f'{WORD}:{unread[0]}')}; give the value alone."
    if shape.units and wanted.units and shape.units != wanted.units:
        return (f"Your final answer is in “{shape.units}”, not in the unit the problem asks for; "
                "give the value in that unit, or the number alone.")  # fmt: skip
    return None


def value_of(latex: str) -> str:
    """What the checker compares: `latex` without the units after its value (`5 \\text{ cm}` is 5),
    which `screen` has already held to the key's."""
    return shape_of(latex).value


def _allowed(key_features: frozenset[str]) -> frozenset[str]:
    """What an answer may have, given its key's features."""
    allowed = set(key_features)
    if key_features & {SEVERAL, SET, PLUS_MINUS}:
        # A key with several values may be written as a list, a set, `x = 1 or x = 2`, or a ± pair.
        allowed |= {SEVERAL, SET, ALTERNATIVES, PLUS_MINUS}
    return frozenset(allowed)


def _feedback_order(feature: str) -> tuple[int, str]:
    return _ORDER.get(feature.partition(":")[0], len(_ORDER)), feature


def _phrase(feature: str) -> str:
    if feature.startswith("\\"):
        return f"uses `{feature}`, which the grader does not read here"
    if feature.startswith("U+"):
        return f"contains the character {feature}, which the grader does not read"
    kind, _, detail = feature.partition(":")
    return _PHRASES[kind].format(detail)


@functools.lru_cache(maxsize=4096)
def shape_of(latex: str) -> Shape:
    """The features of `latex`, its nesting depth, and any structural fault."""
    features: set[str] = set()
    depth = deepest = 0
    braces = 0
    text_group = -1  # brace depth of the \text{...} group we are in, or -1
    prose = 0
    element: list[str] = []
    words: set[str] = set()
    previous = ""
    after_number = False  # only dropped separators since the last number: `5 6`, `5\text{ }6`
    tokens = [(start, token) for start, token in _tokens(latex) if token not in _SPACING]
    for index, (_, token) in enumerate(tokens):
        fault = _structural_fault(token)
        if fault is not None:
            return Shape(frozenset(features), deepest, fault, latex)
        in_text = text_group > 0 or (token == "{" and previous in _TEXT_COMMANDS)  # its braces too
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
                return Shape(frozenset(features), deepest, "has a `}` that closes nothing", latex)
        feature = _feature(token, previous)
        if feature is not None:
            features.add(feature)
        features |= _value_marks(tokens, index, previous, in_text)
        if is_ascii_digit(token[0]):
            if after_number:
                features.add(SEVERAL)  # math-verify would add them up or join them
            after_number = True
        elif not in_text and token not in _SEPARATORS_DROPPED:
            after_number = False
        if in_text and token[0].isalpha() and len(token) > 1:
            prose += 1
        if is_ascii_letter(token[0]) and len(token) >= (2 if in_text else 3):
            words.add(_singular(token.lower()))
        if token in _ELEMENT_ENDS:
            features |= _equation_features(element)
            element = []
        else:
            element.append(token)
        previous = token
    if braces:
        return Shape(frozenset(features), deepest, "has a `{` that is never closed", latex)
    features |= _equation_features(element)
    if prose > MAX_PROSE_WORDS:
        features.add(PROSE)
    value_end, units = _units(tokens)
    value = latex[:value_end] if units is not None else latex
    return Shape(frozenset(features), deepest, None, value, units or "", frozenset(words))


def _value_marks(tokens: list[tuple[int, str]], index: int, previous: str, in_text: bool) -> set[str]:
    """Marks on a number that math-verify drops, though they change what it is worth."""
    token = tokens[index][1]
    if token == "_" and is_ascii_digit(previous[:1]):
        return {f"{BASE}:{_subscript(tokens, index + 1)}"}  # `101_2`: math-verify reads 101
    if token == "'" and (is_ascii_digit(previous[:1]) or previous in _CLOSERS):
        return {PRIME}  # `5'`: math-verify drops quotes
    if is_ascii_letter(token[0]) and (in_text or len(token) > 1):
        scale = _scale(token, in_text)
        return {f"{SCALE}:{scale}"} if scale else set()
    return set()


def _subscript(tokens: list[tuple[int, str]], start: int) -> str:
    """The subscript from tokens[start] on (`2`, `{16}`, `{(2)}`), read for a few tokens at most."""
    if start >= len(tokens):
        return ""
    if tokens[start][1] != "{":
        return tokens[start][1]
    inside = []
    for _, token in tokens[start + 1 : start + 1 + MAX_SUBSCRIPT_TOKENS]:
        if token == "}":
            break
        inside.append(token)
    return "".join(t for t in inside if t not in ("(", ")"))


def _scale(word: str, in_text: bool) -> str | None:
    if in_text and word in _SCALE_MARKS:
        return word
    singular = _singular(word.lower())
    return singular if singular in _SCALE_WORDS else None


def _singular(word: str) -> str:
    """`inches` is `inch`, `units` is `unit`: a unit is the same unit in either number."""
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        return word[:-1]
    return word


def _units(tokens: list[tuple[int, str]]) -> tuple[int, str | None]:
    """Where the value ends, and its units, normalised: what ends the answer after a value, each
    a `\\text{...}` group of words (`5 \\text{ square cm}`, `5\\,\\mathrm{cm}^2`) or bare unit words
    (`_BARE_UNITS`: `5 cm`, `12 dollars`, `5 cm^2`). None: no units. Bare words need a value before
    them, a number, a closing bracket or `\\pi` (`cm` alone, `x cm` stay variables)."""
    end, groups, bare = len(tokens), [], False
    while True:
        group = _unit_group_before(tokens, end)
        if group is None:
            group = _bare_unit_group_before(tokens, end)
            bare = bare or group is not None
        if group is None:
            break
        end, words = group
        groups.append(" ".join(words))
    if end in (0, len(tokens)):
        return 0, None  # no units, or only text: `\text{(C)}` is the value itself
    start, token = tokens[end - 1]
    if bare and not (is_ascii_digit(token[0]) or token in (")", "]", "}", "\\pi")):
        return 0, None
    return start + len(token), " ".join(g for g in reversed(groups) if g)


def _power_before(tokens: list[tuple[int, str]], end: int) -> tuple[int, list[str]]:
    """The power of a unit that ends at tokens[end] (`^2`, `^{2}`), if any: where it starts, and it."""
    texts = [token for _, token in tokens[max(0, end - 4) : end]]
    if texts[-2:-1] == ["^"] and is_ascii_digit(texts[-1][:1]):
        return end - 2, [f"^{texts[-1]}"]
    if len(texts) == 4 and texts[0] == "^" and texts[1] == "{" and is_ascii_digit(texts[2][:1]) and texts[3] == "}":
        return end - 4, [f"^{texts[2]}"]
    return end, []


def _unit_group_before(tokens: list[tuple[int, str]], end: int) -> tuple[int, list[str]] | None:
    """The `\\text{words}` group (and its power: `^2`, `^{2}`) that ends at tokens[end], if any:
    where it starts, and its words."""
    end, power = _power_before(tokens, end)
    if end < 3 or tokens[end - 1][1] != "}":
        return None
    start = end - 1
    while start > 0 and (is_ascii_letter(tokens[start - 1][1][0]) or tokens[start - 1][1] in (".", "/", "-")):
        start -= 1
    if start < 2 or tokens[start - 1][1] != "{" or tokens[start - 2][1] not in _TEXT_COMMANDS:
        return None
    words = [_singular(t.lower()) if t[0].isalpha() else t for _, t in tokens[start : end - 1] if t != "."]
    return start - 2, words + power


def is_unit_word(word: str) -> bool:
    """Whether a bare word names a unit (`cm`, `Dollars`, `inches`) rather than variables."""
    return is_ascii_letter(word[:1]) and _singular(word.lower()) in _BARE_UNITS


def is_scale_word(word: str) -> bool:
    """Whether a word scales the number before it (`thousand`, `Dozens`, `squared`)."""
    return _singular(word.lower()) in _SCALE_WORDS


def _bare_unit_group_before(tokens: list[tuple[int, str]], end: int) -> tuple[int, list[str]] | None:
    """The bare unit word (with the modifiers before it and its power: `square cm^2`, `sq ft`) that
    ends at tokens[end], if any: where it starts, and its words."""
    end, power = _power_before(tokens, end)
    if end < 1 or not is_unit_word(tokens[end - 1][1]):
        return None
    start = end - 1
    while start > 0 and tokens[start - 1][1].lower() in _UNIT_MODIFIERS:
        start -= 1
    return start, [_singular(t.lower()) for _, t in tokens[start:end]] + power


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


def _tokens(latex: str) -> Iterator[tuple[int, str]]:
    """LaTeX tokens and where they start: `\\name`, `\\` + one character, an ASCII word, a
    number, or one character.

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
            end = run_of(latex, i, is_ascii_letter)
        elif char.isascii() and char.isdigit():
            end = _number_end(latex, i)
        else:
            end = i + 1
        yield i, latex[i:end]
        i = end


def run_of(text: str, start: int, accepts: Callable[[str], bool]) -> int:
    """Where the run of characters `accepts` takes, from `start`, ends."""
    end = start
    while end < len(text) and accepts(text[end]):
        end += 1
    return end


def is_ascii_letter(char: str) -> bool:
    return char.isascii() and char.isalpha()


def is_ascii_digit(char: str) -> bool:
    return char.isascii() and char.isdigit()


def _number_end(text: str, start: int) -> int:
    """Where the digits starting at `start` end, taking in `,ddd` thousands groups after 1–3 digits."""
    end = run_of(text, start, is_ascii_digit)
    if end - start > 3:
        return end
    while (
        text[end : end + 1] == ","
        and len(text[end + 1 : end + 4]) == 3
        and all(is_ascii_digit(c) for c in text[end + 1 : end + 4])
        and not is_ascii_digit(text[end + 4 : end + 5] or "x")
    ):
        end += 4
    return end
