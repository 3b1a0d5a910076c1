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
    ],
)
def test_a_number_after_the_final_answer_is_a_problem(text: str) -> None:
    assert extract_answers(text) == Extracted(problem=NUMBER_AFTER)


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
