"""Heavy suite: arithmetic datapaths (a 16-tap FIR filter, a sequential multiply/divide unit, a
4x4 matrix-vector MAC unit, a pipelined sorting network)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset

M32 = 0xFFFFFFFF


def _sx(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# -- FIR --------------------------------------------------------------------------------------

TAPS = 16


class Fir:
    def __init__(self) -> None:
        self.coef = [0] * TAPS
        self.line = [0] * TAPS
        self.y, self.valid = 0, 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.__init__()
        else:
            coef = list(self.coef)
            self.valid = i["in_valid"]
            if i["in_valid"]:
                self.line = [_sx(i["x"], 16)] + self.line[:-1]
                self.y = sum(c * x for c, x in zip(coef, self.line)) & ((1 << 36) - 1)
            if i["coef_we"]:
                self.coef[i["coef_idx"]] = _sx(i["coef"], 16)
        return {"y": self.y, "out_valid": self.valid}


def _fir_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Coefficient sets (impulse, ramps, random, extreme values) loaded in bursts, then sample
    streams: sine-like waves, noise, full-scale steps, with gaps in `in_valid`."""
    while True:
        kind = rng.randrange(4)
        coefs = [[rng.getrandbits(16) for _ in range(TAPS)], [0x7FFF if k % 2 else 0x8000 for k in range(TAPS)],
                 [(k * 1000) & 0xFFFF for k in range(TAPS)], [1 << rng.randrange(15) if k == rng.randrange(TAPS) else 0
                                                             for k in range(TAPS)]][kind]  # fmt: skip
        for k in rng.sample(range(TAPS), rng.choice((TAPS, rng.randint(1, TAPS)))):
            yield {"coef_we": 1, "coef_idx": k, "coef": coefs[k], "in_valid": int(rng.random() < 0.5),
                   "x": rng.getrandbits(16)}  # fmt: skip
        density = rng.choice((1.0, 0.8, 0.3))
        phase, speed = rng.random(), rng.choice((1, 3, 7, 50))
        for n in range(rng.randint(100, 2000)):
            roll = rng.random()
            if roll < 0.4:
                x = int(30000 * ((n * speed + phase * 1000) % 1000 / 500 - 1)) & 0xFFFF
            elif roll < 0.8:
                x = rng.getrandbits(16)
            else:
                x = rng.choice((0x7FFF, 0x8000, 0, 0xFFFF))
            yield {"coef_we": int(rng.random() < 0.003), "coef_idx": rng.randrange(TAPS), "coef": rng.getrandbits(16),
                   "in_valid": int(rng.random() < density), "x": x}  # fmt: skip


FIR_SPEC = """\
A 16-tap FIR filter with programmable coefficients: signed 16-bit samples `x`, signed 16-bit
coefficients c[0..15], a signed 36-bit output `y` (two's complement).

At each rising edge (`rst`: synchronous, active high; coefficients, delay line, `y` and
`out_valid` all 0):
  - if `in_valid` is 1, the delay line shifts: d[0] = `x`, d[k] = old d[k-1] (k = 1..15), and
    `y` = sum over k of c[k] * d[k] using the new delay line and the coefficients as they were
    before this edge (exact, no rounding: it fits in 36 bits); with `in_valid` = 0 the delay
    line and `y` hold;
  - `out_valid` = `in_valid` (registered: 1 in the cycle after a sample was taken);
  - if `coef_we` is 1, c[`coef_idx`] = `coef` (used from the next sample on).
"""

FIR_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input coef_we,
  input [3:0] coef_idx,
  input [15:0] coef,
  input in_valid,
  input [15:0] x,
  output reg [35:0] y,
  output reg out_valid
);
  reg signed [15:0] c [0:15];
  reg signed [15:0] d [0:15];
  reg signed [35:0] acc;
  integer k;
  always @* begin
    acc = c[0] * $signed(x);
    for (k = 1; k < 16; k = k + 1) acc = acc + c[k] * d[k - 1];
  end
  always @(posedge clk) begin
    if (rst) begin
      for (k = 0; k < 16; k = k + 1) begin
        c[k] <= 16'sd0;
        d[k] <= 16'sd0;
      end
      y <= 36'd0;
      out_valid <= 1'b0;
    end else begin
      out_valid <= in_valid;
      if (in_valid) begin
        d[0] <= x;
        for (k = 1; k < 16; k = k + 1) d[k] <= d[k - 1];
        y <= acc;
      end
      if (coef_we) c[coef_idx] <= coef;
    end
  end
