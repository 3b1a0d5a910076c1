"""Options of gyms and policies. Each arrives as text (`--gym-option KEY=VALUE`, a policy spec's
`KEY=VALUE`) or typed from Python; one parser reads them all, so that every bad option is named
with its value and the fix the same way:

    verilog gym option simulator='modelsim': use one of icarus, verilator
    policy option minibatches='0' must be at least 1

An empty value (`-o warm=`) is no value: every reader refuses it with the fix, as it refuses any
text it cannot read, rather than guess a meaning for it (false, zero, the default). A gym for which
an empty value means "the default" says so before it parses (the verilog gym's `vectors`).

Reading is shared; what range a value must lie in is its owner's. A gym's range errors show the
value as read (`timeout_s=-1.0`), a policy's as given (`minibatches='0'`).
"""

from __future__ import annotations

from collections.abc import Sequence

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class OptionParser:
    """Reads the options of one owner, named in every error (`OptionParser("policy")`)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def choice(self, option: str, value: object, allowed: Sequence[str]) -> str:
        text = str(value).strip().lower()
        if text not in allowed:
            raise self.error(option, value, f": use one of {', '.join(allowed)}")
        return text

    def whole_number(self, option: str, value: object) -> int:
        """Any whole number: text, or an int from Python (not a float or a bool, which would be cut)."""
        try:
            return int(str(value))
        except ValueError:
            raise self.error(option, value, "must be a whole number") from None

    def number(self, option: str, value: object, kind: str = "a number") -> float:
        """Any number, nan and infinities included: the owner says which it takes."""
        try:
            return float(str(value))
        except ValueError:
            raise self.error(option, value, f"must be {kind}") from None

    def flag(self, option: str, value: object) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in _TRUE + _FALSE:
            raise self.error(option, value, "must be true or false")
        return text in _TRUE

    def error(self, option: str, value: object, problem: str) -> ValueError:
        """`problem` says what the value must be ("must be positive"), or after a colon the fix."""
        separator = "" if problem.startswith(":") else " "
        return ValueError(f"{self.owner} option {option}={value!r}{separator}{problem}")


class Options(OptionParser):
    """The option parsers of one gym (`Options("verilog").whole("seed", seed, 0)`)."""

    def __init__(self, gym: str) -> None:
        super().__init__(f"{gym} gym")
        self.gym = gym

    def whole(self, option: str, value: object, minimum: int) -> int:
        number = self.whole_number(option, value)
        if number < minimum:
            raise self.error(option, number, f"must be at least {minimum}")
        return number

    def seconds(self, option: str, value: object) -> float:
        number = self.number(option, value, "a number of seconds")
        if not number > 0:  # also refuses nan
            raise self.error(option, number, "must be positive")
        return number
