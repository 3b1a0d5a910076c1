"""Heavy suite: a two-stage pipelined RV32I-subset core that runs random self-checking programs.

The stimulus alternates a load phase (reset held, the program and the data memory written
through the load port) with a run phase of a few thousand cycles; the write-back port shows
every register write, so a wrong instruction shows up within cycles of its execution.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from gyms.verilog.spec import DesignTask, In, Inputs, Out, Outputs, Reset

M32 = 0xFFFFFFFF


def _sx(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _signed(value: int) -> int:
    return _sx(value, 32)


class Rv32Core:
    def __init__(self) -> None:
        self.imem = [0] * 64
        self.dmem = [0] * 64
        self.regs = [0] * 32
        self.pc = 0
        self.f_valid, self.f_instr, self.f_pc = 0, 0, 0
        self.wb = (0, 0, 0)

    def _execute(self) -> tuple[bool, int, bool, int, int | None, int]:
        """(writes, result, redirect, target, store address index or None, store data)."""
        ins, pc = self.f_instr, self.f_pc
        op, rd, f3 = ins & 0x7F, (ins >> 7) & 31, (ins >> 12) & 7
        a, b = self.regs[(ins >> 15) & 31], self.regs[(ins >> 20) & 31]
        f7 = ins >> 25
        imm_i = _sx(ins >> 20, 12) & M32
        shamt = (ins >> 20) & 31
        writes, result, redirect, target, store = False, 0, False, 0, None
        del rd
        if op == 0b0110011:
            if f7 == 0:
                writes = True
                sh = b & 31
                result = [a + b, a << sh, int(_signed(a) < _signed(b)), int(a < b), a ^ b, a >> sh, a | b, a & b][f3]
            elif f7 == 0x20 and f3 == 0:
                writes, result = True, a - b
            elif f7 == 0x20 and f3 == 5:
                writes, result = True, _signed(a) >> (b & 31)
        elif op == 0b0010011:
            if f3 == 0:
                writes, result = True, a + imm_i
            elif f3 == 2:
                writes, result = True, int(_signed(a) < _signed(imm_i))
            elif f3 == 3:
                writes, result = True, int(a < imm_i)
            elif f3 == 4:
                writes, result = True, a ^ imm_i
            elif f3 == 6:
                writes, result = True, a | imm_i
            elif f3 == 7:
                writes, result = True, a & imm_i
            elif f3 == 1:
                if f7 == 0:
                    writes, result = True, a << shamt
            elif f7 == 0:
                writes, result = True, a >> shamt
            elif f7 == 0x20:
                writes, result = True, _signed(a) >> shamt
        elif op == 0b0110111:
            writes, result = True, ins & 0xFFFFF000
        elif op == 0b0010111:
            writes, result = True, pc + (ins & 0xFFFFF000)
        elif op == 0b1101111:
            imm = (((ins >> 31) & 1) << 20) | (((ins >> 12) & 0xFF) << 12) | (((ins >> 20) & 1) << 11) \
                | (((ins >> 21) & 0x3FF) << 1)
            writes, result, redirect, target = True, pc + 4, True, pc + _sx(imm, 21)
        elif op == 0b1100111:
            writes, result, redirect, target = True, pc + 4, True, (a + imm_i) & ~1
        elif op == 0b1100011:
            imm = (((ins >> 31) & 1) << 12) | (((ins >> 7) & 1) << 11) | (((ins >> 25) & 0x3F) << 5) \
                | (((ins >> 8) & 0xF) << 1)
            target = pc + _sx(imm, 13)
            sa, sb = _signed(a), _signed(b)
            redirect = {0: a == b, 1: a != b, 4: sa < sb, 5: sa >= sb, 6: a < b, 7: a >= b}.get(f3, False)
        elif op == 0b0000011:
            if f3 == 2:
                writes, result = True, self.dmem[((a + imm_i) >> 2) & 63]
        elif op == 0b0100011:
            if f3 == 2:
                imm_s = _sx(((ins >> 25) << 5) | ((ins >> 7) & 31), 12)
                store = ((a + imm_s) >> 2) & 63
        return writes, result & M32, redirect, target & M32, store, b

    def step(self, i: Inputs) -> Outputs:
        if i["rst"]:
            self.regs = [0] * 32
            self.pc, self.f_valid, self.f_instr, self.f_pc = 0, 0, 0, 0
            self.wb = (0, 0, 0)
        else:
            writes, result, redirect, target, store, data = (False, 0, False, 0, None, 0)
            if self.f_valid:
                writes, result, redirect, target, store, data = self._execute()
            rd = (self.f_instr >> 7) & 31
            valid = writes and rd != 0
            self.wb = (int(valid), rd, result)
            if valid:
                self.regs[rd] = result
            if store is not None:
                self.dmem[store] = data
            if redirect:
                self.pc, self.f_valid = target, 0
            else:
                self.f_instr, self.f_pc, self.f_valid = self.imem[(self.pc >> 2) & 63], self.pc, 1
                self.pc = (self.pc + 4) & M32
        if i["load_we"]:
            mem = self.dmem if i["load_addr"] & 64 else self.imem
            mem[i["load_addr"] & 63] = i["load_data"]
        valid, rd, data = self.wb
        return {"pc": self.pc, "wb_valid": valid, "wb_rd": rd if valid else None, "wb_data": data if valid else None}


# -- a random program generator: legal encodings, mostly, with a bias to a few registers ----


def _r(f7: int, rs2: int, rs1: int, f3: int, rd: int, op: int) -> int:
    return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def _i(imm: int, rs1: int, f3: int, rd: int, op: int) -> int:
    return ((imm & 0xFFF) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def _s(imm: int, rs2: int, rs1: int, f3: int, op: int) -> int:
    imm &= 0xFFF
    return ((imm >> 5) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 31) << 7) | op


def _b(imm: int, rs2: int, rs1: int, f3: int) -> int:
    imm &= 0x1FFF
    return (((imm >> 12) & 1) << 31) | (((imm >> 5) & 0x3F) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) \
        | (((imm >> 1) & 0xF) << 8) | (((imm >> 11) & 1) << 7) | 0b1100011


def _j(imm: int, rd: int) -> int:
    imm &= 0x1FFFFF
    return (((imm >> 20) & 1) << 31) | (((imm >> 1) & 0x3FF) << 21) | (((imm >> 11) & 1) << 20) \
        | (((imm >> 12) & 0xFF) << 12) | (rd << 7) | 0b1101111


def _instruction(rng: random.Random, index: int) -> int:
    def reg() -> int:
        return rng.randrange(8) if rng.random() < 0.8 else rng.randrange(32)

    def imm12() -> int:
        return rng.choice((rng.randint(-8, 8), rng.randint(-2048, 2047), rng.choice((0, 1, -1, 2047, -2048))))

    roll = rng.random()
    if roll < 0.25:
        f3 = rng.randrange(8)
        f7 = 0x20 if f3 in (0, 5) and rng.random() < 0.4 else 0
        return _r(f7, reg(), reg(), f3, reg(), 0b0110011)
    if roll < 0.50:
        f3 = rng.randrange(8)
        if f3 in (1, 5):
            f7 = 0x20 if f3 == 5 and rng.random() < 0.5 else 0
            return _r(f7, rng.randrange(32), reg(), f3, reg(), 0b0010011)
        return _i(imm12(), reg(), f3, reg(), 0b0010011)
    if roll < 0.56:
        return (rng.getrandbits(20) << 12) | (reg() << 7) | rng.choice((0b0110111, 0b0010111))
    if roll < 0.68:
        base = 0 if rng.random() < 0.6 else reg()
        offset = rng.randrange(64) * 4 if base == 0 else imm12()
        if rng.random() < 0.5:
            return _i(offset, base, 2, reg(), 0b0000011)
        return _s(offset, reg(), base, 2, 0b0100011)
    if roll < 0.86:
        forward = rng.random() < 0.7 or index < 2
        offset = rng.randint(1, 6) * 4 if forward else -rng.randint(1, min(index, 8)) * 4
        return _b(offset, reg(), reg(), rng.choice((0, 1, 4, 5, 6, 7, 0, 1)))
    if roll < 0.91:
        return _j(rng.randint(1, 5) * 4, reg())
    if roll < 0.94:
        return _i(rng.randrange(64) * 4, 0, 0, reg(), 0b1100111)  # jalr to an absolute address
    if roll < 0.97:
        return rng.getrandbits(32)  # anything: unsupported encodings are no-ops
    return _r(rng.getrandbits(7), reg(), reg(), rng.randrange(8), reg(), 0b0110011)


def _rv32_stimulus(rng: random.Random) -> Iterator[Inputs]:
    """Load a random program and data memory (reset held), then run it for 1500-4000 cycles."""
    while True:
        program = [_instruction(rng, k) for k in range(64)]
        data = [rng.getrandbits(32) if rng.random() < 0.7 else rng.randint(0, 300) for _ in range(64)]
        for addr, word in enumerate(program + data):
            yield {"rst": 1, "load_we": 1, "load_addr": addr, "load_data": word}
        for _ in range(rng.randint(1500, 4000)):
            yield {"rst": int(rng.random() < 0.0005), "load_we": 0, "load_addr": rng.getrandbits(7),
                   "load_data": rng.getrandbits(32)}  # fmt: skip


RV32_SPEC = """\
A two-stage pipelined RV32I-subset processor core with its own 64-word instruction memory and
64-word data memory (32-bit words), loaded through a load port.

