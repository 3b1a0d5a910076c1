"""Sequential tasks: counters, shift registers, LFSR, CRC, edge detection, debouncing, PWM."""

from __future__ import annotations

import random
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset, endless


class Mod10Counter:
    def __init__(self) -> None:
        self.count = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.count = 0
        elif i["en"]:
            self.count = (self.count + 1) % 10
        return {"count": self.count, "tc": int(self.count == 9)}


class UpDown:
    def __init__(self) -> None:
        self.q = 0

    def step(self, i: Inputs) -> Outputs:
        if not i["rst_n"]:
            self.q = 0
        elif i["load"]:
            self.q = i["d"]
        elif i["en"]:
            self.q = (self.q + (1 if i["up"] else -1)) & 0xFF
        return {"q": self.q}


class Sipo:
    def __init__(self) -> None:
        self.q = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.q = 0
        elif i["shift_en"]:
            self.q = ((self.q << 1) | i["sin"]) & 0xFF
        return {"q": self.q}


class EdgeDetect:
    def __init__(self) -> None:
        self.prev = self.rise = self.fall = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.prev = self.rise = self.fall = 0
        else:
            s = i["sig"]
            self.rise, self.fall, self.prev = int(s and not self.prev), int(self.prev and not s), s
        return {"rise": self.rise, "fall": self.fall}


def _held(rng: random.Random, longest: int) -> Iterator[int]:
    """A 1-bit signal that holds each value for 1..`longest` cycles."""
    while True:
        value = rng.getrandbits(1)
        for _ in range(rng.randint(1, longest)):
            yield value


def _edge_stimulus(rng: random.Random) -> Iterator[Inputs]:
    for sig in _held(rng, 4):
        yield {"sig": sig}


LFSR_RESET = 0xACE1


class Lfsr:
    def __init__(self) -> None:
        self.q = LFSR_RESET

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.q = LFSR_RESET
        elif i["load"]:
            self.q = i["seed"]
        elif i["en"]:
            q = self.q
            feedback = (q >> 15 ^ q >> 13 ^ q >> 12 ^ q >> 10) & 1
            self.q = ((q << 1) | feedback) & 0xFFFF
        return {"q": self.q}


def _lfsr_vector(rng: random.Random) -> Inputs:
    return {"load": int(rng.random() < 0.05), "en": int(rng.random() < 0.8), "seed": rng.getrandbits(16)}


class Debouncer:
    def __init__(self) -> None:
        self.clean = self.count = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.clean = self.count = 0
        elif i["noisy"] == self.clean:
            self.count = 0
        elif self.count == 3:
            self.clean, self.count = i["noisy"], 0
        else:
            self.count += 1
        return {"clean": self.clean}


def _debounce_stimulus(rng: random.Random) -> Iterator[Inputs]:
    for noisy in _held(rng, 8):
        yield {"noisy": noisy}


class Pwm:
    def __init__(self) -> None:
        self.cnt = 0

    def step(self, i: Inputs) -> Outputs:
        self.cnt = 0 if i["rst"] else (self.cnt + 1) & 0xFF
        return {"cnt": self.cnt, "pwm": int(self.cnt < i["duty"])}


def _pwm_stimulus(rng: random.Random) -> Iterator[Inputs]:
    duty = 0
    while True:
        if rng.random() < 0.05:
            duty = rng.choice((0, 255, rng.getrandbits(8)))
        yield {"duty": duty}


class Ticker:
    def __init__(self) -> None:
        self.count = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"] or self.count >= i["period"]:
            self.count = 0
        else:
            self.count += 1
        return {"count": self.count, "tick": int(self.count >= i["period"])}


def _ticker_stimulus(rng: random.Random) -> Iterator[Inputs]:
    period = 3
    while True:
        if rng.random() < 0.03:
            period = rng.randrange(0, 12)
        yield {"period": period}


class Crc8:
    def __init__(self) -> None:
        self.crc = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.crc = 0
        elif i["en"]:
            feedback = (self.crc >> 7) ^ i["din"]
            self.crc = ((self.crc << 1) & 0xFF) ^ (0x07 if feedback else 0)
        return {"crc": self.crc}


