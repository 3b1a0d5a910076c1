"""The math checker program: math-verify behind a JSON-lines protocol, run in the sandbox.

Run as `python -I gyms/math/verifier.py` (or `python -m gyms.math.verifier`). It prints
`{"ready": true}` once math-verify is imported, then answers each request line

    {"answers": ["<an extracted final answer>", ...], "gold": "<the gold answer>"}

with one line `{"ok": true, "correct": bool, "parsed": str, "timed_out": bool}`: correct when
every answer equals the gold (checks stop at the first that does not). `{"ok": false, "error":
"..."}` is only for a request it cannot read or a gold answer it cannot parse: a model's answer
never causes one, whatever it makes math-verify or sympy do (the reply then has `"unreadable"`).
It never exits on bad input.

It imports nothing from the project, so it runs wherever math-verify is installed.
math-verify bounds its own work with `signal.alarm`, which works on the main thread only:
that is why checks run in this process's main loop. A check that hangs where the alarm
cannot interrupt it (inside C code) is ended by the caller's request timeout.

Three of math-verify's readings are changed here, because each accepts a value a person would
not (docs/gyms/math.md, *Equality*):
* units: math-verify drops the text from the first `\\text{...}` to the end and trailing words it
  takes for units (`5\\text{ thousand}` and `5t` are 5). Here nothing is dropped; the gym screens
  units and strips the ones it accepts before it sends a request (gyms/math/shape.py);
* juxtaposition: latex2sympy reads an integer next to a positive rational as a mixed number, so
  `2(3)`, `\\binom{4}{2}\\binom{3}{1}` and `1 2` were 5, 9 and 3. Here only a written mixed number
  (`2\\frac{1}{2}`) is a sum; any other juxtaposition is a product. This replaces latex2sympy's
  private `_Latex2Sympy.convert_postfix_list`, so pyproject.toml pins latex2sympy2_extended, and
  the checker raises a RuntimeError naming the pin at import if the methods it uses are missing;
* tolerance: math-verify rounds to 6 decimal places whenever one side is a decimal, so 0.333333
  equalled 1/3 and 3.141593 equalled pi. Here a gold without decimals is exact: an answer's
  decimals are read as the exact numbers they write (0.5 is 1/2; 0.333333 is not 1/3).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import sys
from typing import Any, TextIO

from latex2sympy2_extended.math_normalization import NormalizationConfig
from math_verify import LatexExtractionConfig, parse, verify
from math_verify.errors import TimeoutException
from sympy import Expr, Float, Rational

# The juxtaposition rule below replaces a private method of latex2sympy2_extended, and calls
# others: pyproject.toml pins the version it was written against. Another version may lack them
# or mean something else by them; the checker then refuses to start rather than grade otherwise.
_LATEX2SYMPY_PIN = "latex2sympy2_extended==1.11.0"
_PRIVATE_METHODS = ("convert_postfix_list", "convert_postfix", "mul_flat", "mat_mul_flat")


def _private_parser() -> type:
    try:
        from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
    except ImportError as exc:
        raise RuntimeError(
            f"gyms/math/verifier.py overrides latex2sympy2_extended's private _Latex2Sympy, which this "
            f"installation lacks ({exc}); install the version pyproject.toml pins: {_LATEX2SYMPY_PIN}"
        ) from exc
    missing = [name for name in _PRIVATE_METHODS if not callable(getattr(_Latex2Sympy, name, None))]
    if missing:
        raise RuntimeError(
            "gyms/math/verifier.py overrides latex2sympy2_extended's private _Latex2Sympy.convert_postfix_list "
            f"and calls its methods, but this installation lacks {', '.join(missing)}; install the version "
            f"pyproject.toml pins: {_LATEX2SYMPY_PIN}"
        )
    return _Latex2Sympy


_Latex2Sympy: Any = _private_parser()

# Seconds (whole: signal.alarm) math-verify may spend parsing the answer and comparing it.
PARSE_TIMEOUT_S = 2
VERIFY_TIMEOUT_S = 3
# LaTeX only: math-verify's plain-expression extraction hands text to sympy's parse_expr, which
# runs Python's eval on it. Every answer is wrapped in $\boxed{...}$, so LaTeX reads them all.
# math-verify's own normalisation, less `units` (see the module docstring).
_NORMALISATION = NormalizationConfig(
    basic_latex=True, units=False, malformed_operators=True, nits=True, boxed="all", equations=False
)
_CONFIG = [LatexExtractionConfig(normalization_config=_NORMALISATION)]
# Python powers (`x**10`, as reasoning-gym writes polynomials) mean nothing in LaTeX; as `x^{10}`
# the LaTeX parser reads them. Only plain exponents: the rest stays as written.
_PYTHON_POWER = re.compile(r"\*\*\s*(-?\d+(?:\.\d+)?|[A-Za-z])")
_PARSED_CHARS = 200
# The gym sends answers of at most 1000 characters, at most 4 of them; this is a second fence.
MAX_ANSWER_CHARS = 2000
MAX_ANSWERS = 8


class _TimeoutCounter(logging.Handler):
    """math-verify reports its own timeouts only as log warnings: count them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Timeout during"):
            self.count += 1


_timeouts = _TimeoutCounter()

