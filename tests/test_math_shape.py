"""The answer-shape screen: an answer may only have the features its key has."""

from __future__ import annotations

import pytest

from gyms.math.shape import MAX_DEPTH, shape_of, screen, value_of


@pytest.mark.parametrize(
    ("answer", "key"),
    [
        ("5", "5"),
        ("x = 5", "5"),  # one variable named with one value is not a hedge
        ("x_{1} = 5", "5"),
        ("\\alpha = 5", "5"),
        ("f(x) = 5", "5"),
        ("\\text{x} = 5", "5"),
        ("1,000,000", "1000000"),  # thousands separators: one number
        ("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt 3}{2}"),
        ("\\dfrac{84}{2}", "42"),
        ("5 \\text{ square cm}", "5"),
        ("5^\\circ", "5"),
        ("\\$5", "5"),
        ("2\\pi", "2\\pi"),
        ("2π", "2\\pi"),
        ("−5", "-5"),
        ("x^{3} - 2x", "x**3 - 2*x"),
        ("\\left(\\frac{1}{2}\\right)^{2}", "\\frac{1}{4}"),
        ("50\\%", "50\\%"),
        # a key with several values may be written as a list, a set, alternatives or a ± pair
        ("0, 0.5909", "0.0, 0.5909"),
        ("\\{0.5909, 0\\}", "0.0, 0.5909"),
        ("x = 0 \\text{ or } x = 0.5909", "0.0, 0.5909"),
        ("3+\\sqrt{2}, 3-\\sqrt{2}", "3 \\pm \\sqrt{2}"),
        ("3 \\pm \\sqrt 2", "3 \\pm \\sqrt{2}"),
        ("(-\\infty, 5)", "(-\\infty, 5)"),
        ("x < 5", "x < 5"),  # a key that is a relation allows one
        ("\\mathbb{R}", "\\mathbb{R}"),
        # units: any on a key without units (they cannot be checked), the key's own where it has some
        ("5 \\text{ centimetres}", "5"),
        ("5\\text{ cm}", "5\\text{ cm}"),
        ("5", "5\\text{ cm}"),
        ("10\\text{ inch}", "10\\text{ inches}"),
        ("5\\,\\mathrm{cm}^2", "5\\text{ cm}^{2}"),
        # bare unit words are units as in \\text{}: any on a key without units, the key's own where it has some
        ("5 cm", "5"),
        ("5cm", "5"),
        ("5 cm", "5\\text{ cm}"),
        ("5 Centimeters", "5"),
        ("10 inches", "10\\text{ inch}"),
        ("12 dollars", "12"),
        ("5 square cm^2", "5"),
        ("5 cm^{2}", "5\\text{ cm}^{2}"),
        ("5 sq ft", "5"),
        ("2\\pi cm", "2\\pi"),
        ("5\\ \\mathrm{cm}", "5"),
        ("12 \\text{ dollars}", "12"),
        # marks that change a number pass where the key has the same one
        ("5\\text{ thousand}", "5\\text{ thousand}"),
        ("4210_5", "4210_{5}"),
        ("4210_{(5)}", "4210_{5}"),
        ("4210", "4210_{5}"),
        ("5'", "5'"),
        # juxtapositions the checker reads as products, and a mixed number
        ("2(31)", "62"),
        ("2\\sqrt{3}", "2\\sqrt{3}"),
        ("2\\frac{1}{2}", "\\frac{5}{2}"),
        ("2mn", "2mn"),  # bare letters are variables, even `mn`
        ("5k", "5k"),
        ("f'(2)", "3"),  # a prime on a name is not a unit
    ],
)
def test_values_of_the_keys_kind_pass(answer: str, key: str) -> None:
    assert screen(answer, key) is None


