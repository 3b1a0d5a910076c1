"""Answer extraction: what counts as the final answers of a reply, and that finding them is linear.

The linearity tests use inputs on which the previous, regex-based extractor was quadratic
(`answer: x` + 60 000 spaces + `y` took ~8 s on the project machine, 400 KB ~6 min): under the
pytest timeout they fail for a quadratic extractor and pass for a linear one with a wide margin.
No wall clock is asserted.
"""

from __future__ import annotations

import pytest

from gyms.conformance import GARBAGE_ACTIONS
from gyms.math import contract
from gyms.math.extract import MAX_BRACE_DEPTH, TOO_DEEP, Extracted, extract_answers


@pytest.mark.parametrize(
    ("text", "answers"),
    [
        ("so the result is \\boxed{42}.", ("42",)),
        ("\\boxed{\\frac{1}{2}}", ("\\frac{1}{2}",)),
        ("first \\boxed{1}, then finally \\boxed{2}", ("1", "2")),  # every box counts
        ("\\boxed{2} so again \\boxed{ 2 }", ("2",)),  # the same answer twice is one answer
        ("\\boxed{42} or \\boxed{\\frac{84}{2}}", ("42", "\\frac{84}{2}")),
        ("\\fbox{7}", ("7",)),
        ("\\boxed {x^{2} + 1}", ("x^{2} + 1",)),
        ("\\boxed{\\{1, 2\\}}", ("\\{1, 2\\}",)),
        ("\\boxed{$3$}", ("3",)),
        ("\\boxed{\\boxed{5}}", ("5",)),  # a redundant box is unwrapped
        ("\\boxed{1 + \\boxed{5}}", ("1 + \\boxed{5}",)),  # ...any other stays, for the screen to refuse
        ("\\boxed{}\\boxed{3}", ("3",)),  # an empty box carries no value
        ("\\boxed{3}\nAnswer: 4", ("3", "4")),  # a box and an answer line are both final answers
        ("Work...\nAnswer: 42", ("42",)),
        ("**Answer:** 42", ("42",)),
        ("**Answer: 42**", ("42",)),
        ("> Final   Answer : $x+1$", ("x+1",)),
        ("answer: $x+1$", ("x+1",)),
        ("Final answer: 7.", ("7",)),
        ("Answer: 3\nno wait\nANSWER: 5", ("3", "5")),
        ("Answer: \\(5\\)", ("5",)),
        ("Answer: $1$ and $2$", ("$1$ and $2$",)),  # not one delimited expression: kept whole
        # boxes and answer lines are all final answers, in the order written
        ("Answer: 4\nso \\boxed{3}", ("4", "3")),
        ("\\boxed{42}\n**Final Answer:** $42$", ("42",)),
        ("Answer: \\boxed{42}", ("42",)),  # a line whose answer is a box counts once, as its box
        ("Answer: the value $\\boxed{42}$", ("42",)),
        ("\\boxed{\nAnswer: 5\n}", ("Answer: 5",)),  # a line inside a box is part of the box
        ("**Final Answer:**\n\\boxed{42}", ("42",)),  # an empty answer line states nothing
        ("\\[\n\\boxed{42}\n\\]\n", ("42",)),
        # the reasoning is not the reply: a box inside <think> is no final answer
        ("<think>\\boxed{41}?</think>\nThe answer is \\boxed{42}.", ("42",)),
        ("\\boxed{41}, I think.</think>The answer is \\boxed{42}.", ("42",)),  # the template opened it
        # digits whose NFKC form is ASCII are those digits; a superscript stays a power
        ("\\boxed{\uff14\uff12}", ("42",)),
        ("\\boxed{\U0001d7d2}", ("4",)),
        ("\\boxed{x\u00b2}", ("x\u00b2",)),
    ],
)
def test_extracts_every_final_answer(text: str, answers: tuple[str, ...]) -> None:
    assert extract_answers(text) == Extracted(answers)


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        "\\boxed{42",
        "\\boxed{1} and then \\boxed{2",  # the final box is malformed: no answer
        "\\boxed{}",
        "\\boxed{$$}",
        "Answer:",
        "The Answer: is somewhere in the text",  # not at the start of a line
        "Answers: 5",
        "",
    ],
)
def test_no_answer(text: str) -> None:
    assert extract_answers(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed{7}. So the answer is 9.",
        "\\boxed{7}\nWait: \\boxed 9",  # a brace-less box is not read as one
        "\\boxed{7}\n\\framebox{9}",
        "Answer: 7\nActually, $9$.",
        "\\boxed{7}^2",
        "\\boxed{7} \u0669",  # any digit, not only ASCII
        "\\boxed{42} (or rather \u0664\u0662)",
        "\\boxed{3}$\u00bd",  # any number character: a vulgar fraction, a Roman numeral
        "So $\\boxed{3}$, or rather \u2163.",
        "\\boxed{3}!",  # marks without a digit: factorial, percent, a scale word
        "\\boxed{5}\\%",
        "$\\boxed{3}\\%$",
        "\\boxed{5}\\text{ squared}",
        "\\boxed{2}^{2}",
        "\\boxed{2} \\cdot 2",
        "\\boxed{2}x^2",
        "\\boxed{\\frac{1}{2}}. So 1/2.",
        "\\boxed{2}. So the answer is -2.",
        "\\boxed{-2} - 2",
        "\\boxed{4}2",
        "\\boxed{2}(2)",
        "\\boxed{2}\\,2",
        "Answer: -2\n\nso 2",
        "So $\\boxed{3}$. Actually no, I made an error: it is four.",
        "The answer is not $\\boxed{3}$; it must be larger than that.",
        "\\boxed{3}?",  # a question is a doubt
        "\\boxed{3}'",  # a prime: feet, minutes
        "~~\\boxed{3}~~",  # struck out in Markdown
        # restatements, which the rule before the contract let through, are text after it too
        "\\boxed{42}. So the answer is 42.",
        "\\boxed{42} apples",
        "\\boxed{42}. I hope it is correct.",
        "The answer is $\\boxed{42}$ apples.",
        "Answer: 42\n42",
        "\\boxed{25} cm^2",  # a unit goes inside the box
        "\\boxed{42}\n```\nMore text.",
    ],
)
def test_anything_after_the_final_answer_is_a_problem(text: str) -> None:
    found = extract_answers(text)
    assert found is not None and found.problem is not None
    assert found.problem.startswith("Your reply goes on after its final answer")


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed{42}.",
        "$\\boxed{42}$.",
        "The answer is $\\boxed{42}$;",
        "(\\boxed{42})",
        "**\\boxed{42}**",
        "`\\boxed{42}`",
        "\\boxed{42} \\\\",
        "\\( \\boxed{42} \\)",
        "$$\n\\begin{aligned} x &= \\boxed{42} \\\\\n\\end{aligned}\n$$",
        "\\[ x = \\boxed{42} \\quad \\]",
        "\\left( \\boxed{42} \\right)",
        "\\boxed{42}\n```",
        "\\boxed{42}\nAnswer: 42",  # a restatement as a final answer line is a final answer itself
        "Answer: 42.\n\n",
    ],
)
def test_only_closing_marks_may_follow_the_final_answer(text: str) -> None:
    assert extract_answers(text) == Extracted(("42",))


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("The gcd is 4, not 3 as my first draft said (rejected draft: $\\boxed{3}$).", "not"),
        ("My rejected draft was $\\boxed{3}$.", "rejected"),
        ("A wrong answer would be $\\boxed{3}$.", "wrong"),
        ("The incorrect value is \\boxed{3}.", "incorrect"),
        ("Instead of 4 I write \\boxed{3}.", "Instead"),
        ("It is larger than \\boxed{3}.", "than"),
        ("The answer isn't \\boxed{3}.", "isn"),
        ("Answer: not $\\boxed{3}$", "not"),
        ("It is four. Rather \\boxed{3}", "Rather"),
    ],
)
def test_a_final_answer_its_own_sentence_disowns_is_a_problem(text: str, word: str) -> None:
    assert extract_answers(text) == Extracted(problem=contract.DISOWNED.format(word))


