"""Combinational tasks: muxes, encoders, code converters, shifters."""

from __future__ import annotations

import random

from gyms.verilog.spec import DesignTask, In, Out, comb, endless

# seven_seg: segments {g,f,e,d,c,b,a} lit for each hex digit (1 = on).
SEGMENTS = {
    0x0: "abcdef", 0x1: "bc", 0x2: "abdeg", 0x3: "abcdg", 0x4: "bcfg", 0x5: "acdfg", 0x6: "acdefg",
    0x7: "abc", 0x8: "abcdefg", 0x9: "abcdfg", 0xA: "abcefg", 0xB: "cdefg", 0xC: "adef", 0xD: "bcdeg",
    0xE: "adefg", 0xF: "aefg",
}  # fmt: skip


def _seg_code(digit: int) -> int:
    return sum(1 << "abcdefg".index(s) for s in SEGMENTS[digit])


def _lzc(x: int) -> int:
    return 16 - x.bit_length()


def _signed(x: int, width: int) -> int:
    return x - (1 << width) if x >> (width - 1) else x


def _gray_to_bin(g: int) -> int:
    b = 0
    while g:
        b ^= g
        g >>= 1
    return b


def _compare_vector(rng: random.Random) -> dict[str, int]:
    a = rng.getrandbits(8)
    b = a if rng.random() < 0.15 else rng.getrandbits(8)  # equal operands often enough
    return {"a": a, "b": b, "is_signed": rng.getrandbits(1)}


def _compare(a: int, b: int, is_signed: int) -> dict[str, int]:
    x, y = (_signed(a, 8), _signed(b, 8)) if is_signed else (a, b)
    return {"lt": int(x < y), "eq": int(x == y), "gt": int(x > y)}