@pytest.mark.parametrize(
    ("answer", "key", "phrase"),
    [
        ("x=5 \\lor x=6", "5", "alternatives"),
        ("6 \\vee 5", "5", "alternatives"),
        ("6 ∨ 5", "5", "alternatives"),
        ("5 \\text{ or } 6", "5", "alternatives"),
        ("\\text{maybe } 5", "5", "alternatives"),
        ("5 \\cup 6", "5", "alternatives"),
        ("5, 6", "5", "several values"),
        ("5; 6", "5", "several values"),
        ("5 \\text{ and } 6", "5", "several values"),
        ("6 \\\\ 5", "5", "several values"),
        ("6 \\land 5", "5", "several values"),
        ("6 & 5", "5", "several values"),
        ("5 \\quad 6", "11", "several values"),  # math-verify would add them up
        ("1000,000", "1000000", "several values"),  # not thousands groups
        ("\\{5\\}", "5", "a set"),
        ("[5, 5]", "5", "several values"),
        ("5 \\pm 1", "5", "±"),
        ("\\mp 5", "5", "±"),
        ("x < 5", "5", "relation"),
        ("x \\le 5", "5", "relation"),
        ("x \\geq 5", "5", "relation"),
        ("x \\ne 5", "5", "relation"),
        ("\\approx 5", "5", "relation"),
        ("\\text{about } 5", "5", "relation"),
        ("x \\in \\{5\\}", "5", "relation"),
        ("5 ≤ x", "5", "relation"),
        ("\\neg 5", "5", "negation"),
        ("x \\not= 5", "5", "negation"),
        ("\\text{not } 6", "5", "negation"),
        ("x \\Rightarrow 5", "5", "implication"),
        ("x=3 \\implies 5", "5", "implication"),
        ("x \\to 5", "5", "implication"),
        ("\\therefore 5", "5", "implication"),
        ("\\text{between 3 and 5}", "4", "range"),
        ("3 \\text{ to } 5", "4", "range"),
        ("3 \\ldots 5", "4", "range"),
        ("3..5", "4", "range"),
        ("3–5", "4", "range"),
        ("50\\%", "0.5", "percentage"),
        ("50\\%", "50", "percentage"),  # a percentage never silently equals a plain number
        ("50 \\text{ percent}", "50", "percentage"),
        ("3:4", "0.75", "ratio"),
        ("2 + 3 = 5", "5", "equation"),
        ("x = y = 5", "5", "equation"),
        ("5 = x", "5", "equation"),
        ("\\text{the grader says this is correct}", "5", "prose"),
        ("\\phantom{6}5", "5", "\\phantom"),  # commands the grader may drop are not read
        ("\\hspace{1cm}5", "5", "\\hspace"),
        ("٥", "5", "U+0665"),
        ("5\u200b", "5", "U+200B"),
        ("6\u202e5", "5", "U+202E"),
        ("５", "5", "U+FF15"),
    ],
)
def test_hedges_and_non_values_fail(answer: str, key: str, phrase: str) -> None:
    problem = screen(answer, key)
    assert problem is not None and phrase in problem, problem
    assert problem.startswith("Your final answer")


@pytest.mark.parametrize(
    ("answer", "key", "phrase"),
    [
        # math-verify dropped the text; the scale it names changes the value
        ("5\\text{ thousand}", "5", "“thousand”"),
        ("5\\,\\mathrm{millions}", "5", "“million”"),
        ("5 thousand", "5", "“thousand”"),  # bare, math-verify reads t*h*o*u*s*a*n*d: refused with a reason
        ("5\\text{K}", "5", "“K”"),
        ("5\\text{ dozen}", "5\\text{ cm}", "“dozen”"),
        ("3 \\text{ halves}", "3", "“halve”"),
        ("7\\text{ hundredths}", "7", "“hundredth”"),
        ("5\\text{ squared}", "5", "“squared”"),
        # math-verify drops a subscript after a number
        ("101_2", "101", "base (`_2`)"),
        ("101_{(2)}", "101", "base (`_2`)"),
        ("4210_{6}", "4210_{5}", "base (`_6`)"),
        # math-verify drops quotes
        ("5'", "5", "prime"),
        ("(5)''", "5", "prime"),
        # separators math-verify drops, leaving two numbers side by side
        ("1\\text{ }2", "12", "several values"),
        ("1\\text{}2", "12", "several values"),
        ("1\\mbox{ }2", "12", "several values"),
        ("1\\mathrm{th}2", "12", "several values"),
        ("1\\$2", "12", "several values"),
        ("1\\displaystyle 2", "12", "several values"),
        ("1\\text{2}", "12", "several values"),
        ("1''2", "12", "prime"),
        # units other than the key's
        ("5\\text{ mm}", "5\\text{ cm}", "unit the problem asks for"),
        ("5\\text{ cm}^3", "5\\text{ cm}^{2}", "unit the problem asks for"),
        ("5 mm", "5\\text{ cm}", "unit the problem asks for"),
        ("5 cm^3", "5 cm^2", "unit the problem asks for"),
        ("5 kg", "5\\text{ cm}", "unit the problem asks for"),
        # a scale word is never a unit, bare or not, and stops the units before it
        ("5 thousand", "5", "“thousand”"),
        ("5 thousand dollars", "5", "“thousand”"),
        ("5 dozen", "5 cm", "“dozen”"),
    ],
)
def test_marks_that_change_a_number_fail(answer: str, key: str, phrase: str) -> None:
    problem = screen(answer, key)
    assert problem is not None and phrase in problem, problem
    assert problem.startswith("Your final answer")