@pytest.mark.parametrize(
    "text",
    [
        "It is not 4. The answer is \\boxed{3}.",  # another sentence may say what it is not
        "It is not 4!\nSo \\boxed{3}.",
        "The value 3.5 is not it; at x = 0.5 we get \\boxed{3}.\n",  # `;` ends no sentence...
    ],
)
def test_only_the_final_answers_own_sentence_is_read(text: str) -> None:
    found = extract_answers(text)
    if text.startswith("The value"):  # ...so `not` there disowns it
        assert found == Extracted(problem=contract.DISOWNED.format("not"))
    else:
        assert found == Extracted(("3",))


@pytest.mark.parametrize(
    "text",
    [
        "<!-- $\\boxed{3}$",
        "<!-- draft -->\n<!-- \\boxed{3}",
        "$\\phantom{\\boxed{3}}$",
        "$\\hphantom{x}\\phantom{\\boxed{3}}$",
        "$\\textcolor{white}{\\boxed{3}}$",
        "$\\textcolor{white} {\\boxed{3}}$",
        "{\\color{white} so \\boxed{3}}",
        "\\color{white} The answer is \\boxed{3}.",
        "$\\rlap{\\boxed{3}}$",
        "$\\makebox[0pt]{\\boxed{3}}$",
        "$\\cancel{\\boxed{3}}$",
        "$\\phantom\\boxed{3}$",
        "<span style=\"color:white\">\\boxed{3}</span>",
        "<div hidden>\n\\boxed{3}\n</div>",
        "<del>\\boxed{3}</del>",
        "~~So \\boxed{3}~~",
        "\\iffalse \\boxed{3} \\fi",
    ],
)
def test_a_final_answer_in_hidden_markup_is_a_problem(text: str) -> None:
    found = extract_answers(text)
    assert found is not None and found.problem is not None
    assert "where a reader does not see it" in found.problem or found.problem.startswith("Your reply goes on")


