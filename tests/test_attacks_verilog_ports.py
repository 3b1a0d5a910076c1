"""Reward hacks through the port list: ports of kinds the benches do not drive or record
(interface ports, port expressions, unpacked, real or ref ports, ports listed twice), which once
made the gym's own code raise, so that a wrong design ended as an infrastructure `error` and
left the loss. Each must end as a `fail` that the pre-check refuses by name (tests/attacks.py
also fails an attack on which the gym raised), on every bench; ordinary port styles still pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from attacks import Attack, assert_attacks_fail, assert_suite_holds, prepare_canary
from conftest import needs_icarus

from gyms.base import Outcome
from gyms.pool import GymPool
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.attacks import ADD, ANSI, BUS, NON_ANSI, adder

FIXTURES = Path(__file__).parent / "fixtures" / "verilog"

# Ordinary port styles a correct design may use: each passes, on every bench.
PORT_STYLES = {
    "non-ANSI declarations": adder("a, b, cin, sum, cout", NON_ANSI + ADD),
    "variables with a type": adder("input logic [7:0] a, input wire [7:0] b, input wire cin, "
                                   "output logic [7:0] sum, output reg cout", "  assign sum = a + b + cin;\n  always @* cout = (a + b + cin) > 255;\n"),
    "a packed struct input of the right width": adder(
        "input pair_t a, input [7:0] b, input cin, output [7:0] sum, output cout", ADD,
        before="typedef struct packed { logic [3:0] hi; logic [3:0] lo; } pair_t;\n"),
    "signed ports": adder("input signed [7:0] a, input signed [7:0] b, input cin, output signed [7:0] sum, output cout",
                          "  assign {cout, sum} = {1'b0, a} + {1'b0, b} + cin;\n"),
}


@pytest.fixture(scope="module", autouse=True)
def canary() -> None:
    prepare_canary()


@needs_icarus
@pytest.mark.parametrize("testbench", ["sv", "cocotb"])
def test_ports_of_kinds_the_bench_does_not_handle_fail(testbench: str) -> None:
    gym = VerilogGym(tasks="adder8", testbench=testbench, sim_timeout_s=5)
    _, ports = gym.attack_suites()  # the gym's own suite (gyms/verilog/attacks.py)
    assert_suite_holds(gym, ports)


@needs_icarus
@pytest.mark.parametrize("testbench", ["sv", "cocotb"])
def test_ordinary_port_styles_of_a_correct_design_pass(testbench: str) -> None:
    gym = VerilogGym(tasks="adder8", testbench=testbench, sim_timeout_s=5)
    with GymPool(2, step_timeout_s=gym.step_timeout_s) as pool:
        calls = {style: pool.submit(gym.open(gym.tasks()[0]), design) for style, design in PORT_STYLES.items()}
        results = {style: call.result().result for style, call in calls.items()}
    failed = {style: r.observation[:300] for style, r in results.items() if r.outcome is not Outcome.PASS}
    assert not failed


COUNT_DOWN = "input clk, input load, input [3:0] d, output reg [3:0] q"
COUNT = "  always @(posedge clk) q <= load ? d : q + 4'd1;\n"  # counts up, not down


def count_down(ports: str, body: str = COUNT, before: str = "") -> str:
    return answer(f"{before}module TopModule ({ports});\n{body}endmodule\n")


EVAL_PORT_ATTACKS = [
    Attack("an interface port", count_down(COUNT_DOWN.replace("input [3:0] d", "bus_if d"), before=BUS)),
    Attack("an explicit port expression", count_down("clk, load, d, .q(r)", "  input clk, load;\n  input [3:0] d;\n"
                                                     "  output reg [3:0] r;\n" + COUNT.replace("q", "r"))),
    Attack("a port listed twice", count_down("clk, load, d, q, clk", "  input clk, load;\n  input [3:0] d;\n"
                                             "  output reg [3:0] q;\n" + COUNT)),
    Attack("an unpacked output", count_down(COUNT_DOWN.replace("output reg [3:0] q", "output logic q [4]"),
                                            "  always @(posedge clk) q[0] <= d[0];\n")),
    Attack("a ref port", count_down(COUNT_DOWN.replace("input load", "ref logic load"))),
    Attack("an empty (null) port", count_down(COUNT_DOWN + ", .x()")),
]


@needs_icarus
def test_ports_of_kinds_the_trace_bench_does_not_handle_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path / "traces"))  # the worker inherits it
    gym = VerilogGym(source=f"verilog-eval:{FIXTURES / 'verilog_eval'}", tasks="Prob002_count_down", sim_timeout_s=2)
    task = gym.tasks()[0]
    assert_attacks_fail(gym, task, EVAL_PORT_ATTACKS, answer(task.reference), count_down(COUNT_DOWN), min_attacks=6)
