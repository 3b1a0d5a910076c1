"""Heavy suite: memory-system blocks (a write-back cache in front of a slow memory, a
four-channel weighted round-robin arbiter with input FIFOs)."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset

M32 = 0xFFFFFFFF

# -- cache ------------------------------------------------------------------------------------


def _memory_init(k: int) -> int:
    return (k * 0x9E3779B1) & M32


class Cache:
    def __init__(self) -> None:
        self.mem = [_memory_init(k) for k in range(1024)]
        self._reset_cache()

    def _reset_cache(self) -> None:
        self.valid = [0] * 16
        self.dirty = [0] * 16
        self.tag = [0] * 16
        self.data = [[0] * 4 for _ in range(16)]
        self.busy, self.cnt = 0, 0
        self.req = (0, 0, 0)
        self.resp, self.rdata, self.hit = 0, 0, 0
        self.hits = self.misses = 0

    def _complete(self, we: int, addr: int, wdata: int) -> None:
        line, word = (addr >> 2) & 15, addr & 3
        if we:
            self.data[line][word] = wdata
            self.dirty[line] = 1
        else:
            self.rdata = self.data[line][word]
        self.resp = 1

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.mem = [_memory_init(k) for k in range(1024)]
            self._reset_cache()
        else:
            self.resp = 0
            if self.busy:
                if self.cnt:
                    self.cnt -= 1
                else:
                    we, addr, wdata = self.req
                    line, tag = (addr >> 2) & 15, addr >> 6
                    if self.valid[line] and self.dirty[line]:
                        base = (self.tag[line] << 6) | (line << 2)
                        self.mem[base:base + 4] = self.data[line]
                    base = addr & ~3
                    self.data[line] = self.mem[base:base + 4]
                    self.valid[line], self.dirty[line], self.tag[line] = 1, 0, tag
                    self._complete(we, addr, wdata)
                    self.busy, self.hit = 0, 0
            elif i["req"]:
                we, addr, wdata = i["we"], i["addr"], i["wdata"]
                line, tag = (addr >> 2) & 15, addr >> 6
                if self.valid[line] and self.tag[line] == tag:
                    self._complete(we, addr, wdata)
                    self.hit = 1
                    self.hits = (self.hits + 1) & 0xFFFF
                else:
                    self.busy, self.req = 1, (we, addr, wdata)
                    self.cnt = 7 if self.valid[line] and self.dirty[line] else 3
                    self.misses = (self.misses + 1) & 0xFFFF
        return {"ready": int(not self.busy), "resp_valid": self.resp, "rdata": self.rdata, "hit": self.hit,
                "hits": self.hits, "misses": self.misses}  # fmt: skip


def _cache_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Requests with locality: a working set of a few lines that drifts, sequential runs,
    conflicting tags on the same index, and some uniformly random addresses."""
    while True:
        hot = [rng.getrandbits(10) & ~3 for _ in range(rng.randint(1, 24))]
        rate = rng.choice((0.3, 0.7, 1.0))
        writes = rng.choice((0.1, 0.3, 0.6))
        run = rng.getrandbits(10)
        for _ in range(rng.randint(200, 2000)):
            roll = rng.random()
            if roll < 0.6:
                addr = rng.choice(hot) | rng.randrange(4)
            elif roll < 0.8:
                run = (run + 1) & 1023
                addr = run
            elif roll < 0.9:
                addr = (rng.choice(hot) ^ (rng.randrange(1, 16) << 6)) & 1023  # same index, other tag
            else:
                addr = rng.getrandbits(10)
            yield {"rst": int(rng.random() < 0.0002), "req": int(rng.random() < rate),
                   "we": int(rng.random() < writes), "addr": addr, "wdata": rng.getrandbits(32)}  # fmt: skip