TASKS = [
    DesignTask(
        name="mux4",
        category="combinational",
        difficulty="easy",
        spec="A 4-to-1 multiplexer of 8-bit buses: `y` is `d0` when `sel` is 0, `d1` when 1, `d2` when 2 "
        "and `d3` when 3.",
        ports=(In("sel", 2), In("d0", 8), In("d1", 8), In("d2", 8), In("d3", 8), Out("y", 8)),
        reference="""module TopModule (
  input [1:0] sel,
  input [7:0] d0, d1, d2, d3,
  output reg [7:0] y
);
  always @* begin
    case (sel)
      2'd0: y = d0;
      2'd1: y = d1;
      2'd2: y = d2;
      default: y = d3;
    endcase
  end
endmodule
""",
        model=comb(lambda sel, d0, d1, d2, d3: {"y": (d0, d1, d2, d3)[sel]}),
    ),
    DesignTask(
        name="priority_encoder8",
        category="combinational",
        difficulty="easy",
        spec="An 8-bit priority encoder: `idx` is the index of the most significant 1 bit of `in_bits` and "
        "`valid` is 1. When `in_bits` is zero, `valid` is 0 and `idx` is 0.",
        ports=(In("in_bits", 8), Out("idx", 3), Out("valid")),
        reference="""module TopModule (
  input [7:0] in_bits,
  output reg [2:0] idx,
  output valid
);
  integer k;
  assign valid = |in_bits;
  always @* begin
    idx = 3'd0;
    for (k = 0; k < 8; k = k + 1)
      if (in_bits[k]) idx = k[2:0];
  end
endmodule
""",
        model=comb(lambda in_bits: {"idx": max(in_bits.bit_length() - 1, 0), "valid": int(in_bits != 0)}),
    ),
    DesignTask(
        name="decoder3to8",
        category="combinational",
        difficulty="easy",
        spec="A 3-to-8 decoder with enable: when `en` is 1, exactly bit `a` of `y` is 1; when `en` is 0, "
        "`y` is all zeros.",
        ports=(In("en"), In("a", 3), Out("y", 8)),
        reference="""module TopModule (
  input en,
  input [2:0] a,
  output [7:0] y
);
  assign y = en ? (8'b1 << a) : 8'b0;
endmodule
""",
        model=comb(lambda en, a: {"y": (1 << a) if en else 0}),
    ),
    DesignTask(
        name="popcount16",
        category="combinational",
        difficulty="easy",
        spec="Count the 1 bits of the 16-bit input `x`; `count` is that number (0 to 16).",
        ports=(In("x", 16), Out("count", 5)),
        reference="""module TopModule (
  input [15:0] x,
  output reg [4:0] count
);
  integer k;
  always @* begin
    count = 5'd0;
    for (k = 0; k < 16; k = k + 1)
      count = count + x[k];
  end
endmodule
""",
        model=comb(lambda x: {"count": bin(x).count("1")}),
    ),
    DesignTask(
        name="gray_codec",
        category="combinational",
        difficulty="easy",
        spec="Two independent 8-bit converters: `gray` is the reflected binary Gray code of `bin`, and "
        "`bin_out` is the binary value whose Gray code is `gray_in`.",
        ports=(In("bin", 8), In("gray_in", 8), Out("gray", 8), Out("bin_out", 8)),
        reference="""module TopModule (
  input [7:0] bin,
  input [7:0] gray_in,
  output [7:0] gray,
  output reg [7:0] bin_out
);
  integer k;
  assign gray = bin ^ (bin >> 1);
  always @* begin
    bin_out[7] = gray_in[7];
    for (k = 6; k >= 0; k = k - 1)
      bin_out[k] = bin_out[k + 1] ^ gray_in[k];
  end
endmodule
""",
        model=comb(lambda bin, gray_in: {"gray": bin ^ (bin >> 1), "bin_out": _gray_to_bin(gray_in)}),
    ),
    DesignTask(
        name="seven_seg",
        category="combinational",
        difficulty="medium",
        spec="A hexadecimal seven-segment decoder with active-high segments. `seg` is {g,f,e,d,c,b,a} "
        "(bit 0 is segment a, bit 6 is segment g). The lit segments per digit are: "
        + "; ".join(f"{d:X}: {s}" for d, s in SEGMENTS.items())
        + ".",
        ports=(In("hex", 4), Out("seg", 7)),
        reference="""module TopModule (
  input [3:0] hex,
  output reg [6:0] seg
);
  always @* begin
    case (hex)
      4'h0: seg = 7'b0111111;
      4'h1: seg = 7'b0000110;
      4'h2: seg = 7'b1011011;
      4'h3: seg = 7'b1001111;
      4'h4: seg = 7'b1100110;
      4'h5: seg = 7'b1101101;
      4'h6: seg = 7'b1111101;
      4'h7: seg = 7'b0000111;
      4'h8: seg = 7'b1111111;
      4'h9: seg = 7'b1101111;
      4'hA: seg = 7'b1110111;
      4'hB: seg = 7'b1111100;
      4'hC: seg = 7'b0111001;
      4'hD: seg = 7'b1011110;
      4'hE: seg = 7'b1111001;
      default: seg = 7'b1110001;
    endcase
  end
endmodule
""",
        model=comb(lambda hex: {"seg": _seg_code(hex)}),
        vectors=64,
    ),
    DesignTask(
        name="rotator16",
        category="combinational",
        difficulty="medium",
        spec="A 16-bit barrel rotator: `y` is `data` rotated by `amt` positions, to the left when `right` is 0 "
        "and to the right when `right` is 1. Bits shifted out at one end come back in at the other.",
        ports=(In("data", 16), In("amt", 4), In("right"), Out("y", 16)),
        reference="""module TopModule (
  input [15:0] data,
  input [3:0] amt,
  input right,
  output [15:0] y
);
  wire [31:0] doubled = {data, data};
  wire [31:0] left_rot = doubled << amt;
  wire [31:0] right_rot = doubled >> amt;
  assign y = right ? right_rot[15:0] : left_rot[31:16];
endmodule
""",
        model=comb(
            lambda data, amt, right: {
                "y": ((data >> amt) | (data << (16 - amt))) & 0xFFFF if right
                else ((data << amt) | (data >> (16 - amt))) & 0xFFFF
            }
        ),
    ),
    DesignTask(
        name="leading_zeros16",
        category="combinational",
        difficulty="medium",
        spec="Count the leading zeros of the 16-bit input `x`: `count` is the number of 0 bits above the most "
        "significant 1 bit (16 when `x` is zero), and `zero` is 1 exactly when `x` is zero.",
        ports=(In("x", 16), Out("count", 5), Out("zero")),
        reference="""module TopModule (
  input [15:0] x,
  output reg [4:0] count,
  output zero
);
  integer k;
  reg found;
  assign zero = (x == 16'd0);
  always @* begin
    count = 5'd0;
    found = 1'b0;
    for (k = 15; k >= 0; k = k - 1) begin
      if (x[k]) found = 1'b1;
      else if (!found) count = count + 5'd1;
    end
  end
endmodule
""",
        model=comb(lambda x: {"count": _lzc(x), "zero": int(x == 0)}),
        # Spread the leading one over all positions, not just the top bits of uniform values.
        stimulus=endless(lambda rng: {"x": rng.getrandbits(16) >> rng.randrange(17)}),
    ),
    DesignTask(
        name="compare8",
        category="combinational",
        difficulty="easy",
        spec="Compare two 8-bit numbers. When `is_signed` is 1 both are two's-complement signed, otherwise "
        "unsigned. Exactly one of `lt` (a < b), `eq` (a == b) and `gt` (a > b) is 1.",
        ports=(In("a", 8), In("b", 8), In("is_signed"), Out("lt"), Out("eq"), Out("gt")),
        reference="""module TopModule (
  input [7:0] a,
  input [7:0] b,
  input is_signed,
  output lt,
  output eq,
  output gt
);
  wire less = is_signed ? ($signed(a) < $signed(b)) : (a < b);
  assign eq = (a == b);
  assign lt = less;
  assign gt = !less && !eq;
endmodule
""",
        model=comb(lambda a, b, is_signed: _compare(a, b, is_signed)),
        stimulus=endless(_compare_vector),
    ),
    DesignTask(
        name="bin_to_bcd",
        category="combinational",
        difficulty="medium",
        spec="Convert the 8-bit unsigned `bin` (0..255) to three BCD digits: `bcd[11:8]` hundreds, "
        "`bcd[7:4]` tens, `bcd[3:0]` ones.",
        ports=(In("bin", 8), Out("bcd", 12)),
        reference="""module TopModule (
  input [7:0] bin,
  output reg [11:0] bcd
);
  integer k;
  always @* begin
    bcd = 12'd0;
    for (k = 7; k >= 0; k = k - 1) begin
      if (bcd[3:0] >= 4'd5) bcd[3:0] = bcd[3:0] + 4'd3;
      if (bcd[7:4] >= 4'd5) bcd[7:4] = bcd[7:4] + 4'd3;
      if (bcd[11:8] >= 4'd5) bcd[11:8] = bcd[11:8] + 4'd3;
      bcd = {bcd[10:0], bin[k]};
    end
  end
endmodule
""",
        model=comb(lambda bin: {"bcd": (bin // 100) << 8 | (bin // 10 % 10) << 4 | bin % 10}),
    ),
]