@pytest.mark.parametrize(
    ("latex", "value"),
    [
        ("5 \\text{ square cm}", "5"),
        ("5\\,\\mathrm{cm}^{2}", "5"),
        ("\\frac{1}{2}\\text{ cup}", "\\frac{1}{2}"),
        ("5\\text{ }", "5"),
        # text that is not a unit after the value stays, for math-verify to read as a symbol
        ("5\\text{ cm} + 3\\text{ cm}", "5\\text{ cm} + 3"),
        ("5\\text{e3}", "5\\text{e3}"),
        ("\\text{x} = 5", "\\text{x} = 5"),
        ("\\text{(C)}", "\\text{(C)}"),
        ("\\text{Evelyn}", "\\text{Evelyn}"),
        ("4210_{5}", "4210_{5}"),
        ("x^{2}", "x^{2}"),
        # bare unit words after a value (a number, a closing bracket, \\pi) are units too
        ("5 cm", "5"),
        ("5cm", "5"),
        ("12 Dollars", "12"),
        ("5 square cm^{2}", "5"),
        ("\\frac{1}{2} hours", "\\frac{1}{2}"),
        ("x = 5 cm", "x = 5"),
        # any other bare word is variables, as LaTeX sets it: the value keeps it
        ("2mn", "2mn"),
        ("3xy", "3xy"),
        ("5t", "5t"),
        ("5m", "5m"),  # one-letter units are not read: a symbolic gold `5m` is 5·m
        ("62 cents", "62 cents"),
        ("5 apples", "5 apples"),  # counts are not units
        ("5 thousand", "5 thousand"),
        ("cm", "cm"),  # no value before it
        ("x cm", "x cm"),
    ],
)
def test_the_checker_gets_the_value_without_its_units(latex: str, value: str) -> None:
    assert value_of(latex) == value


def test_a_percentage_key_wants_a_percentage() -> None:
    assert screen("50\\%", "50\\%") is None
    for answer in ("50", "0.5"):
        problem = screen(answer, "50\\%")
        assert problem is not None and "asks for one" in problem


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        ("5}$ $\\boxed{6", "closes nothing"),  # would break out of the checker's own \boxed{...}
        ("\\frac{1}{", "never closed"),
        ("5$ or $6", "delimiters"),
        ("\\(5\\)", "delimiters"),
        ("1 + \\boxed{5}", "box inside"),
    ],
)
def test_structural_faults_always_fail(answer: str, phrase: str) -> None:
    problem = screen(answer, answer)  # whatever the key allows
    assert problem is not None and phrase in problem, problem


def test_deep_nesting_fails_unless_the_key_nests_as_deep() -> None:
    deep = "(" * (MAX_DEPTH + 1) + "5" + ")" * (MAX_DEPTH + 1)
    problem = screen(deep, "5")
    assert problem is not None and "levels deep" in problem
    assert screen(deep, deep) is None


def test_the_screen_is_linear_on_long_input() -> None:
    # 100 000 tokens of every kind: one pass, no backtracking, no recursion.
    text = "\\frac{1,000}{x_1} \\lor \\text{or} 3..5 é " * 2_500
    shape = shape_of(text)
    assert {"alternatives", "range", "U+00E9"} <= shape.features


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "text",
    [
        "1_{" * 30_000,  # every subscript is read a few tokens deep at most
        "5\\text{ cm}" * 10_000,  # units are found from the end, each group once
        "\\text{a}" * 12_000,
        "1'\\text{ }" * 12_000,
        "5 cm" * 12_000,  # bare unit words too
        "5 square" + " square" * 30_000 + " cm",
    ],
)
def test_value_marks_and_units_are_found_in_linear_time(text: str) -> None:
    shape_of(text)  # ~0.5 s; a scan that restarts per subscript or unit group needs minutes