TASKS = [
    DesignTask(
        name="counter_mod10",
        category="sequential",
        difficulty="easy",
        spec="A decade counter. `count` counts 0, 1, ..., 9, 0, ... advancing on each rising clock edge where "
        "`en` is 1, and holds otherwise. `rst` is a synchronous, active-high reset to 0 (it wins over `en`). "
        "`tc` is 1 whenever `count` is 9.",
        ports=(In("clk"), In("rst"), In("en"), Out("count", 4), Out("tc")),
        clock="clk",
        reset=Reset("rst"),
        reference="""module TopModule (
  input clk,
  input rst,
  input en,
  output reg [3:0] count,
  output tc
);
  assign tc = (count == 4'd9);
  always @(posedge clk) begin
    if (rst) count <= 4'd0;
    else if (en) count <= (count == 4'd9) ? 4'd0 : count + 4'd1;
  end
endmodule
""",
        model=Mod10Counter,
    ),
    DesignTask(
        name="updown_counter8",
        category="sequential",
        difficulty="easy",
        spec="An 8-bit up/down counter `q` with an asynchronous, active-low reset `rst_n` (to 0). On a rising "
        "edge: if `load` is 1, q takes `d`; else if `en` is 1, q counts up (when `up` is 1) or down (when `up` "
        "is 0), wrapping around; else it holds.",
        ports=(In("clk"), In("rst_n"), In("load"), In("en"), In("up"), In("d", 8), Out("q", 8)),
        clock="clk",
        reset=Reset("rst_n", active=0, asynchronous=True),
        reference="""module TopModule (
  input clk,
  input rst_n,
  input load,
  input en,
  input up,
  input [7:0] d,
  output reg [7:0] q
);
  always @(posedge clk or negedge rst_n) begin
    if (!rst_n) q <= 8'd0;
    else if (load) q <= d;
    else if (en) q <= up ? q + 8'd1 : q - 8'd1;
  end
endmodule
""",
        model=UpDown,
        stimulus=endless(
            lambda rng: {"load": int(rng.random() < 0.1), "en": int(rng.random() < 0.8), "up": rng.getrandbits(1),
                         "d": rng.getrandbits(8)}  # fmt: skip
        ),
    ),
    DesignTask(
        name="shift_register8",
        category="sequential",
        difficulty="easy",
        spec="An 8-bit serial-in, parallel-out shift register. On a rising edge with `shift_en` = 1, `q` shifts "
        "left by one and `sin` enters at bit 0; otherwise `q` holds. `rst` is a synchronous, active-high "
        "reset to 0.",
        ports=(In("clk"), In("rst"), In("shift_en"), In("sin"), Out("q", 8)),
        clock="clk",
        reset=Reset("rst"),
        reference="""module TopModule (
  input clk,
  input rst,
  input shift_en,
  input sin,
  output reg [7:0] q
);
  always @(posedge clk) begin
    if (rst) q <= 8'd0;
    else if (shift_en) q <= {q[6:0], sin};
  end
endmodule
""",
        model=Sipo,
    ),
    DesignTask(
        name="edge_detector",
        category="sequential",
        difficulty="easy",
        spec="Detect edges of the input `sig`, sampled on rising clock edges. The design remembers the value of "
        "`sig` sampled at the previous edge (0 after reset). At each edge, the registered output `rise` "
        "becomes 1 if `sig` is 1 now and was 0 at the previous edge, and `fall` becomes 1 if `sig` is 0 now "
        "and was 1; otherwise they become 0. `rst` is synchronous, active high, and clears everything.",
        ports=(In("clk"), In("rst"), In("sig"), Out("rise"), Out("fall")),
        clock="clk",
        reset=Reset("rst"),
        reference="""module TopModule (
  input clk,
  input rst,
  input sig,
  output reg rise,
  output reg fall
);
  reg prev;
  always @(posedge clk) begin
    if (rst) begin
      prev <= 1'b0;
      rise <= 1'b0;
      fall <= 1'b0;
    end else begin
      rise <= sig & ~prev;
      fall <= ~sig & prev;
      prev <= sig;
    end
  end
endmodule
""",
        model=EdgeDetect,
        stimulus=_edge_stimulus,
    ),
    DesignTask(
        name="lfsr16",
        category="sequential",
        difficulty="medium",
        spec="A 16-bit Fibonacci LFSR `q`. Synchronous active-high `rst` sets q to 16'hACE1. Otherwise on a "
        "rising edge: if `load` is 1, q takes `seed`; else if `en` is 1, q shifts left by one and the new "
        "bit 0 is q[15] ^ q[13] ^ q[12] ^ q[10] (of the old value); else q holds.",
        ports=(In("clk"), In("rst"), In("load"), In("en"), In("seed", 16), Out("q", 16)),
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input load,
  input en,
  input [15:0] seed,
  output reg [15:0] q
);
  wire feedback = q[15] ^ q[13] ^ q[12] ^ q[10];
  always @(posedge clk) begin
    if (rst) q <= 16'hACE1;
    else if (load) q <= seed;
    else if (en) q <= {q[14:0], feedback};
  end
endmodule
""",
        model=Lfsr,
        stimulus=endless(_lfsr_vector),
    ),
    DesignTask(
        name="debouncer",
        category="sequential",
        difficulty="medium",
        spec="A debouncer. The output `clean` (0 after reset) follows the input `noisy` only once `noisy` has "
        "differed from `clean` at 4 consecutive rising edges: keep a counter; at each edge, if `noisy` equals "
        "`clean` the counter clears; otherwise, if the counter is 3, `clean` takes `noisy` and the counter "
        "clears, else the counter increments. `rst` is synchronous, active high, and clears `clean` and the "
        "counter.",
        ports=(In("clk"), In("rst"), In("noisy"), Out("clean")),
        clock="clk",
        reset=Reset("rst", rate=0.005),
        reference="""module TopModule (
  input clk,
  input rst,
  input noisy,
  output reg clean
);
  reg [1:0] count;
  always @(posedge clk) begin
    if (rst) begin
      clean <= 1'b0;
      count <= 2'd0;
    end else if (noisy == clean) begin
      count <= 2'd0;
    end else if (count == 2'd3) begin
      clean <= noisy;
      count <= 2'd0;
    end else begin
      count <= count + 2'd1;
    end
  end
endmodule
""",
        model=Debouncer,
        stimulus=_debounce_stimulus,
        vectors=300,
    ),
    DesignTask(
        name="pwm8",
        category="sequential",
        difficulty="medium",
        spec="An 8-bit PWM generator. A free-running counter `cnt` increments (wrapping 255 -> 0) on every "
        "rising edge; the synchronous active-high `rst` sets it to 0. The output `pwm` is 1 whenever `cnt` "
        "is less than the current `duty` input (a combinational comparison), so duty 0 is always off.",
        ports=(In("clk"), In("rst"), In("duty", 8), Out("cnt", 8), Out("pwm")),
        mealy=("pwm",),  # combinational from the inputs, as the spec says
        clock="clk",
        reset=Reset("rst", rate=0.003),
        reference="""module TopModule (
  input clk,
  input rst,
  input [7:0] duty,
  output reg [7:0] cnt,
  output pwm
);
  assign pwm = (cnt < duty);
  always @(posedge clk) begin
    if (rst) cnt <= 8'd0;
    else cnt <= cnt + 8'd1;
  end
endmodule
""",
        model=Pwm,
        stimulus=_pwm_stimulus,
        vectors=600,
    ),
    DesignTask(
        name="ticker",
        category="sequential",
        difficulty="medium",
        spec="A programmable tick generator. It keeps an 8-bit `count`. On a rising edge, `count` becomes 0 if "
        "`rst` (synchronous, active high) is 1 or if `count` >= `period`; otherwise it increments. The output "
        "`tick` is 1 whenever `count` >= `period` (combinational, using the current `period`), so with a "
        "steady period P the design ticks once every P+1 cycles.",
        ports=(In("clk"), In("rst"), In("period", 8), Out("count", 8), Out("tick")),
        mealy=("tick",),  # combinational from the inputs, as the spec says
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input [7:0] period,
  output reg [7:0] count,
  output tick
);
  assign tick = (count >= period);
  always @(posedge clk) begin
    if (rst || count >= period) count <= 8'd0;
    else count <= count + 8'd1;
  end
endmodule
""",
        model=Ticker,
        stimulus=_ticker_stimulus,
        vectors=300,
    ),
    DesignTask(
        name="crc8_serial",
        category="sequential",
        difficulty="medium",
        spec="A bit-serial CRC-8 with polynomial x^8 + x^2 + x + 1 (0x07), MSB first. On a rising edge with "
        "`en` = 1: let f = crc[7] ^ din; crc becomes (crc << 1), truncated to 8 bits, XORed with 8'h07 when f "
        "is 1. With `en` = 0 crc holds. `rst` is synchronous, active high, and clears crc to 0.",
        ports=(In("clk"), In("rst"), In("en"), In("din"), Out("crc", 8)),
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input en,
  input din,
  output reg [7:0] crc
);
  wire feedback = crc[7] ^ din;
  always @(posedge clk) begin
    if (rst) crc <= 8'd0;
    else if (en) crc <= {crc[6:0], 1'b0} ^ (feedback ? 8'h07 : 8'h00);
  end
endmodule
""",
        model=Crc8,
    ),
]
