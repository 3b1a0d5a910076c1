"""Bus and protocol blocks: an APB register slave and a valid/ready pipeline stage."""

from __future__ import annotations

import random
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset, endless

APB_ID = 0xA5
APB_WRITABLE = (0x0, 0x4, 0xC)  # CTRL, DATA, SCRATCH; 0x8 is the read-only ID register


class ApbRegs:
    def __init__(self) -> None:
        self.regs = dict.fromkeys(APB_WRITABLE, 0)

    def step(self, i: Inputs) -> Outputs:
        if not i["presetn"]:
            self.regs = dict.fromkeys(APB_WRITABLE, 0)
        elif i["psel"] and i["penable"] and i["pwrite"] and i["paddr"] in self.regs:
            self.regs[i["paddr"]] = i["pwdata"]
        valid = i["paddr"] in self.regs or i["paddr"] == 0x8
        value = self.regs.get(i["paddr"], APB_ID)
        return {
            "prdata": value if i["psel"] and not i["pwrite"] and valid else 0,
            "pready": 1,
            "pslverr": int(bool(i["psel"] and i["penable"] and not valid)),
        }


def _apb_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Idle cycles and well-formed APB transfers (setup phase, then access phase)."""
    while True:
        for _ in range(rng.randint(0, 2)):
            yield {"psel": 0, "penable": 0, "pwrite": rng.getrandbits(1), "paddr": rng.getrandbits(4),
                   "pwdata": rng.getrandbits(8)}  # fmt: skip
        addr = rng.choice((0x0, 0x4, 0x8, 0xC)) if rng.random() < 0.8 else rng.getrandbits(4)
        transfer = {"pwrite": rng.getrandbits(1), "paddr": addr, "pwdata": rng.getrandbits(8)}
        yield {"psel": 1, "penable": 0, **transfer}
        yield {"psel": 1, "penable": 1, **transfer}


class PipeStage:
    def __init__(self) -> None:
        self.valid, self.data = 0, None

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.valid = 0
        elif not self.valid or i["out_ready"]:
            self.valid = i["in_valid"]
            if i["in_valid"]:
                self.data = i["in_data"]
        return {
            "in_ready": int(not self.valid or bool(i["out_ready"])),
            "out_valid": self.valid,
            "out_data": self.data if self.valid else None,
        }


def _pipe_vector(rng: random.Random) -> Inputs:
    return {"in_valid": int(rng.random() < 0.6), "in_data": rng.getrandbits(8),
            "out_ready": int(rng.random() < 0.6)}  # fmt: skip


TASKS = [
    DesignTask(
        name="apb_registers",
        category="bus",
        difficulty="hard",
        spec="An APB3 slave with four 8-bit registers: 0x0 CTRL, 0x4 DATA and 0xC SCRATCH (read/write), and "
        "0x8 ID (read-only, always 8'hA5). Every other `paddr` is invalid. `pready` is always 1 (no wait "
        "states). A write happens at the rising edge of the access phase (`psel`, `penable` and `pwrite` all "
        "1) to a writable register, which takes `pwdata`; writes to ID are ignored. `prdata` is the addressed "
        "register whenever `psel` is 1, `pwrite` is 0 and the address is valid, else 0 (combinational). "
        "`pslverr` is 1 in the access phase (`psel` and `penable`) of a transfer to an invalid address, else "
        "0 (combinational). `presetn` is an asynchronous, active-low reset that clears CTRL, DATA and SCRATCH.",
        ports=(In("pclk"), In("presetn"), In("psel"), In("penable"), In("pwrite"), In("paddr", 4),
               In("pwdata", 8), Out("prdata", 8), Out("pready"), Out("pslverr")),  # fmt: skip
        mealy=("prdata", "pslverr"),  # combinational from the inputs, as the spec says
        clock="pclk",
        reset=Reset("presetn", active=0, rate=0.005, asynchronous=True),
        reference="""module TopModule (
  input pclk,
  input presetn,
  input psel,
  input penable,
  input pwrite,
  input [3:0] paddr,
  input [7:0] pwdata,
  output reg [7:0] prdata,
  output pready,
  output pslverr
);
  reg [7:0] ctrl, data, scratch;
  wire valid = (paddr == 4'h0) || (paddr == 4'h4) || (paddr == 4'h8) || (paddr == 4'hC);
  wire write = psel && penable && pwrite;
  assign pready = 1'b1;
  assign pslverr = psel && penable && !valid;
  always @(posedge pclk or negedge presetn) begin
    if (!presetn) begin
      ctrl <= 8'd0;
      data <= 8'd0;
      scratch <= 8'd0;
    end else if (write) begin
      case (paddr)
        4'h0: ctrl <= pwdata;
        4'h4: data <= pwdata;
        4'hC: scratch <= pwdata;
        default: ;
      endcase
    end
  end
  always @* begin
    prdata = 8'd0;
    if (psel && !pwrite) begin
      case (paddr)
        4'h0: prdata = ctrl;
        4'h4: prdata = data;
        4'h8: prdata = 8'hA5;
        4'hC: prdata = scratch;
        default: prdata = 8'd0;
      endcase
    end
  end
endmodule
""",
        model=ApbRegs,
        stimulus=_apb_stimulus,
        vectors=300,
    ),
    DesignTask(
        name="pipeline_stage",
        category="bus",
        difficulty="medium",
        spec="One stage of a valid/ready pipeline (a register slice). The stage holds at most one item, shown on "
        "`out_valid`/`out_data` (registered). `in_ready` = !out_valid || out_ready (combinational). On a "
        "rising edge where `in_ready` is 1, `out_valid` takes `in_valid`, and `out_data` takes `in_data` if "
        "`in_valid` is 1; otherwise the stage holds its item. `out_data` does not matter while `out_valid` is "
        "0. `rst` is synchronous, active high, and clears `out_valid`.",
        ports=(In("clk"), In("rst"), In("in_valid"), In("in_data", 8), In("out_ready"), Out("in_ready"),
               Out("out_valid"), Out("out_data", 8)),  # fmt: skip
        mealy=("in_ready",),  # combinational from the inputs, as the spec says
        clock="clk",
        reset=Reset("rst", rate=0.01),
        reference="""module TopModule (
  input clk,
  input rst,
  input in_valid,
  input [7:0] in_data,
  input out_ready,
  output in_ready,
  output reg out_valid,
  output reg [7:0] out_data
);
  assign in_ready = !out_valid || out_ready;
  always @(posedge clk) begin
    if (rst) begin
      out_valid <= 1'b0;
    end else if (in_ready) begin
      out_valid <= in_valid;
      if (in_valid) out_data <= in_data;
    end
  end
endmodule
""",
        model=PipeStage,
        stimulus=endless(_pipe_vector),
    ),
]
