"""The SystemVerilog testbench of a built-in task: it applies the stimulus and records outputs.

The testbench reads its stimulus with `$readmemh` (no `$random`: every simulator sees the
same vectors) and writes the design's outputs at each sample time to `outputs.txt`
(`recorded.py`). It knows nothing of the expected values: those stay on the host, where
`score` compares the recorded outputs with the golden model. A design that prints a verdict,
ends the simulation early or reads the testbench's files gains nothing, because no verdict
comes out of the sandbox.
"""

from __future__ import annotations

from gyms.verilog import recorded
from gyms.verilog.recorded import OUTPUTS, NoVerdict, Score
from gyms.verilog.spec import MODULE, DesignTask
from gyms.verilog.vectors import Vectors, bits, hex_lines

TB_TOP = "heavygym_tb"
STIMULUS = "stim.hex"
WAVES = "waves.vcd"


def stimulus_file(task: DesignTask, vectors: Vectors) -> str:
    return hex_lines(vectors.stimulus, bits(task.inputs))


def render(task: DesignTask, count: int, waves: bool) -> str:
    """The testbench source for `count` vectors (the stimulus comes from `stimulus_file`)."""
    ins, outs = task.inputs, task.outputs
    in_bits = bits(ins)
    decls = [f"  reg {_range(p.width)}{p.name};" for p in ins]
    decls += [f"  wire {_range(p.width)}{p.name};" for p in outs]
    if task.clock:
        decls.append(f"  reg {task.clock} = 1'b0;")
    conns = ", ".join(f".{p.name}({p.name})" for p in task.ports)
    fmt = " ".join("%b" for _ in outs)
    record = f'$fwrite(fd, "{fmt}\\n", {", ".join(p.name for p in outs)});'
    apply = f"{{{', '.join(p.name for p in ins)}}} = stimulus[i];" if ins else ""
    if task.clock:
        body = f"""      #1 {apply}
      #4 {task.clock} = 1'b1;
      #2 {record}
      #3 {task.clock} = 1'b0;"""
    else:
        body = f"""      #1 {apply}
      #4 {record}
      #5;"""
    dump = f'    $dumpfile("{WAVES}");\n    $dumpvars(0, {TB_TOP});\n' if waves else ""
    return f"""`timescale 1ns/1ps
module {TB_TOP};
  localparam integer N = {count};
  reg [{max(in_bits, 1) - 1}:0] stimulus [0:N-1];
{chr(10).join(decls)}
  integer i, fd;

  {MODULE} dut ({conns});

  initial begin
    $readmemh("{STIMULUS}", stimulus);
    fd = $fopen("{OUTPUTS}", "w");
{dump}    for (i = 0; i < N; i = i + 1) begin
{body}
    end
    $fclose(fd);
    $finish;
  end
endmodule
"""


def _range(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def size_limit(task: DesignTask, count: int) -> int:
    return count * recorded.line_bytes([p.width for p in task.outputs])


def score(task: DesignTask, vectors: Vectors, data: bytes | None) -> Score | NoVerdict:
    """The recorded outputs (`data`, as read from the turn directory) against the golden model."""
    outs = task.outputs
    widths = [p.width for p in outs]
    rows = recorded.parse(data, len(vectors), widths)
    if isinstance(rows, NoVerdict):
        return rows
    step = "cycle" if task.clock else "vector"

    def expected(i: int) -> list[tuple[int, int]]:
        return list(zip(_fields(vectors.expected[i], widths), _fields(vectors.care[i], widths)))

    def describe(i: int, name: str, want: str, got: str) -> list[str]:
        applied = _fields(vectors.stimulus[i], [p.width for p in task.inputs])
        shown_inputs = " ".join(f"{p.name}={p.width}'h{v:x}" for p, v in zip(task.inputs, applied))
        return [f"MISMATCH {step} {i}: output {name} expected {want} got {got}", f"  inputs of {step} {i}: {shown_inputs}"]

    return recorded.compare(rows, [p.name for p in outs], widths, expected, describe)


def _fields(word: int, widths: list[int]) -> list[int]:
    """A packed word split into port values (the first port in the most significant bits)."""
    values = []
    for width in reversed(widths):
        values.append(word & ((1 << width) - 1))
        word >>= width
    return values[::-1]