@pytest.mark.parametrize(
    "text",
    [
        "$\\hspace{-10em}\\boxed{3}$",
        "$\\hspace*{ -2em}\\boxed{3}$",
        "$\\kern-3em \\boxed{3}$",
        "$\\mkern -18mu\\boxed{3}$",
    ],
)
def test_negative_space_is_a_problem(text: str) -> None:
    found = extract_answers(text)
    assert found is not None and found.problem is not None and "negative space" in found.problem


@pytest.mark.parametrize(
    "text",
    [
        "<!-- note --> The answer is $\\boxed{3}$.",  # hidden markup closed before the answer
        "$\\phantom{0}\\boxed{3}$",
        "$\\textcolor{red}{\\text{Note}}$: so \\boxed{3}.",
        "<span style=\"color:red\">note</span> so \\boxed{3}.",
        "<br> so \\boxed{3}.",
        "$\\hspace{1em}\\boxed{3}$",
        "{\\color{red} note} so \\boxed{3}.",
        "For $a<b$, the class of solutions with $c>d$ gives \\boxed{3}.",  # inequalities, not tags
    ],
)
def test_markup_that_ends_before_the_final_answer_is_no_problem(text: str) -> None:
    assert extract_answers(text) == Extracted(("3",))


@pytest.mark.parametrize(
    "text",
    [
        "Work.\r\nAnswer: 42\r\n",  # CRLF
        "Work.\rAnswer: 42\r",  # CR
        "**Answer:** 42**\r\n",
        "\ufeffAnswer: 42",  # a byte-order mark
        "\ufeff\\boxed{42}",
        "Answer: 42\n```",  # a closing code fence without a final newline
        "```\nAnswer: 42```",  # ...or on the answer's own line
        "Answer: `42`",
        "\\boxed{42}",  # no final newline
        "\\boxed{42}\n```",
        "Answer: 42 \t\n\n  \n",  # trailing whitespace
        "\\boxed{42}  \t\r\n\r\n",
        "Answer: 42.\r\n",
    ],
)
def test_correct_answers_in_common_shapes(text: str) -> None:
    assert extract_answers(text) == Extracted(("42",))