CACHE_SPEC = """\
A direct-mapped, write-back, write-allocate data cache in front of a slow backing memory that
is part of the module. Word addresses are 10 bits (`addr`), data 32 bits. The cache has 16
lines of 4 words: word offset addr[1:0], line index addr[5:2], tag addr[9:6]; each line has a
valid bit, a dirty bit, a tag and 4 data words.

Reset (`rst`, synchronous, active high): every line invalid and clean, the backing memory word
k (k = 0..1023) set to (k * 32'h9E3779B1) mod 2^32, the request machinery idle, and the
outputs `resp_valid`, `rdata`, `hit`, `hits` and `misses` 0.

At each rising edge without reset, `resp_valid` is 0 unless a request completes at that edge:
  - idle, `req` = 1: the request (`we`, `addr`, `wdata`) is looked up. A hit (line valid, tag
    equal) completes at this edge: a read sets `rdata` to the cached word, a write stores
    `wdata` into the cached word and marks the line dirty; `resp_valid` = 1, `hit` = 1 and
    `hits` increments. A miss latches the request, increments `misses` and makes the cache
    busy with a wait counter of 7 if the line being replaced is valid and dirty, else 3;
  - busy: at an edge where the wait counter is not 0 it counts down; at the edge where it is
    0: a valid dirty victim line is written back (its 4 words to the memory words at its tag
    and index), the 4 words of the requested address's block are read from memory into the
    line (valid, clean, new tag), and the latched request then completes as a hit would
    (read: `rdata`; write: store and mark dirty), with `resp_valid` = 1 and `hit` = 0; the
    cache is idle again. So a miss takes 5 cycles (9 with a write-back) from request to
    response. Requests while busy are ignored.
Outputs: `ready` = 1 while not busy; `resp_valid`; `rdata` (the data of the last read
response, held); `hit` (whether the last response was a hit, held); `hits` and `misses`
(16-bit counters, wrapping). All outputs are registered.
"""

