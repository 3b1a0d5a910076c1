"""Heavy suite: communication and SoC peripherals (a UART with FIFOs and a baud generator, a
dual CRC-32/CRC-32C engine, an APB timer bank with interrupts)."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset

# -- UART ------------------------------------------------------------------------------------

FIFO_DEPTH = 8


class Uart:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.txq: deque[int] = deque()
        self.rxq: deque[int] = deque()
        self.tx_busy, self.tx_bit, self.tx_cnt, self.tx_frame = 0, 0, 0, 0
        self.rx_state, self.rx_cnt, self.rx_bit, self.rx_shift = 0, 0, 0, 0  # 0 idle 1 start 2 data 3 stop
        self.frame_err = self.overrun = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self._reset()
        else:
            div = i["div"]
            tx_full, tx_nonempty = len(self.txq) == FIFO_DEPTH, bool(self.txq)
            rx_full, rx_nonempty = len(self.rxq) == FIFO_DEPTH, bool(self.rxq)
            # transmitter
            if not self.tx_busy:
                if tx_nonempty:
                    self.tx_frame = (1 << 9) | (self.txq.popleft() << 1)
                    self.tx_busy, self.tx_bit, self.tx_cnt = 1, 0, div - 1
            elif self.tx_cnt == 0:
                if self.tx_bit == 9:
                    self.tx_busy = 0
                else:
                    self.tx_bit, self.tx_cnt = self.tx_bit + 1, div - 1
            else:
                self.tx_cnt -= 1
            if i["tx_push"] and not tx_full:
                self.txq.append(i["tx_data"])
            # receiver
            rx, push = i["rx"], None
            if self.rx_state == 0:
                if rx == 0:
                    self.rx_state, self.rx_cnt = 1, div >> 1
            elif self.rx_cnt != 0:
                self.rx_cnt -= 1
            elif self.rx_state == 1:
                if rx == 0:
                    self.rx_state, self.rx_bit, self.rx_cnt = 2, 0, div - 1
                else:
                    self.rx_state = 0
            elif self.rx_state == 2:
                self.rx_shift = (self.rx_shift >> 1) | (rx << 7)
                self.rx_cnt = div - 1
                if self.rx_bit == 7:
                    self.rx_state = 3
                else:
                    self.rx_bit += 1
            else:
                if rx:
                    push = self.rx_shift
                else:
                    self.frame_err = 1
                self.rx_state = 0
            if i["rx_pop"] and rx_nonempty:
                self.rxq.popleft()
            if push is not None:
                if rx_full:
                    self.overrun = 1
                else:
                    self.rxq.append(push)
        tx = (self.tx_frame >> self.tx_bit) & 1 if self.tx_busy else 1
        return {"tx": tx, "tx_full": int(len(self.txq) == FIFO_DEPTH), "tx_empty": int(not self.txq),
                "rx_empty": int(not self.rxq), "rx_data": self.rxq[0] if self.rxq else None,
                "frame_err": self.frame_err, "overrun": self.overrun}  # fmt: skip


def _uart_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Segments at one bit period each (div 4-23, reset held while it changes): serial frames on rx
    with jitter, glitches and bad stop bits; bursts of pushes and pops that fill and drain both
    FIFOs."""
    while True:
        div = rng.randint(4, 23)
        for _ in range(2):
            yield {"rst": 1, "div": div, "tx_push": 0, "tx_data": 0, "rx_pop": 0, "rx": 1}
        rx_bits: deque[int] = deque()
        push_rate = rng.choice((0.02, 0.1, 0.5))
        pop_rate = rng.choice((0.01, 0.05, 0.5))
        for _ in range(rng.randint(3000, 8000)):
            if not rx_bits:
                gap = rng.choice((0, 1, 2, rng.randint(3, 40)))
                rx_bits.extend([1] * gap)
                roll = rng.random()
                if roll < 0.05:
                    rx_bits.extend([0] * rng.randint(1, max(1, div // 2 - 1)))  # a glitch: a false start
                else:
                    byte = rng.getrandbits(8)
                    stop = 0 if roll < 0.1 else 1
                    for bit in [0, *((byte >> k) & 1 for k in range(8)), stop]:
                        rx_bits.extend([bit] * (div + rng.choice((0, 0, 0, 1, -1)) * (div > 8)))
            if rng.random() < 0.01:
                push_rate = rng.choice((0.02, 0.1, 0.5))
                pop_rate = rng.choice((0.01, 0.05, 0.5))
            yield {"rst": int(rng.random() < 0.0002), "div": div, "tx_push": int(rng.random() < push_rate),
                   "tx_data": rng.getrandbits(8), "rx_pop": int(rng.random() < pop_rate), "rx": rx_bits.popleft()}


UART_SPEC = """\
A UART with 8-deep transmit and receive FIFOs and a programmable bit period (8 data bits, no
parity, one stop bit, least significant bit first). `div` (4..255) is the bit period in clock
cycles; it only changes while `rst` is 1. `rst` is a synchronous, active-high reset: both FIFOs
empty, transmitter and receiver idle, `frame_err` = `overrun` = 0.

At every rising edge without reset (every decision below uses the state before the edge):

Transmit FIFO: if `tx_push` is 1 and the FIFO is not full, `tx_data` is appended.
Transmitter: when idle and the transmit FIFO is not empty, it removes the oldest byte and
starts a frame: 10 bits (start bit 0, data bits 0..7, stop bit 1), each held on `tx` for exactly
`div` cycles: a bit counter is loaded with div - 1 when a bit starts and counts down once per
edge; at the edge where it is 0 the next bit starts (counter reloaded with div - 1), and at the
edge where it is 0 during the stop bit the transmitter becomes idle. `tx` is 1 while idle. So a
new frame starts at the earliest one edge after the previous stop bit ended.

Receiver (`rx` is sampled at each rising edge): when idle and `rx` is 0, it enters START with a
counter = div >> 1. In every non-idle state, at an edge where the counter is not 0 it counts
down; at an edge where it is 0 the receiver acts on `rx`:
  - START: `rx` = 0: go to DATA for bit 0 with the counter = div - 1; `rx` = 1: back to idle
    (a glitch, nothing received);
  - DATA: `rx` is data bit k (bits arrive LSB first), the counter = div - 1; after bit 7, STOP;
  - STOP: `rx` = 1: the byte is appended to the receive FIFO, or, if the FIFO is full, dropped and
    `overrun` set; `rx` = 0: the byte is dropped and `frame_err` set. Back to idle either way.
`frame_err` and `overrun` stay 1 until reset.
Receive FIFO: if `rx_pop` is 1 and the FIFO is not empty, its oldest byte is removed (at the
same edge the receiver may append a byte; fullness is judged before the edge).

Outputs: `tx`; `tx_full`, `tx_empty` (transmit FIFO holds 8 / 0 bytes); `rx_empty`; `rx_data`
= the oldest byte of the receive FIFO (don't-care while it is empty); `frame_err`, `overrun`.
"""

UART_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input [7:0] div,
  input tx_push,
  input [7:0] tx_data,
  input rx_pop,
  input rx,
  output tx,
  output tx_full,
  output tx_empty,
  output rx_empty,
  output [7:0] rx_data,
  output reg frame_err,
  output reg overrun
);
  reg [7:0] txq [0:7];
  reg [7:0] rxq [0:7];
  reg [2:0] tx_rd, tx_wr, rx_rd, rx_wr;
  reg [3:0] tx_count, rx_count;
  reg tx_busy;
  reg [3:0] tx_bit;
  reg [7:0] tx_cnt;
  reg [9:0] tx_frame;
  reg [1:0] rx_state;
  reg [7:0] rx_cnt;
  reg [2:0] rx_bit;
  reg [7:0] rx_shift;

  localparam IDLE = 2'd0, START = 2'd1, DATA = 2'd2, STOP = 2'd3;

  assign tx = tx_busy ? tx_frame[tx_bit] : 1'b1;
  assign tx_full = (tx_count == 4'd8);
  assign tx_empty = (tx_count == 4'd0);
  assign rx_empty = (rx_count == 4'd0);
  assign rx_data = rxq[rx_rd];

  wire tx_start = !tx_busy && !tx_empty;
  wire tx_accept = tx_push && !tx_full;
  wire rx_done = (rx_state == STOP) && (rx_cnt == 8'd0);
  wire rx_push = rx_done && rx && !(rx_count == 4'd8);
  wire rx_take = rx_pop && !rx_empty;

  always @(posedge clk) begin
    if (rst) begin
      tx_rd <= 3'd0; tx_wr <= 3'd0; tx_count <= 4'd0;
      rx_rd <= 3'd0; rx_wr <= 3'd0; rx_count <= 4'd0;
      tx_busy <= 1'b0; tx_bit <= 4'd0; tx_cnt <= 8'd0; tx_frame <= 10'h3ff;
      rx_state <= IDLE; rx_cnt <= 8'd0; rx_bit <= 3'd0; rx_shift <= 8'd0;
      frame_err <= 1'b0; overrun <= 1'b0;
    end else begin
      // transmit FIFO and transmitter
      if (tx_accept) begin
        txq[tx_wr] <= tx_data;
        tx_wr <= tx_wr + 3'd1;
      end
      if (tx_start) tx_rd <= tx_rd + 3'd1;
      tx_count <= tx_count + {3'd0, tx_accept} - {3'd0, tx_start};
      if (!tx_busy) begin
        if (tx_start) begin
          tx_frame <= {1'b1, txq[tx_rd], 1'b0};
          tx_busy <= 1'b1;
          tx_bit <= 4'd0;
          tx_cnt <= div - 8'd1;
        end
      end else if (tx_cnt == 8'd0) begin
        if (tx_bit == 4'd9) tx_busy <= 1'b0;
        else begin
          tx_bit <= tx_bit + 4'd1;
          tx_cnt <= div - 8'd1;
        end
      end else begin
        tx_cnt <= tx_cnt - 8'd1;
      end
      // receiver
      case (rx_state)
        IDLE: if (!rx) begin rx_state <= START; rx_cnt <= {1'b0, div[7:1]}; end
        default: begin
          if (rx_cnt != 8'd0) rx_cnt <= rx_cnt - 8'd1;
          else begin
            case (rx_state)
              START: begin
                if (!rx) begin rx_state <= DATA; rx_bit <= 3'd0; rx_cnt <= div - 8'd1; end
                else rx_state <= IDLE;
              end
              DATA: begin
                rx_shift <= {rx, rx_shift[7:1]};
                rx_cnt <= div - 8'd1;
                if (rx_bit == 3'd7) rx_state <= STOP;
                else rx_bit <= rx_bit + 3'd1;
              end
              default: begin
                if (rx) begin
                  if (rx_count == 4'd8) overrun <= 1'b1;
                end else frame_err <= 1'b1;
                rx_state <= IDLE;
              end
            endcase
          end
        end
      endcase
      // receive FIFO
      if (rx_push) begin
        rxq[rx_wr] <= rx_shift;
        rx_wr <= rx_wr + 3'd1;
      end
      if (rx_take) rx_rd <= rx_rd + 3'd1;
      rx_count <= rx_count + {3'd0, rx_push} - {3'd0, rx_take};
    end
  end
endmodule
"""

# -- CRC engine -------------------------------------------------------------------------------

CRC32_POLY, CRC32C_POLY = 0xEDB88320, 0x82F63B78


def _crc_bytes(crc: int, data: int, count: int, poly: int) -> int:
    for k in range(count):
        crc ^= (data >> (8 * k)) & 0xFF
        for _ in range(8):
            crc = (crc >> 1) ^ (poly if crc & 1 else 0)
    return crc


class DualCrc:
    def __init__(self) -> None:
        self.a = self.c = 0xFFFFFFFF
        self.bytes = 0

    def step(self, i: Inputs) -> Outputs:
        if i["rst"] or i["init"]:
            self.a = self.c = 0xFFFFFFFF
            self.bytes = 0
        elif i["valid"]:
            count = i["nbytes"] + 1
            self.a = _crc_bytes(self.a, i["data"], count, CRC32_POLY)
            self.c = _crc_bytes(self.c, i["data"], count, CRC32C_POLY)
            self.bytes = (self.bytes + count) & 0xFFFF
        return {"crc32": self.a ^ 0xFFFFFFFF, "crc32c": self.c ^ 0xFFFFFFFF, "byte_count": self.bytes}


def _crc_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Messages of 1-600 words, with idle gaps, partial last words and occasional long streams."""
    while True:
        yield {"init": 1, "valid": rng.getrandbits(1), "nbytes": rng.getrandbits(2), "data": rng.getrandbits(32)}
        length = rng.choice((rng.randint(1, 8), rng.randint(10, 100), rng.randint(100, 600)))
        density = rng.choice((1.0, 0.9, 0.5))
        for k in range(length):
            valid = int(rng.random() < density)
            last = k == length - 1
            nbytes = rng.getrandbits(2) if last or rng.random() < 0.05 else 3
            data = rng.getrandbits(32) if rng.random() < 0.9 else rng.choice((0, 0xFFFFFFFF, 0x80000001))
            yield {"init": 0, "valid": valid, "nbytes": nbytes, "data": data}


CRC_SPEC = """\
A streaming checksum engine that computes CRC-32 (IEEE 802.3, the zlib CRC) and CRC-32C
(Castagnoli) of the same byte stream at once, taking up to 4 bytes per clock cycle.

Both are the reflected forms: registers initialised to 32'hFFFFFFFF, each byte is XORed into the
low 8 bits of the register and then the register is shifted right 8 times, XORing the reflected
polynomial after each shift where the bit shifted out was 1 (CRC-32: 32'hEDB88320, CRC-32C:
32'h82F63B78). The outputs `crc32` and `crc32c` are the registers XOR 32'hFFFFFFFF (so after
the bytes "123456789" they read 32'hCBF43926 and 32'hE3069283).

At each rising edge: if `rst` (synchronous, active high) or `init` is 1, both registers are set
to 32'hFFFFFFFF and `byte_count` to 0. Else, if `valid` is 1, the bytes `data[7:0]`,
`data[15:8]`, ... are processed in that order, `nbytes` + 1 of them (1 to 4), and `byte_count`
(16 bits, wrapping) increases by that many. With `valid` = 0 nothing changes. All outputs are
registered values.
"""

CRC_REFERENCE = """\
module TopModule (
  input clk,
  input rst,
  input init,
  input valid,
  input [1:0] nbytes,
  input [31:0] data,
  output [31:0] crc32,
  output [31:0] crc32c,
  output reg [15:0] byte_count
);
  reg [31:0] ra, rc;
  reg [31:0] na, nc;
  integer k, j;
  always @* begin
    na = ra;
    nc = rc;
    for (k = 0; k < 4; k = k + 1) begin
      if (k <= nbytes) begin
        na = na ^ {24'd0, data[8*k +: 8]};
        nc = nc ^ {24'd0, data[8*k +: 8]};
        for (j = 0; j < 8; j = j + 1) begin
          na = na[0] ? ((na >> 1) ^ 32'hEDB88320) : (na >> 1);
          nc = nc[0] ? ((nc >> 1) ^ 32'h82F63B78) : (nc >> 1);
        end
      end
    end
  end
  always @(posedge clk) begin
    if (rst || init) begin
      ra <= 32'hFFFFFFFF;
      rc <= 32'hFFFFFFFF;
      byte_count <= 16'd0;
    end else if (valid) begin
      ra <= na;
      rc <= nc;
      byte_count <= byte_count + {14'd0, nbytes} + 16'd1;
    end
  end
  assign crc32 = ~ra;
  assign crc32c = ~rc;
endmodule
"""

# -- APB timer bank ---------------------------------------------------------------------------

TIMER_ID = 0x7113_0004


class TimerBank:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.ctrl = [0] * 4
        self.load = [0] * 4
        self.count = [0] * 4
        self.pre = [0] * 4
        self.pending = 0

    def _read(self, addr: int) -> int | None:
        n, reg = addr >> 4, addr & 0xF
        if n < 4:
            return {0: self.ctrl[n], 4: self.load[n], 8: self.count[n], 0xC: self.pre[n]}.get(reg)
        return {0x40: self.pending, 0x44: TIMER_ID}.get(addr)

    def step(self, i: Inputs) -> Outputs:
        if not i["presetn"]:
            self._reset()
        else:
            write = i["psel"] and i["penable"] and i["pwrite"]
            addr, wdata = i["paddr"], i["pwdata"]
            events = 0
            for n in range(4):
                ctrl = self.ctrl[n]
                if not ctrl & 1:
                    self.pre[n] = 0
                    continue
                if self.pre[n] != (ctrl >> 8) & 0xFF:
                    self.pre[n] += 1
                    continue
                self.pre[n] = 0
                if self.count[n] == 0:
                    events |= 1 << n
                    if ctrl & 2:
                        self.count[n] = self.load[n]
                    else:
                        self.ctrl[n] = ctrl & ~1
                else:
                    self.count[n] -= 1
            clear = wdata & 0xF if write and addr == 0x40 else 0
            self.pending = (self.pending & ~clear) | events
            if write and addr < 0x40:
                n, reg = addr >> 4, addr & 0xF
                if reg == 0:
                    self.ctrl[n], self.pre[n] = wdata & 0xFF07, 0
                elif reg == 4:
                    self.load[n] = wdata
                elif reg == 8:
                    self.count[n] = wdata
        value = self._read(i["paddr"])
        enabled = sum(((self.ctrl[n] >> 2) & 1) << n for n in range(4))
        access = i["psel"] and i["penable"]
        return {"prdata": value if i["psel"] and not i["pwrite"] and value is not None else 0, "pready": 1,
                "pslverr": int(bool(access and value is None)), "irq": int(bool(self.pending & enabled))}


def _timer_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """APB transfers (setup, then access phase) with idle gaps: timers programmed with short
    reload values and prescalers so that they expire often, interrupts read and cleared."""
    while True:
        for _ in range(rng.choice((0, 1, 2, rng.randint(3, 60)))):
            yield {"presetn": int(rng.random() > 0.0005), "psel": 0, "penable": 0, "pwrite": rng.getrandbits(1),
                   "paddr": rng.getrandbits(8), "pwdata": rng.getrandbits(32)}  # fmt: skip
        n = rng.randrange(4)
        roll = rng.random()
        write = 1
        if roll < 0.2:
            addr, data = n * 16, rng.choice((0, 1, 3, 5, 7, 6)) | (rng.choice((0, 0, 1, 2, 5, 255)) << 8)
            data |= rng.getrandbits(32) & ~0xFF07 if rng.random() < 0.2 else 0
        elif roll < 0.35:
            addr, data = n * 16 + 4, rng.choice((rng.randint(0, 20), rng.randint(0, 300), rng.getrandbits(32)))
        elif roll < 0.45:
            addr, data = n * 16 + 8, rng.choice((rng.randint(0, 50), rng.getrandbits(32)))
        elif roll < 0.55:
            addr, data = 0x40, rng.getrandbits(4)
        elif roll < 0.6:
            addr, data = rng.getrandbits(8), rng.getrandbits(32)  # anywhere, valid or not
        else:
            write = 0
            addr = rng.choice((n * 16, n * 16 + 4, n * 16 + 8, n * 16 + 12, 0x40, 0x40, 0x44, rng.getrandbits(8)))
            data = rng.getrandbits(32)
        transfer = {"pwrite": write, "paddr": addr, "pwdata": data}
        yield {"presetn": 1, "psel": 1, "penable": 0, **transfer}
        yield {"presetn": 1, "psel": 1, "penable": 1, **transfer}


TIMER_SPEC = """\
An APB3 slave with four 32-bit down-counting timers and an interrupt output. `presetn` is an
asynchronous, active-low reset that clears every register below (except the constant ID).
`pready` is always 1. Registers (byte addresses `paddr`, timer n = 0..3 at base 16*n):
  - 16n+0x0 CTRL_n (read/write): bit 0 enable, bit 1 auto-reload, bit 2 interrupt enable,
    bits 15:8 prescaler P. The other bits are not stored (they read 0): a write keeps
    `pwdata & 32'hFF07`.
  - 16n+0x4 LOAD_n (read/write, 32 bits): the reload value.
  - 16n+0x8 COUNT_n (read/write, 32 bits): the counter.
  - 16n+0xC PRE_n (read-only): the prescaler counter (0..255).
  - 0x40 IRQ_STATUS (bits 3:0 pending flags, one per timer; writing 1 to a bit clears it).
  - 0x44 ID (read-only): 32'h71130004.
Every other address is invalid: writes to it are ignored and it reads 0.

At each rising edge (all conditions use the state before the edge), for each timer: while it
is disabled its prescaler counter is 0. While enabled: if PRE_n != P it increments and nothing
else happens; if PRE_n == P it returns to 0 and the timer ticks: a tick with COUNT_n = 0 is an
expiry (pending flag n is set; with auto-reload COUNT_n takes LOAD_n, without it the enable bit
clears), a tick with COUNT_n != 0 decrements COUNT_n. So with P = 0 the timer ticks every cycle.
An APB write happens at the edge of its access phase (`psel`, `penable`, `pwrite` = 1) and
takes priority over the timer's own update at that edge: writing CTRL_n also sets PRE_n to 0;
writing COUNT_n sets the counter. Writing IRQ_STATUS clears the flags whose `pwdata` bits are
1, except that an expiry at the same edge sets its flag anyway.

Outputs (combinational from the registers and the current inputs): `prdata` = the register at
`paddr` when `psel` = 1, `pwrite` = 0 and the address is valid, else 0. `pslverr` = 1 in the
access phase (`psel` and `penable`) of a transfer to an invalid address, else 0. `irq` = 1 when
some timer has both its pending flag and its CTRL interrupt-enable bit set.
"""

TIMER_REFERENCE = """\
module TopModule (
  input pclk,
  input presetn,
  input psel,
  input penable,
  input pwrite,
  input [7:0] paddr,
  input [31:0] pwdata,
  output reg [31:0] prdata,
  output pready,
  output pslverr,
  output irq
);
  reg [15:0] ctrl [0:3];
  reg [31:0] load [0:3];
  reg [31:0] count [0:3];
  reg [7:0] pre [0:3];
  reg [3:0] pending;
  reg [3:0] events;
  wire write = psel && penable && pwrite;
  wire [1:0] sel = paddr[5:4];
  reg valid;
  integer n;

  always @* begin
    valid = 1'b1;
    prdata = 32'd0;
    if (paddr < 8'h40) begin
      case (paddr[3:0])
        4'h0: prdata = {16'd0, ctrl[sel]};
        4'h4: prdata = load[sel];
        4'h8: prdata = count[sel];
        4'hC: prdata = {24'd0, pre[sel]};
        default: valid = 1'b0;
      endcase
    end else if (paddr == 8'h40) prdata = {28'd0, pending};
    else if (paddr == 8'h44) prdata = 32'h71130004;
    else valid = 1'b0;
    if (!psel || pwrite || !valid) prdata = 32'd0;
  end
  assign pready = 1'b1;
  assign pslverr = psel && penable && !valid;
  assign irq = |(pending & {ctrl[3][2], ctrl[2][2], ctrl[1][2], ctrl[0][2]});

  always @(posedge pclk or negedge presetn) begin
    if (!presetn) begin
      for (n = 0; n < 4; n = n + 1) begin
        ctrl[n] <= 16'd0;
        load[n] <= 32'd0;
        count[n] <= 32'd0;
        pre[n] <= 8'd0;
      end
      pending <= 4'd0;
    end else begin
      events = 4'd0;
      for (n = 0; n < 4; n = n + 1) begin
        if (!ctrl[n][0]) pre[n] <= 8'd0;
        else if (pre[n] != ctrl[n][15:8]) pre[n] <= pre[n] + 8'd1;
        else begin
          pre[n] <= 8'd0;
          if (count[n] == 32'd0) begin
            events[n] = 1'b1;
            if (ctrl[n][1]) count[n] <= load[n];
            else ctrl[n][0] <= 1'b0;
          end else count[n] <= count[n] - 32'd1;
        end
      end
      if (write && paddr == 8'h40) pending <= (pending & ~pwdata[3:0]) | events;
      else pending <= pending | events;
      if (write && paddr < 8'h40) begin
        case (paddr[3:0])
          4'h0: begin ctrl[sel] <= pwdata[15:0] & 16'hFF07; pre[sel] <= 8'd0; end
          4'h4: load[sel] <= pwdata;
          4'h8: count[sel] <= pwdata;
          default: ;
        endcase
      end
    end
  end
endmodule
"""

TASKS = [
    DesignTask(
        name="uart_fifo",
        category="heavy",
        difficulty="hard",
        spec=UART_SPEC,
        ports=(In("clk"), In("rst"), In("div", 8), In("tx_push"), In("tx_data", 8), In("rx_pop"), In("rx"),
               Out("tx"), Out("tx_full"), Out("tx_empty"), Out("rx_empty"), Out("rx_data", 8), Out("frame_err"),
               Out("overrun")),  # fmt: skip
        clock="clk",
        reset=Reset("rst"),
        model=Uart,
        stimulus=_uart_stimulus,
        vectors=200_000,
        cycle_cost_us=13,
        reference=UART_REFERENCE,
    ),
    DesignTask(
        name="crc32_dual",
        category="heavy",
        difficulty="medium",
        spec=CRC_SPEC,
        ports=(In("clk"), In("rst"), In("init"), In("valid"), In("nbytes", 2), In("data", 32), Out("crc32", 32),
               Out("crc32c", 32), Out("byte_count", 16)),  # fmt: skip
        clock="clk",
        reset=Reset("rst", rate=0.0005),
        model=DualCrc,
        stimulus=_crc_stimulus,
        vectors=100_000,
        cycle_cost_us=110,
        reference=CRC_REFERENCE,
    ),
    DesignTask(
        name="apb_timer_bank",
        category="heavy",
        difficulty="hard",
        spec=TIMER_SPEC,
        ports=(In("pclk"), In("presetn"), In("psel"), In("penable"), In("pwrite"), In("paddr", 8), In("pwdata", 32),
               Out("prdata", 32), Out("pready"), Out("pslverr"), Out("irq")),  # fmt: skip
        mealy=("prdata", "pslverr"),  # combinational from the inputs, as the spec says
        clock="pclk",
        reset=Reset("presetn", active=0, asynchronous=True),
        model=TimerBank,
        stimulus=_timer_stimulus,
        vectors=150_000,
        cycle_cost_us=17,
        reference=TIMER_REFERENCE,
    ),
]