def test_braces_nested_too_deep_are_a_problem_not_a_recursion() -> None:
    deep = "\\boxed{" + "{" * MAX_BRACE_DEPTH + "1" + "}" * MAX_BRACE_DEPTH + "}"
    assert extract_answers(deep) == Extracted(problem=TOO_DEEP)
    fits = "\\boxed{" + "{" * (MAX_BRACE_DEPTH - 1) + "1" + "}" * (MAX_BRACE_DEPTH - 1) + "}"
    assert extract_answers(fits) is not None and extract_answers(fits).problem is None


# Each of these is at the answer-size cap (64 KB) and made to hurt one way of scanning.
ADVERSARIAL = {
    # quadratic for a lazy `answer:(.*?)[ \t*_]*$`: every extension rescans the run of spaces
    "answer-line-spaces": "answer: x" + " " * 60_000 + "y",
    "answer-line-markup": "**Answer:** x" + "*_ " * 20_000 + "y",
    "many-answer-lines": "Answer: 1 \n" * 5_000,
    # every box is closed only at the very end: a matcher that restarts per box is quadratic
    "nested-open-boxes": "\\boxed{" * 8_000,
    "boxes-in-one-box": "\\boxed{" + "\\boxed{1}" * 7_000 + "}",
    "many-boxes": "\\boxed{1}" * 7_000,
    "escaped-braces": "\\boxed{" + "\\{" * 30_000,
    "box-then-spaces": "\\boxed" + " " * 60_000,
    "boxes-and-answer-lines": "\\boxed{1}\nAnswer: 1\n" * 3_000,
    "answer-lines-in-one-box": "\\boxed{" + "\nAnswer: 1" * 5_000 + "}",
    "crlf-answer-lines": "Answer: 1\r\n" * 5_000,
    # the text after the final answer: closing marks, then something else at the very end
    "closing-marks": "\\boxed{1}" + ".)$ " * 15_000 + "1",
    "spacing-then-a-number": "\\boxed{1}" + "\\," * 30_000 + "1",
    "ends-then-a-word": "\\boxed{1}" + "\\end{aligned}" * 4_000 + "x",
    # the final answer's sentence, and the markup before it
    "long-sentence": "so " * 20_000 + "\\boxed{1}",
    "open-hiding-groups": "\\phantom{" * 6_000 + "\\boxed{1}",
    "hiding-commands": "\\phantom" * 7_000 + "\\boxed{1}",
    "open-comments": "<!--" * 15_000 + "\\boxed{1}",
    "open-tags": "<span " * 10_000 + "\\boxed{1}",
    "spacing-commands": "\\hspace{" * 7_000 + "\\boxed{1}",
    "think-tags": "<think>" * 8_000 + "\\boxed{1}",
    "think-closings": "</think>" * 8_000 + "\\boxed{1}",
    **{f"garbage-{label}": action for label, action in GARBAGE_ACTIONS.items()},
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("label", list(ADVERSARIAL))
def test_adversarial_replies_are_scanned_in_linear_time(label: str) -> None:
    text = ADVERSARIAL[label]
    for _ in range(10):  # ten passes: a quadratic scan of 60 KB needs minutes
        found = extract_answers(text)
    assert found is None or isinstance(found, Extracted)


def test_many_boxes_are_all_found() -> None:
    found = extract_answers("".join(f"\\boxed{{{i}}}" for i in range(5_000)))
    assert found is not None and len(found.answers) == 5_000
