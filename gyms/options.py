"""Gym options. Each arrives as a string from `--gym-option KEY=VALUE`, or typed from Python;
`Options` parses them, so that every gym names a bad option, its value and the fix the same way:

    verilog gym option simulator='modelsim': use one of icarus, verilator
"""

from __future__ import annotations

from collections.abc import Sequence

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


class Options:
    """The option parsers of one gym (`Options("verilog").whole("seed", seed, 0)`)."""

    def __init__(self, gym: str) -> None:
        self.gym = gym

    def choice(self, option: str, value: object, allowed: Sequence[str]) -> str:
        text = str(value).strip().lower()
        if text not in allowed:
            raise self._error(option, value, f": use one of {', '.join(allowed)}")
        return text

    def whole(self, option: str, value: object, minimum: int) -> int:
        try:
            number = int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise self._error(option, value, " must be a whole number") from None
        if number < minimum:
            raise self._error(option, number, f" must be at least {minimum}")
        return number

    def seconds(self, option: str, value: object) -> float:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise self._error(option, value, " must be a number of seconds") from None
        if not number > 0:  # also refuses nan
            raise self._error(option, number, " must be positive")
        return number

    def flag(self, option: str, value: object) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise self._error(option, value, " must be true or false")

    def _error(self, option: str, value: object, problem: str) -> ValueError:
        return ValueError(f"{self.gym} gym option {option}={value!r}{problem}")
