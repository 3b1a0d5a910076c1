"""Finite-state machines: a sequence detector, a traffic light, a vending machine, a UART
transmitter and a round-robin arbiter."""

from __future__ import annotations

import random

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset, endless


class Detect1011:
    def __init__(self) -> None:
        self.history = self.found = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.history = self.found = 0
        else:
            self.history = ((self.history << 1) | i["din"]) & 0xF
            self.found = int(self.history == 0b1011)
        return {"found": self.found}


RED, YELLOW, GREEN = 0, 1, 2
# state -> (main light, side light, cycles in the state before moving on)
_LIGHTS = {"main_green": (GREEN, RED), "main_yellow": (YELLOW, RED), "side_green": (RED, GREEN),
           "side_yellow": (RED, YELLOW)}  # fmt: skip


class TrafficLight:
    def __init__(self) -> None:
        self.state, self.timer = "main_green", 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.state, self.timer = "main_green", 0
        elif self.state == "main_green":
            if i["car"] and self.timer == 3:
                self.state, self.timer = "main_yellow", 0
            else:
                self.timer = min(self.timer + 1, 3)
        else:
            last = {"main_yellow": 1, "side_green": 2, "side_yellow": 1}[self.state]
            following = {"main_yellow": "side_green", "side_green": "side_yellow", "side_yellow": "main_green"}
            if self.timer == last:
                self.state, self.timer = following[self.state], 0
            else:
                self.timer += 1
        main, side = _LIGHTS[self.state]
        return {"main": main, "side": side}


COIN_VALUES = (0, 5, 10, 25)
PRICE = 30


class Vending:
    def __init__(self) -> None:
        self.credit = self.dispense = self.change = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.credit = self.dispense = self.change = 0
        else:
            total = self.credit + COIN_VALUES[i["coin"]]
            if total >= PRICE:
                self.dispense, self.change, self.credit = 1, total - PRICE, 0
            else:
                self.dispense, self.change, self.credit = 0, 0, total
        return {"dispense": self.dispense, "change": self.change, "credit": self.credit}


def _coin(rng: random.Random) -> Inputs:
    return {"coin": rng.choice((0, 0, 1, 2, 3))}


CLKS_PER_BIT = 4
FRAME = 10 * CLKS_PER_BIT  # start bit, 8 data bits, stop bit


class UartTx:
    def __init__(self) -> None:
        self.busy, self.tx, self.count, self.data = 0, 1, 0, 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.busy, self.tx, self.count = 0, 1, 0
        elif not self.busy:
            if i["start"]:
                self.busy, self.tx, self.count, self.data = 1, 0, 0, i["data"]
        else:
            self.count += 1
            bit = self.count // CLKS_PER_BIT
            if self.count == FRAME:
                self.busy, self.tx, self.count = 0, 1, 0
            elif bit == 0:
                self.tx = 0
            else:
                self.tx = (self.data >> (bit - 1)) & 1 if bit <= 8 else 1
        return {"tx": self.tx, "busy": self.busy}


def _uart_vector(rng: random.Random) -> Inputs:
    return {"start": int(rng.random() < 0.1), "data": rng.getrandbits(8)}


class RoundRobin:
    def __init__(self) -> None:
        self.grant, self.last = 0, 3

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.grant, self.last = 0, 3
        else:
            winner = next(((self.last + k) % 4 for k in range(1, 5) if i["req"] >> ((self.last + k) % 4) & 1), None)
            self.grant = 0 if winner is None else 1 << winner
            self.last = self.last if winner is None else winner
        return {"grant": self.grant}


