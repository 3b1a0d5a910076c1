"""Answer extraction: what counts as the final answers of a reply, and that finding them is linear.

The linearity tests use inputs on which the previous, regex-based extractor was quadratic
(`answer: x` + 60 000 spaces + `y` took ~8 s on the project machine, 400 KB ~6 min): under the
pytest timeout they fail for a quadratic extractor and pass for a linear one with a wide margin.
No wall clock is asserted.
"""

from __future__ import annotations

import pytest

from gyms.conformance import GARBAGE_ACTIONS
from gyms.math.extract import MAX_BRACE_DEPTH, NUMBER_AFTER, TOO_DEEP, Extracted, extract_answers


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
        ("Answer: 3\nno wait\nANSWER: 5\nThat's it.", ("3", "5")),
        ("Answer: \\(5\\)", ("5",)),
        ("Answer: $1$ and $2$", ("$1$ and $2$",)),  # not one delimited expression: kept whole
        # boxes and answer lines are all final answers, in the order written
        ("Answer: 4\nso \\boxed{3}", ("4", "3")),
        ("\\boxed{42}\n**Final Answer:** $42$", ("42",)),
        ("Answer: \\boxed{42}", ("42",)),  # a line whose answer is a box counts once, as its box
        ("Answer: the value $\\boxed{42}$", ("42",)),
        ("\\boxed{\nAnswer: 5\n}", ("Answer: 5",)),  # a line inside a box is part of the box
        ("**Final Answer:**\n\\boxed{42}", ("42",)),  # an empty answer line states nothing
        # after the final answer, a reply may close without stating a number
        ("\\boxed{42}. I hope it is correct.", ("42",)),
        ("The answer is $\\boxed{42}$ apples.", ("42",)),
        ("\\[\n\\boxed{42}\n\\]\n", ("42",)),
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
        "\\boxed{7}\nWait: \\boxed 9",  # a brace-less box is not read as one, but states a number
        "\\boxed{7}\n\\framebox{9}",
        "Answer: 7\nActually, $9$.",
        "\\boxed{7}^2",
        "\\boxed{7} \u0669",  # any digit, not only ASCII
        "\\boxed{42} (or rather \u0664\u0662)",  # the same value in another script is another number
        # the numbers of the answer, but not standing alone: an operand says another value
        "\\boxed{2}^2",
        "\\boxed{2}^{2}",
        "\\boxed{2}. So the answer is 2^2.",
        "\\boxed{2} \\cdot 2",
        "\\boxed{2} \\times 2",
        "\\boxed{2} x 2",
        "\\boxed{2}x^2",  # not a unit's power: `x` is no unit
        "\\boxed{3}. So 3!",
        "\\boxed{1}. So the answer is 1/1.",
        "\\boxed{\\frac{1}{2}}. So 1/2.",  # a restatement is plain numbers
        "\\boxed{50}. So 50\\%.",
        "\\boxed{50}. So 50%.",
        "\\boxed{42}. So 42 thousand.",
        "\\boxed{42}. So 42\\text{ thousand}.",  # a text group after a number is looked into
        "\\boxed{42}. That is 42 times.",
        "\\boxed{2}. So the answer is -2.",  # a sign is part of the number
        "\\boxed{-2} - 2",  # after a value, `-` subtracts
        "\\boxed{-2}\n\n-2",
        "\\boxed{2}. So the answer is 2.5.",
        # right after the final answer, with only space or brackets between: one expression
        "\\boxed{4}2",
        "\\boxed{4} 2",
        "\\boxed{2}(2)",
        "\\boxed{2}\\,2",
        "Answer: -2\n\nso 2",
    ],
)
def test_a_number_after_the_final_answer_is_a_problem(text: str) -> None:
    assert extract_answers(text) == Extracted(problem=NUMBER_AFTER)


@pytest.mark.parametrize("text", ["\\boxed{3}!", "\\boxed{5}\\%", "\\boxed{5}\\text{ squared}"])
def test_only_numbers_are_read_after_the_final_answer(text: str) -> None:
    """A known gap, documented: marks without a digit after the answer are not seen."""
    found = extract_answers(text)
    assert found is not None and found.problem is None


@pytest.mark.parametrize(
    ("text", "answers"),
    [
        # a restatement of the final answer, any number of times
        ("\\boxed{42}. So the answer is 42.", ("42",)),
        ("\\boxed{42} apples", ("42",)),
        ("\\boxed{42}. So there are 42 apples, and 42 it is.", ("42",)),
        ("The answer is $\\boxed{42}$. There are 42 apples.", ("42",)),
        ("$\\boxed{42}$ (42 apples)", ("42",)),
        ("**Final Answer**\n\\boxed{42}\n\nThe final answer is **42**.", ("42",)),
        ("\\boxed{42}\n\nThus, the answer is $42$.", ("42",)),
        ("\\boxed{42}\\\\42", ("42",)),  # a new line in LaTeX
        ("Answer: 42\nSo 42.", ("42",)),
        ("Answer: 42\n42", ("42",)),  # an answer line ends with its line: the next one is apart
        ("Answer: -2\n-2", ("-2",)),  # ...and a `-` there is a sign
        ("\\boxed{42}. I hope it is correct: 42.\r\n", ("42",)),
        # numbers compared as written, less thousands commas and trailing decimal zeros
        ("\\boxed{2.0}. So 2.", ("2.0",)),
        ("\\boxed{2}. So 2.0.", ("2",)),
        ("\\boxed{2.50}. So 2.5 litres.", ("2.50",)),
        ("\\boxed{0.5}, i.e. .5", ("0.5",)),
        ("\\boxed{1000}. So 1,000 apples.", ("1000",)),
        ("\\boxed{1,000}. So 1000 apples.", ("1,000",)),
        # signs
        ("\\boxed{-2}. So the answer is -2.", ("-2",)),
        ("\\boxed{-2}. So $x = -2$.", ("-2",)),
        ("\\boxed{x = -2}. So $x=-2$.", ("x = -2",)),
        ("\\boxed{-2}. So the answer is \u22122.", ("-2",)),  # U+2212 minus
        # every number of every final answer may be restated
        ("\\boxed{\\frac{1}{2}}. So 1 out of 2.", ("\\frac{1}{2}",)),
        ("\\boxed{3}\nAnswer: 3\n3 apples.", ("3",)),
        # a unit's power is part of the unit
        ("\\boxed{25}\\text{ cm}^2", ("25",)),
        ("\\boxed{25} \\mathrm{m}^{2}", ("25",)),
        ("\\boxed{25} cm^2", ("25",)),
        ("\\boxed{25} m^3", ("25",)),
        ("$\\boxed{25}$ cm$^2$", ("25",)),
        ("\\boxed{25} cm\u00b2", ("25",)),
        ("\\boxed{25} square units, so 25 cm^2 in all.", ("25",)),
    ],
)
def test_a_restatement_after_the_final_answer_passes(text: str, answers: tuple[str, ...]) -> None:
    assert extract_answers(text) == Extracted(answers)


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
    # the text after the final answer: numbers, brackets and signs around them, units' powers
    "restatements": "\\boxed{1}." + " 1" * 30_000,
    "bracketed-restatements": "\\boxed{1}." + " ((((1))))" * 6_000,
    "signed-numbers": "\\boxed{-1}. So" + " -1 " * 15_000,
    "unit-powers": "\\boxed{1}." + " \\text{cm}^2" * 5_000,
    "spacing-then-a-number": "\\boxed{1}" + "\\," * 30_000 + "1",
    "long-answer-then-its-numbers": "\\boxed{" + "1+" * 15_000 + "1}" + " 1" * 10_000,
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
