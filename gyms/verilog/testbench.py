"""The SystemVerilog testbench of a built-in task: it applies the stimulus and records outputs.

The testbench reads its stimulus with `$readmemh` (no `$random`: every simulator sees the
same vectors) and writes the design's outputs at each sample time to `outputs.txt`
(`recorded.py`). It knows nothing of the expected values: those stay on the host, where
`score` compares the recorded outputs with the golden model. A design that prints a verdict,
ends the simulation early or reads the testbench's files gains nothing, because no verdict
comes out of the sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """The recorded outputs (`data`, as read from the turn directory) against the golden model.

    Well-formed files of 0s and 1s (the usual case) are compared whole, as big integers
    (`_fast_score`), which gives the same score as the line-by-line comparison below (the
    tests check it) in a fraction of the time: a heavy task records 10^5+ lines per step.
    Anything else (x or z bits, malformed files) takes the line-by-line path."""
    outs = task.outputs
    widths = [p.width for p in outs]
    if data is not None and len(vectors):
        fast = _fast_score(task, vectors, widths, data)
        if fast is not None:
            return fast
    return _line_score(task, vectors, widths, data)


def _line_score(task: DesignTask, vectors: Vectors, widths: list[int], data: bytes | None) -> Score | NoVerdict:
    outs = task.outputs
    rows = recorded.parse(data, len(vectors), widths)
    if isinstance(rows, NoVerdict):
        return rows

    def expected(i: int) -> list[tuple[int, int]]:
        return list(zip(_fields(vectors.expected[i], widths), _fields(vectors.care[i], widths)))

    return recorded.compare(rows, [p.name for p in outs], widths, expected, _describer(task, vectors))


def _describer(task: DesignTask, vectors: Vectors) -> recorded.Describe:
    step = "cycle" if task.clock else "vector"

    def describe(i: int, name: str, want: str, got: str) -> list[str]:
        applied = _fields(vectors.stimulus[i], [p.width for p in task.inputs])
        shown_inputs = " ".join(f"{p.name}={p.width}'h{v:x}" for p, v in zip(task.inputs, applied))
        return [f"MISMATCH {step} {i}: output {name} expected {want} got {got}", f"  inputs of {step} {i}: {shown_inputs}"]

    return describe


# -- whole-file comparison -----------------------------------------------------------------
#
# A well-formed file is N lines of the same layout, so it is compared as one big integer read
# straight from its bytes: each recorded bit is one ASCII byte, '0' (0x30) or '1' (0x31), which
# differ in their lowest bit only. `expected` holds the golden model's bits in that layout and
# `care` 0x01 at every byte whose bit is checked, so the whole file passes when
# (file ^ expected) & care == 0. Failed checks are counted per output by OR-ing each field's
# bytes into its last byte (shifts within the field only) and counting those bytes.

_BINARY = bytes(0x61 if b in b"01" else 0x62 if b in b"xz" else b if b in b" \n" else 0x3F for b in range(256))


@dataclass(frozen=True)
class _Layout:
    expected: int
    care: int
    checks: int  # (line, output) pairs with any care bit


_layouts: dict[int, tuple[Vectors, tuple[int, ...], _Layout]] = {}


def _layout(vectors: Vectors, widths: list[int]) -> _Layout:
    """The expected bytes and care mask of a file of these vectors (cached per vectors)."""
    key = id(vectors)
    found = _layouts.get(key)
    if found is not None and found[0] is vectors and found[1] == tuple(widths):
        return found[2]
    total = sum(widths)
    expected = bytearray()
    care = bytearray()
    checks = 0
    for word, cared in zip(vectors.expected, vectors.care):
        bits = format(word, f"0{total}b")
        cbits = format(cared, f"0{total}b")
        row, crow, start = [], [], 0
        for width in widths:
            row.append(bits[start : start + width])
            crow.append(cbits[start : start + width])
            start += width
        expected += (" ".join(row) + "\n").encode()
        crow_text = " ".join(crow) + " "
        care += crow_text.encode().translate(_CARE)
        checks += sum(1 for c in _fields(cared, widths) if c)
    layout = _Layout(int.from_bytes(expected, "big"), int.from_bytes(care, "big"), checks)
    if len(_layouts) >= 8:
        _layouts.pop(next(iter(_layouts)))
    _layouts[key] = (vectors, tuple(widths), layout)
    return layout


_CARE = bytes(1 if b == ord("1") else 0 for b in range(256))


def _fast_score(task: DesignTask, vectors: Vectors, widths: list[int], data: bytes) -> Score | None:
    """The score of a well-formed all-binary file, or None (then the line-by-line path decides)."""
    count = len(vectors)
    line = recorded.line_bytes(widths)
    if len(data) != count * line:
        return None
    template = (" ".join("a" * w for w in widths) + "\n").encode()
    if data.translate(_BINARY) != template * count:
        return None  # x/z bits, or not exactly this layout: the strict line-by-line parser
    layout = _layout(vectors, widths)
    diff = (int.from_bytes(data, "big") ^ layout.expected) & layout.care
    if not diff:
        return Score(layout.checks, layout.checks, ())
    failed_rows = 0
    counts = []  # failed checks per output
    firsts = []  # per output, a bit set in its first failing line (0: none)
    offset = 0  # bytes from the start of a line to the current field
    for width in widths:
        pattern = bytearray(line)
        pattern[offset : offset + width] = b"\x01" * width
        tail = bytearray(line)
        tail[offset + width - 1] = 1
        t = diff & int.from_bytes(bytes(pattern) * count, "big")
        covered = 1
        while covered < width:  # OR the field's bytes into its last byte, never past its first
            step = min(covered, width - covered)
            t |= t >> (8 * step)
            covered += step
        hits = t & int.from_bytes(bytes(tail) * count, "big")
        counts.append(hits.bit_count())
        firsts.append(1 << (hits.bit_length() - 1) if hits else 0)
        failed_rows |= hits
        offset += width + 1
    failed = sum(counts)
    found = _mismatches(task, vectors, widths, data, _first_lines(failed_rows, firsts, len(data), line))
    names = [p.name for p in task.outputs]
    return Score(layout.checks - failed, layout.checks, recorded.feedback(names, counts, found, _describer(task, vectors)))


def _first_lines(rows: int, firsts: list[int], total: int, line: int) -> list[int]:
    """The line numbers to describe: the first MAX_SHOWN failing lines (`rows`: a bit set in each),
    and each output's first failing line (`firsts`), in file order."""
    def number(bits: int) -> int:  # the line of the highest set bit: the first one in the file
        return (total - 1 - (bits.bit_length() - 1) // 8) // line

    chosen = {number(bits) for bits in firsts if bits}
    for _ in range(recorded.MAX_SHOWN):
        if not rows:
            break
        i = number(rows)
        chosen.add(i)
        rows &= (1 << (8 * (total - (i + 1) * line))) - 1  # the lines after this one
    return sorted(chosen)


def _mismatches(task: DesignTask, vectors: Vectors, widths: list[int], data: bytes, numbers: list[int]) -> list[recorded.Mismatch]:
    """The mismatches of the given lines, in file order."""
    line = recorded.line_bytes(widths)
    found = []
    for i in numbers:
        fields = data[i * line : (i + 1) * line - 1].decode("ascii").split(" ")
        for k, (value, care) in enumerate(zip(_fields(vectors.expected[i], widths), _fields(vectors.care[i], widths))):
            if care and not recorded.matches(fields[k], value, care):
                found.append((i, k, f"{widths[k]}'h{value & care:x}", recorded.shown(widths[k], fields[k])))
    return found


def _fields(word: int, widths: list[int]) -> list[int]:
    """A packed word split into port values (the first port in the most significant bits)."""
    values = []
    for width in reversed(widths):
        values.append(word & ((1 << width) - 1))
        word >>= width
    return values[::-1]
