"""Memories: a register file, a synchronous RAM, a FIFO and a stack.

Memories without a reset start unknown: the models return `None` (not checked) for reads of
locations never written in the current sequence.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset, endless


class RegFile:
    def __init__(self) -> None:
        self.regs: dict[int, int] = {0: 0}

    def step(self, i: Inputs) -> Outputs:
        if i["we"] and i["waddr"] != 0:
            self.regs[i["waddr"]] = i["wdata"]
        return {"rdata_a": self.regs.get(i["raddr_a"]), "rdata_b": self.regs.get(i["raddr_b"])}


def _regfile_vector(rng: random.Random) -> Inputs:
    return {"we": rng.getrandbits(1), "waddr": rng.getrandbits(3), "wdata": rng.getrandbits(8),
            "raddr_a": rng.getrandbits(3), "raddr_b": rng.getrandbits(3)}  # fmt: skip


class SyncRam:
    def __init__(self) -> None:
        self.mem: dict[int, int] = {}
        self.dout: int | None = None

    def step(self, i: Inputs) -> Outputs:
        self.dout = self.mem.get(i["addr"])  # read-first: the value before this edge's write
        if i["we"]:
            self.mem[i["addr"]] = i["din"]
        return {"dout": self.dout}


class Fifo:
    DEPTH = 8

    def __init__(self) -> None:
        self.items: deque[int] = deque()

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.items.clear()
        else:
            do_push = i["push"] and len(self.items) < self.DEPTH
            do_pop = i["pop"] and len(self.items) > 0
            if do_pop:
                self.items.popleft()
            if do_push:
                self.items.append(i["din"])
        n = len(self.items)
        return {"dout": self.items[0] if n else None, "empty": int(n == 0), "full": int(n == self.DEPTH),
                "count": n}  # fmt: skip


def _phased_push_pop(rng: random.Random) -> Iterator[Inputs]:
    """Push/pop rates that change every few cycles, so the FIFO or stack runs full and empty."""
    while True:
        p_push = rng.choice((0.15, 0.5, 0.85))
        p_pop = 1.0 - p_push
        for _ in range(rng.randint(8, 24)):
            yield {"push": int(rng.random() < p_push), "pop": int(rng.random() < p_pop), "din": rng.getrandbits(8)}


class Stack:
    DEPTH = 4

    def __init__(self) -> None:
        self.items: list[int] = []

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.items.clear()
        elif i["pop"] and self.items:
            self.items.pop()
        elif i["push"] and len(self.items) < self.DEPTH:
            self.items.append(i["din"])
        n = len(self.items)
        return {"top": self.items[-1] if n else None, "empty": int(n == 0), "full": int(n == self.DEPTH)}


TASKS = [
    DesignTask(
        name="register_file8x8",
        category="memory",
        difficulty="medium",
        spec="A register file of eight 8-bit registers with one write port and two read ports. On a rising "
        "edge with `we` = 1, register `waddr` takes `wdata`, except register 0, which always reads as 0 "
        "(writes to it are ignored). Reads are asynchronous: `rdata_a` is register `raddr_a` and `rdata_b` "
        "is register `raddr_b`, continuously. There is no reset.",
        ports=(In("clk"), In("we"), In("waddr", 3), In("wdata", 8), In("raddr_a", 3), In("raddr_b", 3),
               Out("rdata_a", 8), Out("rdata_b", 8)),  # fmt: skip
        mealy=("rdata_a", "rdata_b"),  # combinational from the inputs, as the spec says
        clock="clk",
        reference="""module TopModule (
  input clk,
  input we,
  input [2:0] waddr,
  input [7:0] wdata,
  input [2:0] raddr_a,
  input [2:0] raddr_b,
  output [7:0] rdata_a,
  output [7:0] rdata_b
);
  reg [7:0] regs [0:7];
  always @(posedge clk) begin
    if (we && waddr != 3'd0) regs[waddr] <= wdata;
  end
  assign rdata_a = (raddr_a == 3'd0) ? 8'd0 : regs[raddr_a];
  assign rdata_b = (raddr_b == 3'd0) ? 8'd0 : regs[raddr_b];
endmodule
""",
        model=RegFile,
        stimulus=endless(_regfile_vector),
    ),
    DesignTask(
        name="sync_ram16x8",
        category="memory",
        difficulty="easy",
        spec="A 16-word by 8-bit single-port RAM with synchronous read. On every rising edge, `dout` takes the "
        "word at `addr` as it was before this edge (read-first), and if `we` is 1 the word at `addr` takes "
        "`din`. There is no reset.",
        ports=(In("clk"), In("we"), In("addr", 4), In("din", 8), Out("dout", 8)),
        clock="clk",
        reference="""module TopModule (
  input clk,
  input we,
  input [3:0] addr,
  input [7:0] din,
  output reg [7:0] dout
);
  reg [7:0] mem [0:15];
  always @(posedge clk) begin
    dout <= mem[addr];
    if (we) mem[addr] <= din;
  end
endmodule
""",
        model=SyncRam,
    ),
    DesignTask(
        name="sync_fifo8",
        category="memory",
        difficulty="hard",
        spec="A synchronous FIFO of 8 entries of 8 bits with show-ahead output. On a rising edge, a push "
        "(`push` = 1) is accepted only if the FIFO is not full and a pop (`pop` = 1) only if it is not empty "
        "(both judged before the edge; both may happen in one cycle). An accepted push stores `din`; an "
        "accepted pop removes the oldest entry. `dout` always shows the oldest entry (any value when empty), "
        "`count` is the number of entries, `empty` is count == 0 and `full` is count == 8. `rst` is "
        "synchronous, active high, and empties the FIFO.",
        ports=(In("clk"), In("rst"), In("push"), In("pop"), In("din", 8), Out("dout", 8), Out("empty"),
               Out("full"), Out("count", 4)),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.005),
        reference="""module TopModule (
  input clk,
  input rst,
  input push,
  input pop,
  input [7:0] din,
  output [7:0] dout,
  output empty,
  output full,
  output reg [3:0] count
);
  reg [7:0] mem [0:7];
  reg [2:0] wptr, rptr;
  wire do_push = push && !full;
  wire do_pop = pop && !empty;
  assign empty = (count == 4'd0);
  assign full = (count == 4'd8);
  assign dout = mem[rptr];
  always @(posedge clk) begin
    if (rst) begin
      wptr <= 3'd0;
      rptr <= 3'd0;
      count <= 4'd0;
    end else begin
      if (do_push) begin
        mem[wptr] <= din;
        wptr <= wptr + 3'd1;
      end
      if (do_pop) rptr <= rptr + 3'd1;
      count <= count + {3'd0, do_push} - {3'd0, do_pop};
    end
  end
endmodule
""",
        model=Fifo,
        stimulus=_phased_push_pop,
        vectors=400,
    ),
    DesignTask(
        name="stack4",
        category="memory",
        difficulty="medium",
        spec="A LIFO stack of 4 entries of 8 bits. On a rising edge: if `pop` is 1 and the stack is not empty, "
        "the top entry is removed; otherwise, if `push` is 1 and the stack is not full, `din` is pushed (so a "
        "pop wins over a push in the same cycle). `top` shows the most recently pushed entry still on the "
        "stack (any value when empty); `empty` and `full` flag 0 and 4 entries. `rst` is synchronous, active "
        "high, and empties the stack.",
        ports=(In("clk"), In("rst"), In("push"), In("pop"), In("din", 8), Out("top", 8), Out("empty"),
               Out("full")),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.005),
        reference="""module TopModule (
  input clk,
  input rst,
  input push,
  input pop,
  input [7:0] din,
  output [7:0] top,
  output empty,
  output full
);
  reg [7:0] mem [0:3];
  reg [2:0] depth;
  assign empty = (depth == 3'd0);
  assign full = (depth == 3'd4);
  wire [1:0] top_index = depth[1:0] - 2'd1;
  assign top = mem[top_index];
  always @(posedge clk) begin
    if (rst) begin
      depth <= 3'd0;
    end else if (pop && !empty) begin
      depth <= depth - 3'd1;
    end else if (push && !full) begin
      mem[depth[1:0]] <= din;
      depth <= depth + 3'd1;
    end
  end
endmodule
""",
        model=Stack,
        stimulus=_phased_push_pop,
        vectors=300,
    ),
]
