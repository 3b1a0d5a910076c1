"""Constructs Icarus Verilog 11 rejects fail in the pre-check with feedback that names the limit
(docs/gyms/verilog.md, "What the simulators reject"): a token longer than its lexer's buffer, a
default value on an input port, and a design written as a lone `macromodule`. Each rule is held
against the real iverilog at its boundary, so the pre-check refuses what Icarus refuses and no
more: a design Icarus compiles is never refused by it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import needs_icarus

from gyms.base import Outcome
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.checks.precheck import ICARUS_MAX_TOKEN_CHARS, precheck

MODULE = "TopModule"
N = ICARUS_MAX_TOKEN_CHARS


def design(body: str, ports: str = "input a, output y") -> str:
    return f"module {MODULE} ({ports});\n{body}\n  assign y = a;\nendmodule\n"


def icarus_compiles(source: str, tmp_path: Path) -> bool:
    (tmp_path / "d.sv").write_text(source)
    done = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "out"), str(tmp_path / "d.sv")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return done.returncode == 0


# Each token as Icarus's lexer counts it, at a length of `n` characters.
TOKENS = {
    "an identifier": lambda n: f"  wire {'x' * n};",
    "a number": lambda n: f"  wire [3:0] q = {'0' * n};",  # an unsized decimal
    "a number ": lambda n: f"  wire [3:0] q = 4'b{'0' * (n - 2)};",  # the base with its digits: 'b0...
    "a string literal": lambda n: f'  initial $display("{"s" * (n - 1)}");',  # the opening quote and the text
    "a // comment": lambda n: f"  //{'c' * (n - 2)}",
}


@needs_icarus
@pytest.mark.parametrize("kind", list(TOKENS))
def test_the_token_limit_is_icarus_s_own(kind: str, tmp_path: Path) -> None:
    longest, over = design(TOKENS[kind](N)), design(TOKENS[kind](N + 1))
    assert icarus_compiles(longest, tmp_path) and not icarus_compiles(over, tmp_path)
    assert precheck(longest, MODULE, simulator="icarus").ok
    refused = precheck(over, MODULE, simulator="icarus")
    assert refused.errors == (f"line 2: {kind.strip()} is {N + 1:,} characters long; the simulator's lexer takes "
                              f"at most {N:,} characters in one token: shorten it.",)  # fmt: skip


def test_another_simulator_is_not_held_to_icarus_s_limits() -> None:
    for source in (design(TOKENS["an identifier"](N + 1)), design("", "input a = 1'b0, output y")):
        assert precheck(source, MODULE, simulator="verilator").ok and precheck(source, MODULE).ok


PORT_DEFAULTS = {
    "input a = 1'b0, output y": ["a"],
    "output y, input wire [3:0] b = 4'd0, a": ["b"],  # a takes b's direction, without a default
    "inout a = 1'b0, output y": ["a"],
}


@needs_icarus
@pytest.mark.parametrize("ports", list(PORT_DEFAULTS))
def test_an_input_port_s_default_value_is_named(ports: str, tmp_path: Path) -> None:
    source = design("", ports)
    assert not icarus_compiles(source, tmp_path)
    errors = precheck(source, MODULE, simulator="icarus").errors
    assert [e.split("`")[1] for e in errors] == PORT_DEFAULTS[ports]
    assert all("with a default value, which Icarus Verilog (the simulator here) rejects" in e for e in errors)


@needs_icarus
def test_a_non_ansi_input_default_is_named_and_an_output_s_initial_value_is_not_refused(tmp_path: Path) -> None:
    non_ansi = f"module {MODULE} (a, b, y);\n  input b, a = 1'b1;\n  output y;\n  assign y = a & b;\nendmodule\n"
    assert not icarus_compiles(non_ansi, tmp_path)
    errors = precheck(non_ansi, MODULE, simulator="icarus").errors
    assert len(errors) == 1 and "port `a` is an input with a default value" in errors[0]
    plain = non_ansi.replace(" = 1'b1", "")  # declarations of several ports, none with a default
    assert icarus_compiles(plain, tmp_path) and precheck(plain, MODULE, simulator="icarus").ok
    output = f"module {MODULE} (input a, output reg y = 1'b0);\n  always @* y = a;\nendmodule\n"
    assert icarus_compiles(output, tmp_path) and precheck(output, MODULE, simulator="icarus").ok


@needs_icarus
def test_the_gym_s_feedback_names_each_limit() -> None:
    gym = VerilogGym(tasks="verilog/arithmetic/adder8")
    (task,) = gym.tasks()
    reference = task.reference
    cases = {
        "macromodule": (reference.replace("module TopModule", "macromodule TopModule", 1),
                        "`macromodule` is not read. Write it as `module TopModule`"),
        "a long name": (reference.replace("endmodule", f"  wire {'n' * 18_001};\nendmodule"),
                        "an identifier is 18,001 characters long; the simulator's lexer takes at most 16,382"),
        "an input default": (reference.replace("input cin", "input cin = 1'b0"),
                             "port `cin` is an input with a default value, which Icarus Verilog"),
    }  # fmt: skip
    assert all(case != reference for case, _ in cases.values())
    for code, named in cases.values():
        with gym.open(task) as episode:
            result = episode.step(answer(code))
        assert result.outcome is Outcome.FAIL and named in result.observation, result.observation
    # A macromodule beside the design's module is read, as before, and passes.
    helper = "macromodule Unused (input a, output b);\n  assign b = a;\nendmodule\n"
    with gym.open(task) as episode:
        assert episode.step(answer(helper + reference)).outcome is Outcome.PASS
