"""Small RTLLM 2.0 designs, written for the tests in the benchmark's layout
(`<category>/<design>/design_description.txt`, `testbench.v`, `verified_<design>.v`), in the
shapes its real designs take that a wrapper around the reference must survive: ports declared
in the non-ANSI style and connected by position, a parameter the testbench sets, several
modules in one file (a helper first), a `timescale and a `default_nettype, a comment naming the
module, and a testbench that reads a signal inside the design."""

from __future__ import annotations

from pathlib import Path

DESIGNS = {
    # Non-ANSI ports, a parameter the testbench sets, connected by position; a testbench that
    # prints a line for each failed check, then its report.
    ("Arithmetic", "mul_reg"): (
        """module mul_reg(clk, a, b, p);
  parameter N = 4;
  input clk;
  input [N-1:0] a, b;
  output reg [2*N-1:0] p;
  always @(posedge clk) p <= a * b;
endmodule
""",
        """`timescale 1ns/1ps
module tb_mul_reg;
  reg clk;
  reg [3:0] a, b;
  wire [7:0] p;
  integer i, failures;
  mul_reg #(.N(4)) uut (clk, a, b, p);
  always #5 clk = ~clk;
  initial begin
    clk = 0;
    failures = 0;
    for (i = 0; i < 40; i = i + 1) begin
      a = i % 16;
      b = (i * 7) % 16;
      @(posedge clk); #1;
      if (p !== a * b) begin
        failures = failures + 1;
        $display("Error at %0t: a = %0d, b = %0d, p = %0d, expected %0d", $time, a, b, p, a * b);
      end
    end
    if (failures == 0) $display("===========Your Design Passed===========");
    else $display("===========Test completed with %0d /40 failures===========", failures);
    $finish;
  end
endmodule
""",
    ),
    # A helper module first, a `timescale and a `default_nettype before it, a comment naming the design.
    ("Memory", "pair_buffer"): (
        """`timescale 1ns/1ns
`default_nettype none
// module pair_buffer keeps the last two bytes written; slot is its storage cell.
module slot (input wire clk, input wire en, input wire [7:0] d, output reg [7:0] q);
  always @(posedge clk) if (en) q <= d;
endmodule

module pair_buffer (
  input wire clk,
  input wire we,
  input wire [7:0] din,
  output wire [7:0] newest,
  output wire [7:0] older
);
  slot first (.clk(clk), .en(we), .d(din), .q(newest));
  slot second (.clk(clk), .en(we), .d(newest), .q(older));
endmodule
""",
        """`timescale 1ns/1ns
module tb_pair_buffer;
  reg clk, we;
  reg [7:0] din;
  wire [7:0] newest, older;
  integer i, errors;
  pair_buffer dut (.clk(clk), .we(we), .din(din), .newest(newest), .older(older));
  always #5 clk = ~clk;
  initial begin
    clk = 0; we = 1; errors = 0;
    for (i = 0; i < 20; i = i + 1) begin
      din = i * 3;
      @(posedge clk); #1;
      if (i > 0 && (newest !== i * 3 || older !== (i - 1) * 3)) errors = errors + 1;
    end
    if (errors == 0) $display("===========Your Design Passed===========");
    else $display("===========Error===========");
    $finish;
  end
endmodule
""",
    ),
    # The testbench reads a register inside the design: no wrapper can offer it.
    ("Control", "peek_counter"): (
        """module peek_counter (input clk, input rst, output [3:0] count);
  reg [3:0] count_q;
  always @(posedge clk) count_q <= rst ? 4'd0 : count_q + 4'd1;
  assign count = count_q;
endmodule
""",
        """`timescale 1ns/1ps
module tb_peek_counter;
  reg clk, rst;
  wire [3:0] count;
  integer errors;
  peek_counter uut (.clk(clk), .rst(rst), .count(count));
  always #5 clk = ~clk;
  initial begin
    clk = 0; rst = 1; errors = 0;
    @(posedge clk); #1 rst = 0;
    repeat (5) @(posedge clk);
    #1;
    if (uut.count_q !== 4'd5 || count !== 4'd5) errors = errors + 1;
    if (errors == 0) $display("===========Your Design Passed===========");
    else $display("===========Error===========");
    $finish;
  end
endmodule
""",
    ),
}


def write_designs(root: Path, names: set[str] | None = None) -> Path:
    for (category, design), (reference, bench) in DESIGNS.items():
        if names is not None and design not in names:
            continue
        folder = root / category / design
        folder.mkdir(parents=True)
        (folder / "design_description.txt").write_text(
            "Please act as a professional Verilog designer.\n\n"
            f"Implement the design described by its testbench.\n\nModule name:\n    {design}\n\n"
            "Give me the complete code.\n"
        )
        (folder / "testbench.v").write_text(bench)
        (folder / f"verified_{design}.v").write_text(reference)
    return root