# A mixed number as people write it: digits, then a proper fraction of digits (`2\frac{1}{2}`).
_MIXED_NUMBER = re.compile(r"(\d+)\\frac\{(\d+)\}\{(\d+)\}")
_published_postfix_list = _Latex2Sympy.convert_postfix_list


def _juxtaposition_is_a_product(self: Any, arr: list[Any], i: int = 0) -> Any:
    """latex2sympy's `convert_postfix_list` (the factors of `2x`), except that an integer next to
    a positive rational is a product too, unless the two are a written mixed number."""
    if i == len(arr) - 1 or _is_mixed_number(arr):
        return _published_postfix_list(self, arr, i)
    factor = self.convert_postfix(arr[i])
    if not isinstance(factor, Expr):  # a derivative's d/dx, or a matrix: as published
        return _published_postfix_list(self, arr, i)
    rest = self.convert_postfix_list(arr, i + 1)
    return self.mat_mul_flat(factor, rest) if getattr(rest, "is_Matrix", False) else self.mul_flat(factor, rest)


def _is_mixed_number(arr: list[Any]) -> bool:
    written = _MIXED_NUMBER.fullmatch("".join(item.getText() for item in arr)) if len(arr) == 2 else None
    return written is not None and 0 < int(written[2]) < int(written[3])


_Latex2Sympy.convert_postfix_list = _juxtaposition_is_a_product


def check(answers: list[str], gold: str) -> dict[str, Any]:
    """Whether every answer equals `gold`; raises only for a gold answer that cannot be parsed."""
    gold_parsed = _parse_gold(gold)
    if not gold_parsed:
        raise ValueError(f"the gold answer {gold!r} could not be parsed; fix the task's gold answer")
    reply: dict[str, Any] = {"ok": True, "correct": bool(answers), "parsed": "", "timed_out": False}
    if len(answers) > MAX_ANSWERS:
        return {**reply, "correct": False, "unreadable": f"{len(answers)} answers; at most {MAX_ANSWERS} are read"}
    _timeouts.count = 0
    exact = not any(_decimals(g) for g in gold_parsed)
    for answer in answers:
        reply.update(_check_one(answer, gold_parsed, exact))
        if not reply["correct"]:
            break
    reply["timed_out"] = _timeouts.count > 0
    return reply


def _check_one(answer: str, gold_parsed: tuple[Any, ...], exact: bool) -> dict[str, Any]:
    """One answer against the parsed gold; against an exact gold, the answer's decimals are the
    exact numbers they write. Whatever the answer makes the libraries raise (a number too long
    to print, a recursion too deep), it is the answer's fault: a plain no."""
    if len(answer) > MAX_ANSWER_CHARS:
        return {"correct": False, "unreadable": f"{len(answer)} characters; the limit is {MAX_ANSWER_CHARS}"}
    try:
        parsed = parse(_as_latex(answer), extraction_config=_CONFIG, parsing_timeout=PARSE_TIMEOUT_S)
        if exact:
            parsed = [_as_written(p) for p in parsed]
        correct = bool(parsed) and verify(list(gold_parsed), parsed, timeout_seconds=VERIFY_TIMEOUT_S)
        return {"correct": bool(correct), "parsed": _describe(parsed)}
    except (Exception, TimeoutException) as exc:  # TimeoutException is a BaseException
        return {"correct": False, "unreadable": type(exc).__name__}


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str) -> tuple[Any, ...]:
    # Gold answers repeat across turns and episodes of a task: parse each once.
    return tuple(parse(_as_latex(gold), extraction_config=_CONFIG, parsing_timeout=PARSE_TIMEOUT_S))


def _decimals(parsed: Any) -> set[Float]:
    return parsed.atoms(Float) if hasattr(parsed, "atoms") else set()


def _as_written(parsed: Any) -> Any:
    """Decimals as the exact numbers they write: 0.333 is 333/1000, not a float near 1/3."""
    decimals = _decimals(parsed)
    return parsed.xreplace({d: Rational(str(d)) for d in decimals}) if decimals else parsed


def _as_latex(answer: str) -> str:
    return "$\\boxed{" + _PYTHON_POWER.sub(r"^{\1}", answer) + "}$"


def _describe(parsed: list[Any]) -> str:
    """The parsed answer for logs: the sympy form if there is one, else the matched text."""
    if not parsed:
        return ""
    symbolic = [p for p in parsed if not isinstance(p, str)]
    try:
        return str((symbolic or parsed)[0])[:_PARSED_CHARS]
    except (Exception, TimeoutException):  # e.g. an integer with more digits than str() allows
        return "<too large to print>"


def handle(line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line.decode())
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
        answers, gold = request.get("answers"), request.get("gold")
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers) or not isinstance(gold, str):
            raise ValueError('a request needs a list of strings "answers" and a string "gold"')
        return check(answers, gold)
    except (Exception, TimeoutException) as exc:  # TimeoutException is a BaseException
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1000]}


def _protocol_stream() -> TextIO:
    """A private copy of stdout for replies; fd 1 then points to stderr, so that a library
    that prints cannot corrupt the protocol."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return replies


def main() -> None:
    replies = _protocol_stream()
    log = logging.getLogger("math_verify")
    log.addHandler(_timeouts)
    log.setLevel(logging.WARNING)
    log.propagate = False  # the counter is all we need; keep stderr for real failures

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    reply({"ready": True})
    for line in sys.stdin.buffer:
        if line.strip():
            reply(handle(line))


if __name__ == "__main__":
    main()