TASKS = [
    DesignTask(
        name="seq_detect_1011",
        category="fsm",
        difficulty="medium",
        spec="Detect the bit sequence 1, 0, 1, 1 on the serial input `din` (one bit sampled per rising edge, "
        "overlapping occurrences count: 1011011 contains two). The registered output `found` is 1 for one "
        "cycle right after the edge that sampled the final 1 of an occurrence, else 0. `rst` is synchronous, "
        "active high, clears `found` and forgets all earlier bits. Write it as a state machine.",
        ports=(In("clk"), In("rst"), In("din"), Out("found")),
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input din,
  output reg found
);
  localparam S0 = 2'd0, S1 = 2'd1, S10 = 2'd2, S101 = 2'd3;
  reg [1:0] state;
  always @(posedge clk) begin
    if (rst) begin
      state <= S0;
      found <= 1'b0;
    end else begin
      found <= (state == S101) && din;
      case (state)
        S0: state <= din ? S1 : S0;
        S1: state <= din ? S1 : S10;
        S10: state <= din ? S101 : S0;
        default: state <= din ? S1 : S10;
      endcase
    end
  end
endmodule
""",
        model=Detect1011,
        vectors=300,
    ),
    DesignTask(
        name="traffic_light",
        category="fsm",
        difficulty="medium",
        spec="A traffic-light controller for a main road and a side road. Light codes: 2'b00 red, 2'b01 yellow, "
        "2'b10 green. It has four states, with a timer that is 0 on entering a state: MAIN_GREEN (main green, "
        "side red), MAIN_YELLOW (main yellow, side red), SIDE_GREEN (main red, side green), SIDE_YELLOW (main "
        "red, side yellow). On each rising edge: in MAIN_GREEN, if `car` is 1 and the timer is 3, go to "
        "MAIN_YELLOW; otherwise the timer increments up to 3 and stays there. MAIN_YELLOW lasts 2 cycles, "
        "SIDE_GREEN 3 cycles, SIDE_YELLOW 2 cycles, then the next state in the order MAIN_YELLOW -> "
        "SIDE_GREEN -> SIDE_YELLOW -> MAIN_GREEN. `rst` (synchronous, active high) goes to MAIN_GREEN with "
        "timer 0. `main` and `side` show the lights of the current state.",
        ports=(In("clk"), In("rst"), In("car"), Out("main", 2), Out("side", 2)),
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input car,
  output reg [1:0] main,
  output reg [1:0] side
);
  localparam MAIN_GREEN = 2'd0, MAIN_YELLOW = 2'd1, SIDE_GREEN = 2'd2, SIDE_YELLOW = 2'd3;
  localparam RED = 2'b00, YELLOW = 2'b01, GREEN = 2'b10;
  reg [1:0] state;
  reg [1:0] timer;
  always @(posedge clk) begin
    if (rst) begin
      state <= MAIN_GREEN;
      timer <= 2'd0;
    end else begin
      case (state)
        MAIN_GREEN:
          if (car && timer == 2'd3) begin state <= MAIN_YELLOW; timer <= 2'd0; end
          else if (timer != 2'd3) timer <= timer + 2'd1;
        MAIN_YELLOW:
          if (timer == 2'd1) begin state <= SIDE_GREEN; timer <= 2'd0; end
          else timer <= timer + 2'd1;
        SIDE_GREEN:
          if (timer == 2'd2) begin state <= SIDE_YELLOW; timer <= 2'd0; end
          else timer <= timer + 2'd1;
        default:
          if (timer == 2'd1) begin state <= MAIN_GREEN; timer <= 2'd0; end
          else timer <= timer + 2'd1;
      endcase
    end
  end
  always @* begin
    case (state)
      MAIN_GREEN: begin main = GREEN; side = RED; end
      MAIN_YELLOW: begin main = YELLOW; side = RED; end
      SIDE_GREEN: begin main = RED; side = GREEN; end
      default: begin main = RED; side = YELLOW; end
    endcase
  end
endmodule
""",
        model=TrafficLight,
        stimulus=endless(lambda rng: {"car": int(rng.random() < 0.3)}),
        vectors=300,
    ),
    DesignTask(
        name="vending_machine",
        category="fsm",
        difficulty="medium",
        spec="A vending machine for an item costing 30 cents. `coin` per cycle: 2'b00 none, 2'b01 5 cents, "
        "2'b10 10 cents, 2'b11 25 cents. It keeps the inserted `credit`. On each rising edge, let total = "
        "credit + the coin's value: if total >= 30, the registered outputs become dispense = 1, change = total "
        "- 30 and credit = 0; otherwise dispense = 0, change = 0 and credit = total. `rst` is synchronous, "
        "active high, and clears all three.",
        ports=(In("clk"), In("rst"), In("coin", 2), Out("dispense"), Out("change", 6), Out("credit", 6)),
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input [1:0] coin,
  output reg dispense,
  output reg [5:0] change,
  output reg [5:0] credit
);
  reg [5:0] value;
  wire [6:0] total = credit + value;
  always @* begin
    case (coin)
      2'b01: value = 6'd5;
      2'b10: value = 6'd10;
      2'b11: value = 6'd25;
      default: value = 6'd0;
    endcase
  end
  always @(posedge clk) begin
    if (rst) begin
      dispense <= 1'b0;
      change <= 6'd0;
      credit <= 6'd0;
    end else if (total >= 7'd30) begin
      dispense <= 1'b1;
      change <= total - 7'd30;
      credit <= 6'd0;
    end else begin
      dispense <= 1'b0;
      change <= 6'd0;
      credit <= total[5:0];
    end
  end
endmodule
""",
        model=Vending,
        stimulus=endless(_coin),
    ),
    DesignTask(
        name="uart_tx",
        category="fsm",
        difficulty="hard",
        spec=f"A UART transmitter with {CLKS_PER_BIT} clock cycles per bit. The line `tx` idles at 1 and `busy` "
        "is 0. When `busy` is 0 and `start` is 1 at a rising edge, the design captures `data`, sets `busy` "
        f"and drives the start bit (0). A frame is {FRAME} cycles: the start bit, then data bits 0..7 (LSB "
        f"first), then the stop bit (1), each held for {CLKS_PER_BIT} cycles. On the edge that ends the "
        f"frame ({FRAME} edges after the start), `busy` returns to 0 and `tx` is 1; `start` is ignored while "
        "busy. `tx` and `busy` are registered. `rst` (synchronous, active high) returns to idle.",
        ports=(In("clk"), In("rst"), In("start"), In("data", 8), Out("tx"), Out("busy")),
        clock="clk",
        reset=Reset("rst", rate=0.002),
        reference="""module TopModule (
  input clk,
  input rst,
  input start,
  input [7:0] data,
  output reg tx,
  output reg busy
);
  reg [5:0] count;
  reg [7:0] shreg;
  wire [5:0] next = count + 6'd1;
  wire [3:0] bit_index = next[5:2];
  always @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      tx <= 1'b1;
      count <= 6'd0;
    end else if (!busy) begin
      if (start) begin
        busy <= 1'b1;
        tx <= 1'b0;
        count <= 6'd0;
        shreg <= data;
      end
    end else if (next == 6'd40) begin
      busy <= 1'b0;
      tx <= 1'b1;
      count <= 6'd0;
    end else begin
      count <= next;
      if (bit_index == 4'd0) tx <= 1'b0;
      else if (bit_index <= 4'd8) tx <= shreg[bit_index - 4'd1];
      else tx <= 1'b1;
    end
  end
endmodule
""",
        model=UartTx,
        stimulus=endless(_uart_vector),
        vectors=400,
    ),
    DesignTask(
        name="round_robin_arbiter4",
        category="fsm",
        difficulty="hard",
        spec="A round-robin arbiter for 4 requesters. It remembers the index `last` of the most recent grant "
        "(3 after reset, so requester 0 comes first). On each rising edge, if any bit of `req` is 1, the "
        "registered one-hot output `grant` selects the first requester with its `req` bit set in the order "
        "last+1, last+2, last+3, last+4 (modulo 4), and `last` becomes that index; if no bit is set, `grant` "
        "becomes 0 and `last` keeps its value. `rst` is synchronous, active high: grant = 0, last = 3.",
        ports=(In("clk"), In("rst"), In("req", 4), Out("grant", 4)),
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input [3:0] req,
  output reg [3:0] grant
);
  reg [1:0] last;
  reg [1:0] pick;
  reg found;
  reg [1:0] candidate;
  integer k;
  always @* begin
    found = 1'b0;
    pick = last;
    for (k = 1; k <= 4; k = k + 1) begin
      candidate = last + k[1:0];
      if (!found && req[candidate]) begin
        found = 1'b1;
        pick = candidate;
      end
    end
  end
  always @(posedge clk) begin
    if (rst) begin
      grant <= 4'd0;
      last <= 2'd3;
    end else if (found) begin
      grant <= 4'd1 << pick;
      last <= pick;
    end else begin
      grant <= 4'd0;
    end
  end
endmodule
""",
        model=RoundRobin,
    ),
]