endmodule
"""

# -- multiply / divide ------------------------------------------------------------------------


class MulDiv:
    def __init__(self) -> None:
        self.busy, self.done, self.result, self.n = 0, 0, 0, 0
        self.pending = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.__init__()
            return {"busy": 0, "done": 0, "result": 0}
        self.done = 0
        if self.busy:
            if self.n == 31:
                self.busy, self.done, self.result = 0, 1, self.pending
            else:
                self.n += 1
        elif i["start"]:
            a, b, op = i["a"], i["b"], i["op"]
            if op == 0:
                value = a * b & M32
            elif op == 1:
                value = (a * b) >> 32
            elif op == 2:
                value = a // b if b else M32
            else:
                value = a % b if b else a
            self.busy, self.n, self.pending = 1, 0, value
        return {"busy": self.busy, "done": self.done, "result": self.result}


def _muldiv_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Operations back to back or spaced, operands drawn from corner cases (0, 1, all ones, powers
    of two, small divisors, a divisor larger than the dividend) as well as uniformly."""

    def operand() -> int:
        roll = rng.random()
        if roll < 0.5:
            return rng.getrandbits(32)
        if roll < 0.7:
            return rng.getrandbits(rng.randint(1, 31))
        if roll < 0.85:
            return rng.choice((0, 1, 2, M32, 0x80000000, 0x7FFFFFFF))
        return 1 << rng.randrange(32)

    while True:
        start = {"start": 1, "op": rng.randrange(4), "a": operand(), "b": operand()}
        for _ in range(rng.choice((1, 1, 3))):
            yield start
        for _ in range(rng.choice((31, 32, 33, rng.randint(0, 40)))):
            yield {"start": int(rng.random() < 0.2), "op": rng.randrange(4), "a": rng.getrandbits(32),
                   "b": rng.getrandbits(32)}  # fmt: skip


MULDIV_SPEC = """\
A sequential 32-bit multiply/divide unit: shift-and-add multiplication and restoring division,
one bit per clock cycle, for unsigned operands.

`op` selects: 0 MUL (low 32 bits of a*b), 1 MULHU (high 32 bits of the 64-bit product a*b),
2 DIVU (a / b, rounded down), 3 REMU (a mod b). Division by zero gives DIVU = 32'hFFFFFFFF and
REMU = a (as RISC-V specifies).

At each rising edge (`rst`: synchronous, active high; `busy` = `done` = 0, `result` = 0):
  - idle and `start` = 1: the unit latches `op`, `a` and `b` and is busy for the next 32 edges
    (`start` while busy is ignored);
  - at the 32nd busy edge the operation finishes: `result` takes its value, `busy` drops and
    `done` is 1 for that one cycle. `result` holds until the next operation finishes.
So an operation started at edge k shows `done` = 1 and its `result` after edge k+32.
"""