Load port: at every rising edge where `load_we` is 1, `load_data` is written to the data
memory word `load_addr[5:0]` if `load_addr[6]` is 1, else to the instruction memory word
`load_addr[5:0]`. This happens whether or not the core is in reset, and it takes priority
over a store of the core to the same data word at the same edge. Neither memory is reset.

Reset: `rst` is synchronous and active high. At a rising edge with `rst` = 1: pc = 0, the
fetched instruction is invalid, `wb_valid` = 0 and all 32 registers x0..x31 are cleared.

Pipeline. The fetch stage holds the register `pc` (output `pc`) and the instruction register
(valid bit, instruction word, and the address it was fetched from). The execute stage executes
the instruction in the instruction register, if it is valid, during the cycle (combinationally:
register file and data memory are read asynchronously). At each rising edge without reset:
  - if the executed instruction writes a register rd != 0 (see below), rd takes the result;
    `wb_valid` becomes 1, `wb_rd` = rd and `wb_data` = the result; otherwise `wb_valid`
    becomes 0 (`wb_rd` and `wb_data` are then don't-cares);
  - an executed SW writes the data memory word ((rs1 + imm) >> 2) mod 64;
  - if the executed instruction is a taken branch, JAL or JALR: pc becomes the target and the
    instruction register becomes invalid (the instruction fetched meanwhile is flushed);
  - otherwise the instruction register takes instruction memory word pc[7:2] (the contents
    before this edge's load write), with its address pc, and becomes valid; pc becomes pc + 4.
x0 always reads 0. Addresses wrap: the instruction memory is indexed by pc[7:2], the data
memory by address bits [7:2]; misaligned addresses simply use those bits. All arithmetic is
32-bit, wrapping.

Instructions executed (standard RV32I encodings; any other encoding, including the listed
opcodes with other funct3/funct7 values, is a no-op that writes nothing and does not redirect):
  - OP (opcode 0110011), funct7 = 0000000: ADD, SLL, SLT, SLTU, XOR, SRL, OR, AND (funct3 0-7);
    funct7 = 0100000: SUB (funct3 0) and SRA (funct3 5). Shift amounts are rs2[4:0].
  - OP-IMM (0010011): ADDI (0), SLTI (2), SLTIU (3), XORI (4), ORI (6), ANDI (7) with the
    sign-extended 12-bit immediate (SLTIU compares unsigned with the sign-extended immediate);
    SLLI (funct3 1, funct7 0000000), SRLI (funct3 5, funct7 0000000), SRAI (funct3 5, funct7
    0100000), shift amount instr[24:20].
  - LUI (0110111), AUIPC (0010111, adds the instruction's own address).
  - JAL (1101111) and JALR (1100111, any funct3): rd = address of the instruction + 4; targets
    address + J-immediate and (rs1 + I-immediate) with bit 0 cleared.
  - BRANCH (1100011): BEQ (0), BNE (1), BLT (4), BGE (5), BLTU (6), BGEU (7); target = address
    of the branch + B-immediate. funct3 2 and 3 are no-ops.
  - LW (0000011, funct3 2): rd = data word ((rs1 + I-immediate) >> 2) mod 64.
  - SW (0100011, funct3 2): stores rs2 (S-immediate).
"""

TASKS = [
    DesignTask(
        name="rv32i_pipeline",
        category="heavy",
        difficulty="hard",
        spec=RV32_SPEC,
        ports=(In("clk"), In("rst"), In("load_we"), In("load_addr", 7), In("load_data", 32), Out("pc", 32),
               Out("wb_valid"), Out("wb_rd", 5), Out("wb_data", 32)),  # fmt: skip
        clock="clk",
        reset=Reset("rst"),
        model=Rv32Core,
        stimulus=_rv32_stimulus,
        vectors=150_000,
        cycle_cost_us=17,
        reference="""\
module TopModule (
  input clk,
  input rst,
  input load_we,
  input [6:0] load_addr,
  input [31:0] load_data,
  output reg [31:0] pc,
  output reg wb_valid,
  output reg [4:0] wb_rd,
  output reg [31:0] wb_data
);
  reg [31:0] imem [0:63];
  reg [31:0] dmem [0:63];
  reg [31:0] regs [0:31];
  reg [31:0] f_instr, f_pc;
  reg f_valid;
  wire [6:0] opcode = f_instr[6:0];
  wire [4:0] rd = f_instr[11:7];
  wire [2:0] funct3 = f_instr[14:12];
  wire [6:0] funct7 = f_instr[31:25];
  wire [31:0] a = regs[f_instr[19:15]];
  wire [31:0] b = regs[f_instr[24:20]];
  wire [31:0] imm_i = {{20{f_instr[31]}}, f_instr[31:20]};
  wire [31:0] imm_s = {{20{f_instr[31]}}, f_instr[31:25], f_instr[11:7]};
  wire [31:0] imm_b = {{19{f_instr[31]}}, f_instr[31], f_instr[7], f_instr[30:25], f_instr[11:8], 1'b0};
  wire [31:0] imm_u = {f_instr[31:12], 12'd0};
  wire [31:0] imm_j = {{11{f_instr[31]}}, f_instr[31], f_instr[19:12], f_instr[20], f_instr[30:21], 1'b0};
  wire [4:0] shamt = f_instr[24:20];
  wire [31:0] load_addr_c = a + imm_i;
  wire [31:0] store_addr = a + imm_s;
  wire [31:0] load_word = dmem[load_addr_c[7:2]];

  reg writes, redirect, store;
  reg [31:0] result, target;
  always @* begin
    writes = 1'b0;
    redirect = 1'b0;
    store = 1'b0;
    result = 32'd0;
    target = 32'd0;
    if (f_valid) begin
      case (opcode)
        7'b0110011: begin
          if (funct7 == 7'b0000000) begin
            writes = 1'b1;
            case (funct3)
              3'd0: result = a + b;
              3'd1: result = a << b[4:0];
              3'd2: result = {31'd0, $signed(a) < $signed(b)};
              3'd3: result = {31'd0, a < b};
              3'd4: result = a ^ b;
              3'd5: result = a >> b[4:0];
              3'd6: result = a | b;
              default: result = a & b;
            endcase
          end else if (funct7 == 7'b0100000 && funct3 == 3'd0) begin
            writes = 1'b1;
            result = a - b;
          end else if (funct7 == 7'b0100000 && funct3 == 3'd5) begin
            writes = 1'b1;
            result = $signed(a) >>> b[4:0];
          end
        end
        7'b0010011: begin
          case (funct3)
            3'd0: begin writes = 1'b1; result = a + imm_i; end
            3'd2: begin writes = 1'b1; result = {31'd0, $signed(a) < $signed(imm_i)}; end
            3'd3: begin writes = 1'b1; result = {31'd0, a < imm_i}; end
            3'd4: begin writes = 1'b1; result = a ^ imm_i; end
            3'd6: begin writes = 1'b1; result = a | imm_i; end
            3'd7: begin writes = 1'b1; result = a & imm_i; end
            3'd1: if (funct7 == 7'b0000000) begin writes = 1'b1; result = a << shamt; end
            default: begin
              if (funct7 == 7'b0000000) begin writes = 1'b1; result = a >> shamt; end
              else if (funct7 == 7'b0100000) begin writes = 1'b1; result = $signed(a) >>> shamt; end
            end
          endcase
        end
        7'b0110111: begin writes = 1'b1; result = imm_u; end
        7'b0010111: begin writes = 1'b1; result = f_pc + imm_u; end
        7'b1101111: begin writes = 1'b1; result = f_pc + 32'd4; redirect = 1'b1; target = f_pc + imm_j; end
        7'b1100111: begin writes = 1'b1; result = f_pc + 32'd4; redirect = 1'b1; target = (a + imm_i) & ~32'd1; end
        7'b1100011: begin
          target = f_pc + imm_b;
          case (funct3)
            3'd0: redirect = (a == b);
            3'd1: redirect = (a != b);
            3'd4: redirect = ($signed(a) < $signed(b));
            3'd5: redirect = ($signed(a) >= $signed(b));
            3'd6: redirect = (a < b);
            3'd7: redirect = (a >= b);
            default: redirect = 1'b0;
          endcase
        end
        7'b0000011: if (funct3 == 3'd2) begin writes = 1'b1; result = load_word; end
        7'b0100011: if (funct3 == 3'd2) store = 1'b1;
        default: ;
      endcase
    end
  end

  integer k;
  always @(posedge clk) begin
    if (rst) begin
      pc <= 32'd0;
      f_valid <= 1'b0;
      f_instr <= 32'd0;
      f_pc <= 32'd0;
      wb_valid <= 1'b0;
      wb_rd <= 5'd0;
      wb_data <= 32'd0;
      for (k = 0; k < 32; k = k + 1) regs[k] <= 32'd0;
    end else begin
      wb_valid <= writes && (rd != 5'd0);
      wb_rd <= rd;
      wb_data <= result;
      if (writes && (rd != 5'd0)) regs[rd] <= result;
      if (store) dmem[store_addr[7:2]] <= b;
      if (redirect) begin
        pc <= target;
        f_valid <= 1'b0;
      end else begin
        f_instr <= imem[pc[7:2]];
        f_pc <= pc;
        f_valid <= 1'b1;
        pc <= pc + 32'd4;
      end
    end
    if (load_we) begin
      if (load_addr[6]) dmem[load_addr[5:0]] <= load_data;
      else imem[load_addr[5:0]] <= load_data;
    end
  end
endmodule
""",
    ),
]
