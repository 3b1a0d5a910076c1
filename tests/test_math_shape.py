"""The answer-shape screen: an answer may only have the features its key has."""

from __future__ import annotations

import pytest

from gyms.math.shape import MAX_DEPTH, shape_of, screen


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
