"""Gym options: one error style for every gym, naming the gym, the option, the value and the fix."""

from __future__ import annotations

import pytest

from gyms.options import Options
from gyms.registry import make

OPTIONS = Options("demo")


def test_values_from_the_command_line_are_parsed():
    assert OPTIONS.choice("tool", " Icarus ", ("icarus", "verilator")) == "icarus"
    assert OPTIONS.whole("seed", "7", 0) == 7
    assert OPTIONS.seconds("timeout_s", "1.5") == 1.5
    assert OPTIONS.flag("warm", "No") is False and OPTIONS.flag("warm", "yes") is True
    assert OPTIONS.flag("warm", True) is True


@pytest.mark.parametrize(
    "parse, message",
    [
        (
            lambda: OPTIONS.choice("tool", "modelsim", ("icarus", "verilator")),
            "demo gym option tool='modelsim': use one of icarus, verilator",
        ),
        (lambda: OPTIONS.whole("seed", "many", 0), "demo gym option seed='many' must be a whole number"),
        (lambda: OPTIONS.whole("turns", "0", 1), "demo gym option turns=0 must be at least 1"),
        (lambda: OPTIONS.whole("turns", None, 1), "demo gym option turns=None must be a whole number"),
        (lambda: OPTIONS.seconds("timeout_s", "soon"), "demo gym option timeout_s='soon' must be a number of seconds"),
        (lambda: OPTIONS.seconds("timeout_s", "-1"), "demo gym option timeout_s=-1.0 must be positive"),
        (lambda: OPTIONS.seconds("timeout_s", "nan"), "demo gym option timeout_s=nan must be positive"),
        (lambda: OPTIONS.flag("warm", "maybe"), "demo gym option warm='maybe' must be true or false"),
        (lambda: OPTIONS.flag("warm", ""), "demo gym option warm='' must be true or false"),
        (lambda: OPTIONS.whole("seed", "", 0), "demo gym option seed='' must be a whole number"),
        (lambda: OPTIONS.whole("seed", 2.5, 0), "demo gym option seed=2.5 must be a whole number"),
    ],
)
def test_bad_values_name_the_gym_the_option_and_the_fix(parse, message):
    with pytest.raises(ValueError) as caught:
        parse()
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "gym, option",
    [
        ("math", {"max_turns": "0"}),
        ("modelica", {"sim_timeout_s": "0"}),
        ("verilog", {"seed": "-1"}),
        ("lean", {"checkers": "none"}),
    ],
)
def test_every_built_in_gym_parses_its_options_with_them(gym, option):
    with pytest.raises(ValueError, match=f"^{gym} gym option {next(iter(option))}="):
        make(gym, **option)
