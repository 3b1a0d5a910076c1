"""Mutation operators, and the vetted mutants file against the current references."""

from __future__ import annotations

from gyms.verilog.answers.candidates import task_mutants, vetted, vetted_mutants
from gyms.verilog.answers.mutate import mutants, never_finishing, without_first_semicolon
from gyms.verilog.checks.precheck import PortSpec, precheck
from gyms.verilog.spec import MODULE
from gyms.verilog.tasks import builtin_tasks

SAMPLE = """module TopModule (input clk, input rst_n, input [1:0] sel, output reg [3:0] q);
  always @(posedge clk or negedge rst_n) begin
    if (!rst_n) q <= 4'd0;
    else case (sel)
      2'd0: q <= q + 4'd1;
      2'd1: q <= q & 4'hA;
      default: q <= q;
    endcase
  end
endmodule
"""


def edits(op: str) -> list[str]:
    """The changed line of each mutant of `op`, in order."""
    found = []
    for m in mutants(SAMPLE, "clk", "rst_n"):
        if m.op == op:
            changed = [b for a, b in zip(SAMPLE.splitlines(), m.text.splitlines()) if a != b]
            found.append(changed[0].strip() if changed else "")
    return found


def test_operator_swaps_leave_nonblocking_assignments_alone() -> None:
    assert edits("swap-op") == ["2'd0: q <= q - 4'd1;", "2'd1: q <= q | 4'hA;"]


def test_constants_move_by_one_but_the_port_list_does_not() -> None:
    changed = edits("off-by-one")
    assert "if (!rst_n) q <= 4'd1;" in changed and "2'd1: q <= q & 4'hb;" in changed
    assert all("[1:0]" not in line and "[3:0]" not in line for line in changed)


def test_edges_resets_and_case_items() -> None:
    assert edits("clock-edge") == ["always @(negedge clk or negedge rst_n) begin"]
    assert edits("reset-polarity") == ["always @(posedge clk or posedge rst_n) begin", "if (rst_n) q <= 4'd0;"]
    dropped = [m.text for m in mutants(SAMPLE, "clk", "rst_n") if m.op == "drop-case-item"]
    assert len(dropped) == 2 and "2'd0:" not in dropped[0] and "default:" in dropped[1]


def test_the_fixed_bad_designs_reach_the_stage_they_are_meant_for() -> None:
    for design in builtin_tasks().values():
        ports = [PortSpec(p.name, p.direction, p.width) for p in design.ports]
        # A syntax error is caught by the pre-check...
        assert not precheck(without_first_semicolon(design.reference), MODULE, ports).ok, design.id
        # ...while the never-finishing design is legal, so only the simulation timeout can stop it.
        assert precheck(never_finishing(design.reference, MODULE, ports), MODULE, ports).ok, design.id


def test_the_vetted_mutants_match_the_current_references() -> None:
    recorded = vetted()["tasks"]
    assert set(recorded) == set(builtin_tasks()), "run: python -m gyms.verilog.answers.mutant_vetting --write"
    for task_id, design in builtin_tasks().items():
        current = {m.label: m.digest for m in task_mutants(design)}
        for entry in recorded[task_id]:
            assert current.get(entry["label"]) == entry["digest"], (
                f"{task_id}: {entry['label']} changed since it was vetted; run: python -m gyms.verilog.answers.mutant_vetting --write"
            )
            assert max(entry["rewards"]) <= vetted()["max_reward"]
        assert vetted_mutants(design), f"{task_id} has no vetted mutant"