CACHE_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input req,
  input we,
  input [9:0] addr,
  input [31:0] wdata,
  output ready,
  output reg resp_valid,
  output reg [31:0] rdata,
  output reg hit,
  output reg [15:0] hits,
  output reg [15:0] misses
);
  reg [31:0] mem [0:1023];
  reg [31:0] data [0:63];
  reg [3:0] tags [0:15];
  reg [15:0] valid, dirty;
  reg busy;
  reg [2:0] cnt;
  reg r_we;
  reg [9:0] r_addr;
  reg [31:0] r_wdata;
  wire [3:0] index = addr[5:2];
  wire [3:0] r_index = r_addr[5:2];
  wire lookup_hit = valid[index] && (tags[index] == addr[9:6]);
  assign ready = !busy;
  integer k;

  always @(posedge clk) begin
    if (rst) begin
      for (k = 0; k < 1024; k = k + 1) mem[k] <= k * 32'h9E3779B1;
      valid <= 16'd0;
      dirty <= 16'd0;
      busy <= 1'b0;
      cnt <= 3'd0;
      resp_valid <= 1'b0;
      rdata <= 32'd0;
      hit <= 1'b0;
      hits <= 16'd0;
      misses <= 16'd0;
    end else begin
      resp_valid <= 1'b0;
      if (busy) begin
        if (cnt != 3'd0) cnt <= cnt - 3'd1;
        else begin
          if (valid[r_index] && dirty[r_index])
            for (k = 0; k < 4; k = k + 1) mem[{tags[r_index], r_index, k[1:0]}] <= data[{r_index, k[1:0]}];
          for (k = 0; k < 4; k = k + 1) data[{r_index, k[1:0]}] <= mem[{r_addr[9:2], k[1:0]}];
          if (r_we) data[r_addr[5:0]] <= r_wdata;
          else rdata <= mem[r_addr];
          valid[r_index] <= 1'b1;
          dirty[r_index] <= r_we;
          tags[r_index] <= r_addr[9:6];
          resp_valid <= 1'b1;
          hit <= 1'b0;
          busy <= 1'b0;
        end
      end else if (req) begin
        if (lookup_hit) begin
          if (we) begin
            data[addr[5:0]] <= wdata;
            dirty[index] <= 1'b1;
          end else rdata <= data[addr[5:0]];
          resp_valid <= 1'b1;
          hit <= 1'b1;
          hits <= hits + 16'd1;
        end else begin
          busy <= 1'b1;
          r_we <= we;
          r_addr <= addr;
          r_wdata <= wdata;
          cnt <= (valid[index] && dirty[index]) ? 3'd7 : 3'd3;
          misses <= misses + 16'd1;
        end
      end
    end
  end
endmodule
"""

# -- arbiter ----------------------------------------------------------------------------------

ARB_DEPTH = 4


class Arbiter:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.q: list[deque[int]] = [deque() for _ in range(4)]
        self.valid, self.ch, self.data = 0, 0, 0
        self.cur, self.used = 3, 4
        self.grants = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self._reset()
        else:
            full = [len(q) == ARB_DEPTH for q in self.q]
            nonempty = [bool(q) for q in self.q]
            if not self.valid or i["out_ready"]:
                weight = (i["weights"] >> (2 * self.cur)) & 3
                pick = None
                if nonempty[self.cur] and self.used < weight + 1:
                    pick, self.used = self.cur, self.used + 1
                else:
                    for k in range(1, 5):
                        c = (self.cur + k) % 4
                        if nonempty[c]:
                            pick, self.used = c, 1
                            break
                if pick is None:
                    self.valid = 0
                else:
                    self.valid, self.ch, self.data, self.cur = 1, pick, self.q[pick].popleft(), pick
                    self.grants = (self.grants + 1) & 0xFF
            for c in range(4):
                if (i["push"] >> c) & 1 and not full[c]:
                    self.q[c].append((i["push_data"] >> (8 * c)) & 0xFF)
        full_bits = sum(int(len(q) == ARB_DEPTH) << c for c, q in enumerate(self.q))
        return {"full": full_bits, "out_valid": self.valid, "out_ch": self.ch if self.valid else None,
                "out_data": self.data if self.valid else None, "grants": self.grants}  # fmt: skip


def _arbiter_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Phases with per-channel push rates (idle, trickling, saturating) and back-pressure, the
    weights changed between phases."""
    while True:
        rates = [rng.choice((0.0, 0.05, 0.3, 0.9)) for _ in range(4)]
        ready = rng.choice((0.2, 0.6, 1.0))
        weights = rng.getrandbits(8)
        for _ in range(rng.randint(50, 600)):
            push = sum(int(rng.random() < r) << c for c, r in enumerate(rates))
            yield {"rst": int(rng.random() < 0.0005), "weights": weights, "push": push,
                   "push_data": rng.getrandbits(32), "out_ready": int(rng.random() < ready)}  # fmt: skip


ARBITER_SPEC = """\
A four-channel weighted round-robin arbiter with a 4-deep FIFO per channel and a registered
output stage with valid/ready handshake.

Channel c (0..3) pushes the byte `push_data[8c+7:8c]` when `push[c]` is 1 and its FIFO is not
full (fullness as before the edge: a push into a full FIFO is dropped even if the arbiter
takes from it at the same edge). `weights[2c+1:2c]` is channel c's weight w_c: it may be
granted up to w_c + 1 times in a row.

The output register holds (`out_valid`, `out_ch`, `out_data`). At each rising edge without
reset (`rst`: synchronous, active high; all FIFOs empty, `out_valid` = 0, `grants` = 0, the
last-granted channel `cur` = 3 with its run count exhausted): if `out_valid` is 0 or `out_ready`
is 1, the register is refilled:
  - if FIFO `cur` is not empty and `cur` has been granted fewer than w_cur + 1 times in a row,
    `cur` is granted again;
  - else the first non-empty FIFO in the order cur+1, cur+2, cur+3, cur (mod 4) is granted and
    its run count starts at 1;
  - the granted channel's oldest byte is removed into the register (`out_valid` = 1, `out_ch` =
    the channel, `out_data` = the byte), it becomes `cur`, and `grants` (8 bits) increments;
  - if every FIFO is empty, `out_valid` becomes 0.
Otherwise (`out_valid` = 1 and `out_ready` = 0) the register holds.
Outputs: `full[c]` (FIFO c holds 4 bytes), `out_valid`, `out_ch` and `out_data` (don't-cares
while `out_valid` is 0), `grants`. All registered.
"""

ARBITER_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input [7:0] weights,
  input [3:0] push,
  input [31:0] push_data,
  input out_ready,
  output [3:0] full,
  output reg out_valid,
  output reg [1:0] out_ch,
  output reg [7:0] out_data,
  output reg [7:0] grants
);
  reg [7:0] q [0:15];
  reg [1:0] rd [0:3];
  reg [1:0] wr [0:3];
  reg [2:0] count [0:3];
  reg [1:0] cur;
  reg [2:0] used;
  reg found;
  reg [1:0] pick;
  reg [1:0] c;
  reg [3:0] take;
  wire [3:0] nonempty = {count[3] != 3'd0, count[2] != 3'd0, count[1] != 3'd0, count[0] != 3'd0};
  wire [1:0] w_cur = weights[2*cur +: 2];
  wire refill = !out_valid || out_ready;
  wire again = nonempty[cur] && (used < {1'b0, w_cur} + 3'd1);
  assign full = {count[3] == 3'd4, count[2] == 3'd4, count[1] == 3'd4, count[0] == 3'd4};
  integer k;

  always @* begin
    found = 1'b0;
    pick = cur;
    if (again) found = 1'b1;
    else begin
      for (k = 1; k <= 4; k = k + 1) begin
        c = cur + k[1:0];
        if (!found && nonempty[c]) begin
          found = 1'b1;
          pick = c;
        end
      end
    end
    take = (refill && found) ? (4'd1 << pick) : 4'd0;
  end

  always @(posedge clk) begin
    if (rst) begin
      for (k = 0; k < 4; k = k + 1) begin
        rd[k] <= 2'd0;
        wr[k] <= 2'd0;
        count[k] <= 3'd0;
      end
      out_valid <= 1'b0;
      out_ch <= 2'd0;
      out_data <= 8'd0;
      grants <= 8'd0;
      cur <= 2'd3;
      used <= 3'd4;
    end else begin
      if (refill) begin
        if (found) begin
          out_valid <= 1'b1;
          out_ch <= pick;
          out_data <= q[{pick, rd[pick]}];
          cur <= pick;
          used <= again ? used + 3'd1 : 3'd1;
          grants <= grants + 8'd1;
        end else out_valid <= 1'b0;
      end
      for (k = 0; k < 4; k = k + 1) begin
        if (push[k] && !full[k]) begin
          q[{k[1:0], wr[k]}] <= push_data[8*k +: 8];
          wr[k] <= wr[k] + 2'd1;
        end
        if (take[k]) rd[k] <= rd[k] + 2'd1;
        count[k] <= count[k] + {2'd0, push[k] && !full[k]} - {2'd0, take[k]};
      end
    end
  end
endmodule
"""

TASKS = [
    DesignTask(
        name="cache_writeback",
        category="heavy",
        difficulty="hard",
        spec=CACHE_SPEC,
        ports=(In("clk"), In("rst"), In("req"), In("we"), In("addr", 10), In("wdata", 32), Out("ready"),
               Out("resp_valid"), Out("rdata", 32), Out("hit"), Out("hits", 16), Out("misses", 16)),  # fmt: skip
        clock="clk",
        reset=Reset("rst"),
        model=Cache,
        stimulus=_cache_stimulus,
        vectors=200_000,
        cycle_cost_us=6,
        reference=CACHE_REFERENCE,
    ),
    DesignTask(
        name="wrr_arbiter_fifo",
        category="heavy",
        difficulty="hard",
        spec=ARBITER_SPEC,
        ports=(In("clk"), In("rst"), In("weights", 8), In("push", 4), In("push_data", 32), In("out_ready"),
               Out("full", 4), Out("out_valid"), Out("out_ch", 2), Out("out_data", 8), Out("grants", 8)),  # fmt: skip
        clock="clk",
        reset=Reset("rst"),
        model=Arbiter,
        stimulus=_arbiter_stimulus,
        vectors=200_000,
        cycle_cost_us=12,
        reference=ARBITER_REFERENCE,
    ),
]
