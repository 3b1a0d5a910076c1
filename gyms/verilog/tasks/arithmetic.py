"""Arithmetic tasks: adders, multipliers, an ALU, saturation, BCD, a MAC and a serial divider."""

from __future__ import annotations

import random

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset, comb, endless


def _signed(x: int, width: int) -> int:
    return x - (1 << width) if x >> (width - 1) else x


def _addsub(a: int, b: int, sub: int) -> dict[str, int]:
    operand = (~b & 0xFFFF) if sub else b
    full = a + operand + sub
    y = full & 0xFFFF
    sa, so, sy = a >> 15, operand >> 15, y >> 15
    return {"y": y, "carry": full >> 16, "overflow": int(sa == so and sy != sa)}


def _alu(op: int, a: int, b: int) -> dict[str, int]:
    y = [
        a + b,
        a - b,
        a & b,
        a | b,
        a ^ b,
        a << (b & 7),
        a >> (b & 7),
        int(_signed(a, 8) < _signed(b, 8)),
    ][op] & 0xFF
    return {"y": y, "zero": int(y == 0)}


def _sat_add(a: int, b: int) -> dict[str, int]:
    total = _signed(a, 8) + _signed(b, 8)
    clamped = max(-128, min(127, total))
    return {"y": clamped & 0xFF, "sat": int(clamped != total)}


def _bcd_vector(rng: random.Random) -> Inputs:
    return {"a": rng.randrange(10), "b": rng.randrange(10), "cin": rng.getrandbits(1)}


class Mac:
    def __init__(self) -> None:
        self.acc = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"] or i["clear"]:
            self.acc = 0
        elif i["en"]:
            self.acc = (self.acc + i["a"] * i["b"]) & 0xFFFFF
        return {"acc": self.acc}


def _mac_vector(rng: random.Random) -> Inputs:
    return {"clear": int(rng.random() < 0.03), "en": int(rng.random() < 0.7), "a": rng.getrandbits(8),
            "b": rng.getrandbits(8)}  # fmt: skip


