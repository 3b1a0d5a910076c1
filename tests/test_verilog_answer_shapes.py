"""A correct design passes in every common shape of a model's reply (CRLF line endings, a BOM,
a closing fence right after the code, trailing blanks), and the one normalisation that allows
it cannot smuggle code past the screen. End to end through the gym, on Icarus."""

from __future__ import annotations

import pytest
from conftest import needs_icarus

from gyms.base import Outcome
from gyms.verilog import VerilogGym
from gyms.verilog.checks.extract import extract_verilog
from gyms.verilog.tasks import builtin_tasks

ADDER = builtin_tasks()["verilog/arithmetic/adder8"].reference.strip()

SHAPES = {
    "LF": f"Here it is.\n```verilog\n{ADDER}\n```\n",
    "CRLF": f"Here it is.\r\n```verilog\r\n{ADDER}\n```\r\n".replace("\n", "\r\n").replace("\r\r\n", "\r\n"),
    "lone CR": f"Here it is.\r```verilog\r{ADDER}\r```\r".replace("\n", "\r"),
    "a byte-order mark in front": f"\ufeff```verilog\n{ADDER}\n```\n",
    "a BOM and CRLF": f"\ufeff```verilog\r\n{ADDER}\r\n```".replace("\n", "\r\n").replace("\r\r\n", "\r\n"),
    "the closing fence right after the code": f"```verilog\n{ADDER}```",
    "the closing fence right after the code, then blanks": f"```verilog\n{ADDER}```  \n\n",
    "no final newline": f"```verilog\n{ADDER}\n```",
    "trailing blanks after the fence": f"```verilog\n{ADDER}\n```   \t\n\n",
    "an indented closing fence": f"```verilog\n{ADDER}\n   ```\n",
    "a bare module with CRLF": ADDER.replace("\n", "\r\n") + "\r\n",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_extracts_the_same_code(shape: str) -> None:
    assert extract_verilog(SHAPES[shape], "TopModule") == ADDER + "\n"


@needs_icarus
def test_a_correct_design_passes_in_every_shape() -> None:
    gym = VerilogGym(tasks="adder8")
    task = gym.tasks()[0]
    outcomes = {}
    for shape, reply in SHAPES.items():
        with gym.open(task) as episode:
            result = episode.step(reply)
        outcomes[shape] = (result.outcome, result.observation[:200])
    assert {shape: o for shape, (o, _) in outcomes.items() if o is not Outcome.PASS} == {}, outcomes


@needs_icarus
def test_a_lone_cr_cannot_end_a_comment_for_the_simulator_alone() -> None:
    # Were a CR a line end to Icarus but not to the screen, the code after it would run unscreened.
    hidden = ADDER.replace("endmodule", '  // a note\r  integer fd; initial fd = $fopen("/etc/passwd", "r");\nendmodule')
    with VerilogGym(tasks="adder8").open(VerilogGym(tasks="adder8").tasks()[0]) as episode:
        result = episode.step(f"```verilog\n{hidden}\n```\n")
    assert result.outcome is Outcome.FAIL and "$fopen" in result.observation
