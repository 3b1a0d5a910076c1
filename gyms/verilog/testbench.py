"""The self-checking SystemVerilog testbench of a built-in task, and how to read its verdict.

The testbench reads its vectors with `$readmemh` (no `$random`: every simulator sees the same
vectors), counts one check per output per vector (don't-cares excluded), prints the first few
mismatches, and ends with `CHECKS <nonce> passed=N total=M`. The nonce comes from a plusarg
at run time, so a design cannot print a fake verdict (designs may not read plusargs or
files: see `precheck.ALLOWED_SYSTEM_NAMES`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gyms.verilog.spec import MODULE, DesignTask
from gyms.verilog.vectors import Vectors, bits, hex_lines

TB_TOP = "heavygym_tb"
MAX_SHOWN = 5  # mismatches printed; the rest are only counted
STIMULUS, EXPECTED, CARE = "stim.hex", "expect.hex", "care.hex"
WAVES = "waves.vcd"


@dataclass(frozen=True)
class Score:
    passed: int
    total: int
    mismatches: tuple[str, ...]  # the first few, as printed by the testbench

    @property
    def reward(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total


def data_files(task: DesignTask, vectors: Vectors) -> dict[str, str]:
    out_bits = bits(task.outputs)
    return {
        STIMULUS: hex_lines(vectors.stimulus, bits(task.inputs)),
        EXPECTED: hex_lines(vectors.expected, out_bits),
        CARE: hex_lines(vectors.care, out_bits),
    }


def render(task: DesignTask, count: int, waves: bool) -> str:
    """The testbench source for `count` vectors (the data comes from `data_files`)."""
    ins, outs = task.inputs, task.outputs
    in_bits, out_bits = bits(ins), bits(outs)
    step = "cycle" if task.clock else "vector"
    decls = [f"  reg {_range(p.width)}{p.name};" for p in ins]
    decls += [f"  wire {_range(p.width)}{p.name};" for p in outs]
    if task.clock:
        decls.append(f"  reg {task.clock} = 1'b0;")
    conns = ", ".join(f".{p.name}({p.name})" for p in task.ports)
    shown_inputs = " ".join(f"{p.name}={p.width}'h%h" for p in ins)
    input_args = "".join(f", {p.name}" for p in ins)
    checks = []
    lo = out_bits
    for p in outs:
        hi, lo = lo - 1, lo - p.width
        sl = f"[{hi}:{lo}]"
        checks.append(
            f"""      if (care[i]{sl} != 0) begin
        total = total + 1;
        if (({p.name} & care[i]{sl}) === (expected[i]{sl} & care[i]{sl})) passed = passed + 1;
        else if (shown < {MAX_SHOWN}) begin
          shown = shown + 1;
          $display("MISMATCH {step} %0d: output {p.name} expected {p.width}'h%h got {p.width}'h%h",
                   i, expected[i]{sl}, {p.name});
          $display("  inputs of {step} %0d: {shown_inputs}", i{input_args});
        end
      end"""
        )
    apply = f"{{{', '.join(p.name for p in ins)}}} = stimulus[i];" if ins else ""
    if task.clock:
        body = f"""      #1 {apply}
      #4 {task.clock} = 1'b1;
      #2;
{chr(10).join(checks)}
      #3 {task.clock} = 1'b0;"""
    else:
        body = f"""      #1 {apply}
      #4;
{chr(10).join(checks)}
      #5;"""
    dump = f'    $dumpfile("{WAVES}");\n    $dumpvars(0, {TB_TOP});\n' if waves else ""
    return f"""`timescale 1ns/1ps
module {TB_TOP};
  localparam integer N = {count};
  reg [{max(in_bits, 1) - 1}:0] stimulus [0:N-1];
  reg [{out_bits - 1}:0] expected [0:N-1];
  reg [{out_bits - 1}:0] care [0:N-1];
{chr(10).join(decls)}
  integer i, passed, total, shown;
  reg [63:0] nonce;

  {MODULE} dut ({conns});

  initial begin
    nonce = 64'h0;
    if (!$value$plusargs("nonce=%h", nonce)) $display("testbench: no +nonce given");
    $readmemh("{STIMULUS}", stimulus);
    $readmemh("{EXPECTED}", expected);
    $readmemh("{CARE}", care);
{dump}    passed = 0; total = 0; shown = 0;
    for (i = 0; i < N; i = i + 1) begin
{body}
    end
    $display("CHECKS %h passed=%0d total=%0d", nonce, passed, total);
    $finish;
  end
endmodule
"""


def _range(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


_CHECKS = re.compile(r"^CHECKS ([0-9a-fA-F]+) passed=(\d+) total=(\d+)\s*$", re.MULTILINE)
_MISMATCH = re.compile(r"^MISMATCH .*(?:\n  inputs of .*)?", re.MULTILINE)


def parse(output: str, nonce: str) -> Score | None:
    """The verdict printed with our nonce, or None when the testbench never got to print it."""
    found = [m for m in _CHECKS.finditer(output) if int(m.group(1), 16) == int(nonce, 16)]
    if not found:
        return None
    last = found[-1]
    return Score(int(last.group(2)), int(last.group(3)), tuple(_MISMATCH.findall(output)[:MAX_SHOWN]))