MULDIV_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input start,
  input [1:0] op,
  input [31:0] a,
  input [31:0] b,
  output reg busy,
  output reg done,
  output reg [31:0] result
);
  reg [1:0] r_op;
  reg [4:0] n;
  reg [63:0] prod;
  reg [31:0] mcand;
  reg [31:0] divisor;
  reg [31:0] quot;
  reg [32:0] rem;
  wire [32:0] upper = {1'b0, prod[63:32]} + {1'b0, mcand};
  wire [63:0] prod_next = prod[0] ? {upper, prod[31:1]} : {1'b0, prod[63:1]};
  wire [32:0] rem_shift = {rem[31:0], quot[31]};
  wire [32:0] rem_sub = rem_shift - {1'b0, divisor};
  wire rem_ge = !rem_sub[32];
  wire [32:0] rem_next = rem_ge ? rem_sub : rem_shift;
  wire [31:0] quot_next = {quot[30:0], rem_ge};
  always @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      done <= 1'b0;
      result <= 32'd0;
      n <= 5'd0;
    end else begin
      done <= 1'b0;
      if (busy) begin
        if (r_op[1]) begin
          rem <= rem_next;
          quot <= quot_next;
        end else begin
          prod <= prod_next;
        end
        if (n == 5'd31) begin
          busy <= 1'b0;
          done <= 1'b1;
          case (r_op)
            2'd0: result <= prod_next[31:0];
            2'd1: result <= prod_next[63:32];
            2'd2: result <= quot_next;
            default: result <= rem_next[31:0];
          endcase
        end else n <= n + 5'd1;
      end else if (start) begin
        busy <= 1'b1;
        n <= 5'd0;
        r_op <= op;
        prod <= {32'd0, b};
        mcand <= a;
        quot <= a;
        rem <= 33'd0;
        divisor <= b;
      end
    end
  end
endmodule
"""

# -- matrix-vector MAC ------------------------------------------------------------------------

M24 = (1 << 24) - 1


class MatVec:
    def __init__(self) -> None:
        self.w = [0] * 16
        self.acc = [0] * 4
        self.count = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.__init__()
        else:
            w = list(self.w)
            if i["clear"]:
                self.acc = [0] * 4
            if i["x_valid"]:
                x = [_sx(i["x"] >> (8 * k), 8) for k in range(4)]
                for j in range(4):
                    self.acc[j] = (self.acc[j] + sum(w[4 * j + k] * x[k] for k in range(4))) & M24
                self.count = (self.count + 1) & 0xFF
            if i["w_we"]:
                self.w[i["w_idx"]] = _sx(i["w_data"], 8)
        y = sum(a << (24 * j) for j, a in enumerate(self.acc))
        return {"y": y, "count": self.count}


def _matvec_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Weight matrices (random, identity, extreme, sparse) loaded, then vector streams of random
    length accumulated and cleared, with a few weight updates in flight."""
    while True:
        kind = rng.randrange(4)
        for idx in range(16):
            value = [rng.getrandbits(8), 1 if idx % 5 == 0 else 0, rng.choice((0x7F, 0x80)),
                     rng.getrandbits(8) if rng.random() < 0.2 else 0][kind]  # fmt: skip
            yield {"w_we": 1, "w_idx": idx, "w_data": value, "clear": int(idx == 15), "x_valid": 0,
                   "x": rng.getrandbits(32)}  # fmt: skip
        for _ in range(rng.randint(20, 400)):
            x = rng.getrandbits(32) if rng.random() < 0.8 else rng.choice((0x7F7F7F7F, 0x80808080, 0x807F807F))
            yield {"w_we": int(rng.random() < 0.01), "w_idx": rng.randrange(16), "w_data": rng.getrandbits(8),
                   "clear": int(rng.random() < 0.02), "x_valid": int(rng.random() < 0.85), "x": x}  # fmt: skip


MATVEC_SPEC = """\
A 4x4 matrix-vector multiply-accumulate unit. It holds a matrix W of signed 8-bit weights
W[j][k] (j = row, k = column; weight index `w_idx` = 4*j + k) and four 24-bit accumulators
acc[0..3] (two's complement, wrapping). The input vector `x` packs four signed 8-bit elements:
x[k] = `x[8k+7:8k]`. The output `y` packs the accumulators: `y[24j+23:24j]` = acc[j].

At each rising edge (`rst`: synchronous, active high; W, the accumulators and `count` all 0):
  - if `clear` is 1, the accumulators are first set to 0;
  - then, if `x_valid` is 1, acc[j] += sum over k of W[j][k] * x[k] for every row j (the
    weights as they were before this edge), and `count` (8 bits, wrapping) increments;
  - if `w_we` is 1, W[`w_idx`] = `w_data` (used from the next edge on).
So `clear` and `x_valid` together start a new sum with this vector.
"""

MATVEC_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input w_we,
  input [3:0] w_idx,
  input [7:0] w_data,
  input clear,
  input x_valid,
  input [31:0] x,
  output [95:0] y,
  output reg [7:0] count
);
  reg signed [7:0] w [0:15];
  reg [23:0] acc [0:3];
  reg signed [23:0] dot [0:3];
  integer j, k;
  always @* begin
    for (j = 0; j < 4; j = j + 1) begin
      dot[j] = 24'sd0;
      for (k = 0; k < 4; k = k + 1) dot[j] = dot[j] + w[4*j + k] * $signed(x[8*k +: 8]);
    end
  end
  assign y = {acc[3], acc[2], acc[1], acc[0]};
  always @(posedge clk) begin
    if (rst) begin
      for (j = 0; j < 16; j = j + 1) w[j] <= 8'sd0;
      for (j = 0; j < 4; j = j + 1) acc[j] <= 24'd0;
      count <= 8'd0;
    end else begin
      for (j = 0; j < 4; j = j + 1) begin
        if (x_valid) acc[j] <= (clear ? 24'd0 : acc[j]) + dot[j];
        else if (clear) acc[j] <= 24'd0;
      end
      if (x_valid) count <= count + 8'd1;
      if (w_we) w[w_idx] <= w_data;
    end
  end
endmodule
"""

# -- sorting network --------------------------------------------------------------------------


class Sorter:
    def __init__(self) -> None:
        self.stages: list[tuple[int, int]] = [(0, 0), (0, 0), (0, 0)]

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.__init__()
        else:
            keys = sorted((i["keys"] >> (8 * k)) & 0xFF for k in range(8))
            if i["descending"]:
                keys.reverse()
            packed = sum(key << (8 * k) for k, key in enumerate(keys))
            self.stages = [(i["in_valid"], packed), *self.stages[:2]]
        valid, packed = self.stages[2]
        return {"out_valid": valid, "sorted": packed if valid else None}


def _sorter_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Random keys, many duplicates, already sorted and reversed inputs, in bursts with gaps."""
    while True:
        density = rng.choice((1.0, 0.6, 0.1))
        for _ in range(rng.randint(20, 300)):
            roll = rng.random()
            if roll < 0.5:
                keys = [rng.getrandbits(8) for _ in range(8)]
            elif roll < 0.75:
                keys = [rng.choice((0, 1, 0xFF, 0x80)) for _ in range(8)]
            else:
                keys = sorted(rng.getrandbits(8) for _ in range(8))
                if roll < 0.87:
                    keys.reverse()
            yield {"in_valid": int(rng.random() < density), "descending": rng.getrandbits(1),
                   "keys": sum(key << (8 * k) for k, key in enumerate(keys))}  # fmt: skip


SORTER_SPEC = """\
A pipelined sorting network for eight 8-bit unsigned keys with a latency of three clock cycles
and a throughput of one set per cycle.

The input `keys` packs key k in `keys[8k+7:8k]` (k = 0..7). The set taken at rising edge n
(with its `in_valid` and `descending` bits) appears on the outputs after rising edge n + 2:
`out_valid` = that `in_valid`, and `sorted` = the same eight keys in ascending order
(`sorted[7:0]` the smallest) when `descending` was 0, or in descending order (`sorted[7:0]` the
largest) when it was 1. `sorted` is a don't-care while `out_valid` is 0. `rst` (synchronous,
active high) empties the pipeline (`out_valid` = 0 for the next outputs until new sets arrive).
Implement it as a compare-exchange network (e.g. odd-even merge sort or bitonic sort) split
over three register stages.
"""

SORTER_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input in_valid,
  input descending,
  input [63:0] keys,
  output reg out_valid,
  output reg [63:0] sorted
);
  // Odd-even transposition sort: rounds 0-2 before stage 1, 3-5 before stage 2, 6-7 before the
  // output register. Stages are packed vectors, so each block wakes once per cycle.
  reg [63:0] s1, s2, n1, n2, n3;
  reg [7:0] lo1, hi1, lo2, hi2, lo3, hi3;
  reg v1, v2, d1, d2;
  integer p1, r1, p2, r2, p3, r3, q;

  always @* begin
    n1 = keys;
    for (r1 = 0; r1 < 3; r1 = r1 + 1)
      for (p1 = r1 % 2; p1 < 7; p1 = p1 + 2) begin
        lo1 = n1[8*p1 +: 8];
        hi1 = n1[8*p1 + 8 +: 8];
        if (lo1 > hi1) begin n1[8*p1 +: 8] = hi1; n1[8*p1 + 8 +: 8] = lo1; end
      end
  end
  always @* begin
    n2 = s1;
    for (r2 = 3; r2 < 6; r2 = r2 + 1)
      for (p2 = r2 % 2; p2 < 7; p2 = p2 + 2) begin
        lo2 = n2[8*p2 +: 8];
        hi2 = n2[8*p2 + 8 +: 8];
        if (lo2 > hi2) begin n2[8*p2 +: 8] = hi2; n2[8*p2 + 8 +: 8] = lo2; end
      end
  end
  always @* begin
    n3 = s2;
    for (r3 = 6; r3 < 8; r3 = r3 + 1)
      for (p3 = r3 % 2; p3 < 7; p3 = p3 + 2) begin
        lo3 = n3[8*p3 +: 8];
        hi3 = n3[8*p3 + 8 +: 8];
        if (lo3 > hi3) begin n3[8*p3 +: 8] = hi3; n3[8*p3 + 8 +: 8] = lo3; end
      end
  end

  always @(posedge clk) begin
    if (rst) begin
      v1 <= 1'b0;
      v2 <= 1'b0;
      out_valid <= 1'b0;
    end else begin
      v1 <= in_valid;
      d1 <= descending;
      v2 <= v1;
      d2 <= d1;
      out_valid <= v2;
      s1 <= n1;
      s2 <= n2;
      for (q = 0; q < 8; q = q + 1) sorted[8*q +: 8] <= d2 ? n3[8*(7 - q) +: 8] : n3[8*q +: 8];
    end
  end
endmodule
"""

TASKS = [
    DesignTask(
        name="fir16",
        category="heavy",
        difficulty="medium",
        spec=FIR_SPEC,
        ports=(In("clk"), In("rst"), In("coef_we"), In("coef_idx", 4), In("coef", 16), In("in_valid"), In("x", 16),
               Out("y", 36), Out("out_valid")),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.0005),
        model=Fir,
        stimulus=_fir_stimulus,
        vectors=150_000,
        cycle_cost_us=20,
        reference=FIR_REFERENCE,
    ),
    DesignTask(
        name="muldiv32",
        category="heavy",
        difficulty="hard",
        spec=MULDIV_SPEC,
        ports=(In("clk"), In("rst"), In("start"), In("op", 2), In("a", 32), In("b", 32), Out("busy"), Out("done"),
               Out("result", 32)),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.0005),
        model=MulDiv,
        stimulus=_muldiv_stimulus,
        vectors=200_000,
        cycle_cost_us=7,
        reference=MULDIV_REFERENCE,
    ),
    DesignTask(
        name="matvec4_mac",
        category="heavy",
        difficulty="medium",
        spec=MATVEC_SPEC,
        ports=(In("clk"), In("rst"), In("w_we"), In("w_idx", 4), In("w_data", 8), In("clear"), In("x_valid"),
               In("x", 32), Out("y", 96), Out("count", 8)),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.0005),
        model=MatVec,
        stimulus=_matvec_stimulus,
        vectors=150_000,
        cycle_cost_us=35,
        reference=MATVEC_REFERENCE,
    ),
    DesignTask(
        name="sort8_pipeline",
        category="heavy",
        difficulty="medium",
        spec=SORTER_SPEC,
        ports=(In("clk"), In("rst"), In("in_valid"), In("descending"), In("keys", 64), Out("out_valid"),
               Out("sorted", 64)),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.0005),
        model=Sorter,
        stimulus=_sorter_stimulus,
        vectors=100_000,
        cycle_cost_us=95,
        reference=SORTER_REFERENCE,
    ),
]
