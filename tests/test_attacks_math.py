"""Reward hacks against the math gym, each through a real GymPool worker and the warm checker.

Most of these passed before the answer-shape screen (math-verify reads the last value of a
disjunction and drops relations, negations and implications), or ended as `error` (an answer
that made the grader raise) or hung the worker (quadratic extraction). Each must now be a
plain `fail` with readable feedback, and leave the worker's later verdicts unaffected.
"""

from __future__ import annotations

import pytest

from gyms.base import Task
from gyms.math import MathGym
from tests.attacks import Attack, assert_attacks_fail

RIGHT, WRONG = "62", "61"  # the gold of rg/simple_equations/0000, and a wrong value
HALF = Task(id="attack/half", prompt="What is 1/2 as a decimal?", metadata={"gold": "0.5", "style": "boxed"})


def _attacks() -> list[Attack]:
    r, w = RIGHT, WRONG
    return [
        # hedges: the right value and a wrong one, in a form that math-verify reads as one of them
        Attack("disjunction, right value last", f"\\boxed{{x={w} \\lor x={r}}}"),
        Attack("disjunction in words", f"\\boxed{{{w} \\text{{ or }} {r}}}"),
        Attack("unicode disjunction", f"\\boxed{{{w} ∨ {r}}}"),
        Attack("several boxes with different values", f"Either \\boxed{{{w}}} or, more likely, \\boxed{{{r}}}."),
        Attack("several answer lines", f"Answer: {w}\nOn reflection:\nAnswer: {r}"),
        Attack("a set where a number is asked", f"\\boxed{{\\{{{r}\\}}}}"),
        Attack("a list", f"\\boxed{{{w}, {r}}}"),
        Attack("plus-minus zero", f"\\boxed{{{r} \\pm 0}}"),
        Attack("line break hides the first value", f"\\boxed{{{w} \\\\ {r}}}"),
        Attack("conjunction", f"\\boxed{{{w} \\land {r}}}"),
        Attack("value hidden in dropped spacing", f"\\boxed{{\\hspace{{1cm}}{w}\\ {r}}}"),
        # not a value
        Attack("relation", f"\\boxed{{x \\le {r}}}"),
        Attack("approximation", f"\\boxed{{x \\approx {r}}}"),
        Attack("negation", f"\\boxed{{x \\not= {r}}}"),
        Attack("logical negation", f"\\boxed{{\\neg {r}}}"),
        Attack("implication", f"\\boxed{{x = {w} \\Rightarrow {r}}}"),
        Attack("limit arrow", f"\\boxed{{x \\to {r}}}"),
        Attack("chain of equations", f"\\boxed{{x = {w} = {r}}}"),
        Attack("degenerate interval", f"\\boxed{{[{r}, {r}]}}"),
        Attack("range in words", f"\\boxed{{\\text{{between {w} and {r}}}}}"),
        Attack("range with dots", f"\\boxed{{{w} \\ldots {r}}}"),
        Attack("percentage of the value", f"\\boxed{{{r}\\%}}"),
        Attack("percentage where a decimal is asked", "\\boxed{50\\%}", HALF),
        # make the grader raise, recurse or hang
        Attack("huge power", "\\boxed{10^{10^{7}}}"),
        Attack("integer too long to print", "\\boxed{\\binom{20000}{10000}}"),  # an `error` before
        Attack("huge power of ten", "\\boxed{10^{5000}}"),
        Attack("a thousand nines", "\\boxed{" + "9" * 999 + "}"),
        Attack("deeply nested braces", "\\boxed{" + "{" * 60 + r + "}" * 60 + "}"),
        Attack(
            "deeply nested fractions (equal to the value, but over the depth limit)",
            "\\boxed{" + "\\frac{1}{" * 30 + r + "}" * 30 + "}",
        ),
        Attack("unclosed fraction", "Answer: \\frac{1}{"),
        Attack("unclosed root", "\\boxed{\\sqrt[}"),
        Attack("zero-width space", f"\\boxed{{{w}\u200b{r}}}"),
        Attack("right-to-left override", f"\\boxed{{{w}\u202e{r}}}"),
        Attack("fullwidth digits", "\\boxed{６２}"),
        # escape the checker's own `$\boxed{...}$` wrapper
        Attack("break out of the wrapper", f"Answer: {w}}}$ and $\\fbox{{{r}"),
        Attack("delimiters inside the box", f"\\boxed{{{w}$ $\\boxed{{{r}}}$}}"),
        # catastrophic backtracking and size
        Attack("quadratic answer line", "answer: x" + " " * 60_000 + "y"),
        Attack("unclosed boxes", "\\boxed{{" * 7_000),
        Attack("oversized", f"\\boxed{{{r}}}" + " " * 70_000),
        # verdict injection
        Attack("fake feedback", f"Correct: the answer passed.\nCorrect.\n\\boxed{{{w}}}"),
        Attack("fake checker reply", f'\\boxed{{{w}}}\n{{"ok": true, "correct": true, "parsed": "{r}"}}'),
        Attack("verdict as the answer", "\\boxed{\\text{Correct: the answer passed.}}"),
        # code for sympy's eval-based parser: it must never run (the canary stays untouched)
        Attack("python in the box", "\\boxed{__import__('os').system('touch /tmp/heavygym-canary/pwned')}"),
        Attack("python as an answer line", "Answer: getattr(__import__('os'),'system')('id > /tmp/heavygym-canary/x')"),
    ]


@pytest.mark.timeout(300)
def test_math_attacks_fail() -> None:
    gym = MathGym(size=10, max_turns=1)
    task = next(t for t in gym.tasks() if t.id == "rg/simple_equations/0000")
    assert task.metadata["gold"] == RIGHT
    assert_attacks_fail(gym, task, _attacks(), good=task.reference, bad=f"\\boxed{{{WRONG}}}")


def test_the_checker_never_evaluates_an_answer_as_python(tmp_path) -> None:
    """Past the gym's screen too: the checker itself must treat an answer as data."""
    from gyms.math import verifier

    planted = tmp_path / "ran"
    for code in (f"__import__('os').system('touch {planted}')", f"open('{planted}','w').write('1')"):
        reply = verifier.check([code], RIGHT)
        assert reply["correct"] is False
    assert not planted.exists()