class Divider:
    def __init__(self) -> None:
        self.busy = self.done = self.quotient = self.remainder = self.count = 0
        self.operands = (0, 0)

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.__init__()
        else:
            self.done = 0
            if not self.busy:
                if i["start"]:
                    self.busy, self.count, self.operands = 1, 0, (i["dividend"], i["divisor"])
            else:
                self.count += 1
                if self.count == 8:
                    n, d = self.operands
                    self.busy, self.done = 0, 1
                    self.quotient, self.remainder = (n // d, n % d) if d else (0xFF, n)
        return {"busy": self.busy, "done": self.done, "quotient": self.quotient, "remainder": self.remainder}


def _divider_vector(rng: random.Random) -> Inputs:
    divisor = 0 if rng.random() < 0.05 else rng.choice((rng.getrandbits(8), rng.randrange(1, 16)))
    return {"start": int(rng.random() < 0.3), "dividend": rng.getrandbits(8), "divisor": divisor}


TASKS = [
    DesignTask(
        name="adder8",
        category="arithmetic",
        difficulty="easy",
        spec="An 8-bit adder with carry: {cout, sum} = a + b + cin.",
        ports=(In("a", 8), In("b", 8), In("cin"), Out("sum", 8), Out("cout")),
        reference="""module TopModule (
  input [7:0] a,
  input [7:0] b,
  input cin,
  output [7:0] sum,
  output cout
);
  assign {cout, sum} = a + b + cin;
endmodule
""",
        model=comb(lambda a, b, cin: {"sum": (a + b + cin) & 0xFF, "cout": (a + b + cin) >> 8}),
    ),
    DesignTask(
        name="addsub16",
        category="arithmetic",
        difficulty="medium",
        spec="A 16-bit adder/subtractor. When `sub` is 0, `y = a + b`; when `sub` is 1, `y = a - b`, computed "
        "as a + ~b + 1. `carry` is the carry out of bit 15 of that addition (for a subtraction it is 1 when no "
        "borrow occurs, i.e. a >= b unsigned). `overflow` is 1 when the result is wrong as a two's-complement "
        "signed number.",
        ports=(In("a", 16), In("b", 16), In("sub"), Out("y", 16), Out("carry"), Out("overflow")),
        reference="""module TopModule (
  input [15:0] a,
  input [15:0] b,
  input sub,
  output [15:0] y,
  output carry,
  output overflow
);
  wire [15:0] operand = sub ? ~b : b;
  assign {carry, y} = {1'b0, a} + {1'b0, operand} + sub;
  assign overflow = (a[15] == operand[15]) && (y[15] != a[15]);
endmodule
""",
        model=comb(_addsub),
    ),
    DesignTask(
        name="multiplier8",
        category="arithmetic",
        difficulty="easy",
        spec="An unsigned 8x8 multiplier: `p` is the full 16-bit product of `a` and `b` (combinational).",
        ports=(In("a", 8), In("b", 8), Out("p", 16)),
        reference="""module TopModule (
  input [7:0] a,
  input [7:0] b,
  output reg [15:0] p
);
  integer k;
  always @* begin
    p = 16'd0;
    for (k = 0; k < 8; k = k + 1)
      if (b[k]) p = p + ({8'd0, a} << k);
  end
endmodule
""",
        model=comb(lambda a, b: {"p": a * b}),
    ),
    DesignTask(
        name="alu8",
        category="arithmetic",
        difficulty="medium",
        spec="An 8-bit ALU. By `op`: 0 a+b, 1 a-b, 2 a AND b, 3 a OR b, 4 a XOR b, 5 a shifted left by b[2:0], "
        "6 a shifted right (logical) by b[2:0], 7 set-less-than: 1 when a < b as signed numbers, else 0. "
        "Results are truncated to 8 bits. `zero` is 1 when `y` is 0.",
        ports=(In("op", 3), In("a", 8), In("b", 8), Out("y", 8), Out("zero")),
        reference="""module TopModule (
  input [2:0] op,
  input [7:0] a,
  input [7:0] b,
  output reg [7:0] y,
  output zero
);
  always @* begin
    case (op)
      3'd0: y = a + b;
      3'd1: y = a - b;
      3'd2: y = a & b;
      3'd3: y = a | b;
      3'd4: y = a ^ b;
      3'd5: y = a << b[2:0];
      3'd6: y = a >> b[2:0];
      default: y = {7'd0, $signed(a) < $signed(b)};
    endcase
  end
  assign zero = (y == 8'd0);
endmodule
""",
        model=comb(_alu),
    ),
    DesignTask(
        name="saturating_add8",
        category="arithmetic",
        difficulty="medium",
        spec="Signed saturating addition of two 8-bit two's-complement numbers: `y` is a + b clamped to the range "
        "-128..127, and `sat` is 1 when clamping happened.",
        ports=(In("a", 8), In("b", 8), Out("y", 8), Out("sat")),
        reference="""module TopModule (
  input [7:0] a,
  input [7:0] b,
  output [7:0] y,
  output sat
);
  wire [8:0] sum = {a[7], a} + {b[7], b};
  wire pos_ovf = (sum[8:7] == 2'b01);
  wire neg_ovf = (sum[8:7] == 2'b10);
  assign sat = pos_ovf | neg_ovf;
  assign y = pos_ovf ? 8'h7F : neg_ovf ? 8'h80 : sum[7:0];
endmodule
""",
        model=comb(_sat_add),
    ),
    DesignTask(
        name="abs_diff8",
        category="arithmetic",
        difficulty="easy",
        spec="The absolute difference of two unsigned 8-bit numbers: `y = |a - b|`.",
        ports=(In("a", 8), In("b", 8), Out("y", 8)),
        reference="""module TopModule (
  input [7:0] a,
  input [7:0] b,
  output [7:0] y
);
  assign y = (a > b) ? a - b : b - a;
endmodule
""",
        model=comb(lambda a, b: {"y": abs(a - b)}),
    ),
    DesignTask(
        name="bcd_digit_adder",
        category="arithmetic",
        difficulty="medium",
        spec="Add two BCD digits `a` and `b` (each 0..9) and a carry in `cin`: `s` is the ones digit of the "
        "decimal sum and `cout` is 1 when the sum is 10 or more. Inputs are always valid BCD digits.",
        ports=(In("a", 4), In("b", 4), In("cin"), Out("s", 4), Out("cout")),
        reference="""module TopModule (
  input [3:0] a,
  input [3:0] b,
  input cin,
  output [3:0] s,
  output cout
);
  wire [4:0] raw = a + b + cin;
  assign cout = (raw > 5'd9);
  assign s = cout ? raw - 5'd10 : raw[3:0];
endmodule
""",
        model=comb(lambda a, b, cin: {"s": (a + b + cin) % 10, "cout": int(a + b + cin >= 10)}),
        stimulus=endless(_bcd_vector),
    ),
    DesignTask(
        name="mac",
        category="arithmetic",
        difficulty="medium",
        spec="A multiply-accumulate unit with a 20-bit accumulator `acc`. On each rising clock edge: if `rst` "
        "or `clear` is 1, `acc` becomes 0; otherwise, if `en` is 1, `acc` becomes acc + a*b (unsigned, "
        "wrapping modulo 2^20); otherwise it holds. The reset is synchronous and active high.",
        ports=(In("clk"), In("rst"), In("clear"), In("en"), In("a", 8), In("b", 8), Out("acc", 20)),
        clock="clk",
        reset=Reset("rst"),
        reference="""module TopModule (
  input clk,
  input rst,
  input clear,
  input en,
  input [7:0] a,
  input [7:0] b,
  output reg [19:0] acc
);
  always @(posedge clk) begin
    if (rst || clear) acc <= 20'd0;
    else if (en) acc <= acc + a * b;
  end
endmodule
""",
        model=Mac,
        stimulus=endless(_mac_vector),
    ),
    DesignTask(
        name="serial_divider8",
        category="arithmetic",
        difficulty="hard",
        spec="A multi-cycle unsigned 8-bit divider. Reset (`rst`, synchronous, active high) clears every "
        "output to 0. When `busy` is 0 and `start` is 1 at a rising edge, the divider captures `dividend` and "
        "`divisor` and `busy` becomes 1 (`start` is ignored while busy). On the 8th rising edge after the "
        "one that captured the operands, `busy` returns to 0, `done` is 1 for exactly that one cycle, and "
        "`quotient` and `remainder` take the result. They keep the result of the last completed division "
        "until the next one completes. Dividing by zero gives quotient 8'hFF and remainder = dividend.",
        ports=(In("clk"), In("rst"), In("start"), In("dividend", 8), In("divisor", 8), Out("busy"), Out("done"),
               Out("quotient", 8), Out("remainder", 8)),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input start,
  input [7:0] dividend,
  input [7:0] divisor,
  output reg busy,
  output reg done,
  output reg [7:0] quotient,
  output reg [7:0] remainder
);
  reg [2:0] count;
  reg [7:0] dvsr;
  reg [7:0] q;
  reg [7:0] r;
  wire [8:0] r_shift = {r, q[7]};
  wire [8:0] diff = r_shift - {1'b0, dvsr};
  wire [7:0] q_next = {q[6:0], ~diff[8]};
  wire [7:0] r_next = diff[8] ? r_shift[7:0] : diff[7:0];
  always @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      done <= 1'b0;
      quotient <= 8'd0;
      remainder <= 8'd0;
      count <= 3'd0;
    end else begin
      done <= 1'b0;
      if (!busy) begin
        if (start) begin
          busy <= 1'b1;
          count <= 3'd0;
          dvsr <= divisor;
          q <= dividend;
          r <= 8'd0;
        end
      end else begin
        q <= q_next;
        r <= r_next;
        count <= count + 3'd1;
        if (count == 3'd7) begin
          busy <= 1'b0;
          done <= 1'b1;
          quotient <= q_next;
          remainder <= r_next;
        end
      end
    end
  end
endmodule
""",
        model=Divider,
        stimulus=endless(_divider_vector),
    ),
]
