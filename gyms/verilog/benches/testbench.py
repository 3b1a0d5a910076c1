"""The SystemVerilog testbench of a built-in task: it applies the stimulus and records outputs.

The testbench reads its stimulus with `$readmemh` (no `$random`: every simulator sees the
same vectors) and writes the design's outputs of each vector to `outputs.txt` (`recorded.py`).
It knows nothing of the expected values: those stay on the host, where `score` compares the
recorded outputs with the golden model. A design that prints a verdict, ends the simulation
early or reads the testbench's files gains nothing, because no verdict comes out of the sandbox.

Outputs are checked over a window, not at an instant (docs/gyms/verilog.md, "Timing
contract"): from the time step at which the golden model's values become due (the rising edge;
for a combinational task, the inputs' change) until the next inputs, each output must hold one
value. The testbench records the values at the end of the window and, per output, whether it
changed inside the window (any change after the due time step, to the picosecond and below:
`$realtime` is exact). So a design that is right only at some instant of the window, or that
glitches after a delay, fails; zero-delay logic settles within the due time step and passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gyms.verilog.benches import recorded
from gyms.verilog.benches.recorded import OUTPUTS, NoVerdict, Score
from gyms.verilog.benches.vectors import Vectors, bits, hex_lines
from gyms.verilog.spec import MODULE, DesignTask

TB_TOP = "heavygym_tb"
STIMULUS = "stim.hex"
WAVES = "waves.vcd"
PERIOD_NS = 10  # one vector (clock cycle): inputs at +1 ns, rising edge at +5 ns, falling at +10 ns
INPUTS_AT_NS, EDGE_AT_NS = 1, 5


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
    # A process per output (Verilator runs an always block without edges once, as logic).
    watchers = "\n".join(f"  initial forever begin @({p.name}); heavygym_changed[{k}] = $realtime; end"
                          for k, p in enumerate(outs))  # fmt: skip
    fmt = " ".join("%b" for _ in range(len(outs) + 1))
    moved = ", ".join(f"heavygym_changed[{k}] > heavygym_due" for k in range(len(outs)))
    # A registered output that changed between the inputs and the rising edge counts as moved
    # in this vector's window too (`heavygym_early`, taken just before the edge).
    early_or = " | heavygym_early" if task.clock else ""
    record = f'$fwrite(fd, "{fmt}\\n", {", ".join(p.name for p in outs)}, {{{moved}}}{early_or});'
    apply = f"{{{', '.join(p.name for p in ins)}}} = stimulus[i];" if ins else ""
    if task.clock:
        body = f"""      {apply}
      heavygym_applied = $realtime;
      #{EDGE_AT_NS - INPUTS_AT_NS} heavygym_early = {_early(task)};
      {task.clock} = 1'b1;
      heavygym_due = $realtime;
      #{PERIOD_NS - EDGE_AT_NS} {task.clock} = 1'b0;
      #{INPUTS_AT_NS} {record}"""
    else:
        body = f"""      {apply}
      heavygym_due = $realtime;
      #{PERIOD_NS} {record}"""
    dump = f'    $dumpfile("{WAVES}");\n    $dumpvars(0, {TB_TOP});\n' if waves else ""
    return f"""`timescale 1ns/1ps
module {TB_TOP};
  localparam integer N = {count};
  reg [{max(in_bits, 1) - 1}:0] stimulus [0:N-1];
{chr(10).join(decls)}
  integer i, fd;
  // When each output last changed, and when the values of the current vector became due.
  realtime heavygym_changed [0:{len(outs) - 1}];
  realtime heavygym_due, heavygym_applied;
  reg [{len(outs) - 1}:0] heavygym_early;  // per output: a registered one changed before the edge

  {MODULE} dut ({conns});

{watchers}

  initial begin
    $readmemh("{STIMULUS}", stimulus);
    fd = $fopen("{OUTPUTS}", "w");
{dump}    #{INPUTS_AT_NS};
    for (i = 0; i < N; i = i + 1) begin
      // The window of vector i ends as the next inputs are applied: record, then go on.
{body}
    end
    $fclose(fd);
    $finish;
  end
endmodule
"""


def _early(task: DesignTask) -> str:
    """Per output (first output first), whether a registered output changed between the inputs'
    change (that time step included) and the rising edge; never while an asynchronous reset is
    asserted, which may take it to its reset value there."""
    reset = task.reset
    held = f"{reset.name} == 1'b{reset.active}" if reset is not None and reset.asynchronous else None
    bits = []
    for k, registered in enumerate(task.registered):
        moved = f"heavygym_changed[{k}] >= heavygym_applied"
        bits.append(("1'b0" if not registered else f"(!({held}) && {moved})" if held else f"({moved})"))
    return "{" + ", ".join(bits) + "}"


def _range(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def size_limit(task: DesignTask, count: int) -> int:
    return count * recorded.line_bytes(_recorded_widths(task))


def _recorded_widths(task: DesignTask) -> list[int]:
    """Each output's width, then the field of one bit per output: whether it moved in its window."""
    return [*(p.width for p in task.outputs), len(task.outputs)]


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
    rows = recorded.parse(data, len(vectors), _recorded_widths(task))
    if isinstance(rows, NoVerdict):
        return rows

    def expected(i: int) -> list[tuple[int, int]]:
        return list(zip(_fields(vectors.expected[i], widths), _fields(vectors.care[i], widths)))

    def moved(i: int, k: int) -> bool:
        return rows[i][-1][k] != "0"

    return recorded.compare(rows, [p.name for p in outs], widths, expected, _describer(task, vectors, moved), moved)


def _describer(task: DesignTask, vectors: Vectors, moved: Callable[[int, int], bool]) -> recorded.Describe:
    step = "cycle" if task.clock else "vector"
    index = {p.name: k for k, p in enumerate(task.outputs)}

    def describe(i: int, name: str, want: str, got: str) -> list[str]:
        applied = _fields(vectors.stimulus[i], [p.width for p in task.inputs])
        shown_inputs = " ".join(f"{p.name}={p.width}'h{v:x}" for p, v in zip(task.inputs, applied))
        if moved(i, index[name]):
            start = i * PERIOD_NS + (EDGE_AT_NS if task.clock else INPUTS_AT_NS)
            since = "the rising edge" if task.clock else "the inputs"
            until = (i + 1) * PERIOD_NS + INPUTS_AT_NS
            what = (f"expected {want} from {since} at {start} ns until the next inputs at {until} ns, "
                    f"but it changed in between (ending at {got})")
            if task.registered[index[name]]:
                what += (f"; or, being a registered output, it changed without a clock edge, between the "
                         f"inputs at {i * PERIOD_NS + INPUTS_AT_NS} ns and the rising edge at {start} ns")
        else:
            what = f"expected {want} got {got}"
        return [f"MISMATCH {step} {i}: output {name} {what}", f"  inputs of {step} {i}: {shown_inputs}"]

    return describe


# -- whole-file comparison -----------------------------------------------------------------
#
# A well-formed file is N lines of the same layout, so it is compared as one big integer read
# straight from its bytes: each recorded bit is one ASCII byte, '0' (0x30) or '1' (0x31), which
# differ in their lowest bit only. `expected` holds the golden model's bits in that layout and
# `care` 0x01 at every byte whose bit is checked, so the whole file passes when
# (file ^ expected) & care == 0. Failed checks are counted per output by OR-ing each field's
# bytes, and the output's byte of the last field (whether it moved: expected '0'), into its
# last byte (shifts within a line only) and counting those bytes.

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
        checked = "".join("1" if "1" in c else "0" for c in crow)  # the outputs that must not move
        expected += (" ".join(row) + " " + "0" * len(widths) + "\n").encode()
        care += (" ".join(crow) + " " + checked + " ").encode().translate(_CARE)
        checks += checked.count("1")
    layout = _Layout(int.from_bytes(expected, "big"), int.from_bytes(care, "big"), checks)
    if len(_layouts) >= 8:
        _layouts.pop(next(iter(_layouts)))
    _layouts[key] = (vectors, tuple(widths), layout)
    return layout


_CARE = bytes(1 if b == ord("1") else 0 for b in range(256))


def _fast_score(task: DesignTask, vectors: Vectors, widths: list[int], data: bytes) -> Score | None:
    """The score of a well-formed all-binary file, or None (then the line-by-line path decides)."""
    count = len(vectors)
    line = recorded.line_bytes([*widths, len(widths)])
    if len(data) != count * line:
        return None
    template = (" ".join("a" * w for w in [*widths, len(widths)]) + "\n").encode()
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
    moved_at = line - 1 - len(widths)  # the first byte of the moved field
    for k, width in enumerate(widths):
        pattern = bytearray(line)
        pattern[offset : offset + width] = b"\x01" * width
        tail = bytearray(line)
        tail[offset + width - 1] = 1
        flag = bytearray(line)
        flag[moved_at + k] = 1
        t = diff & int.from_bytes(bytes(pattern) * count, "big")
        covered = 1
        while covered < width:  # OR the field's bytes into its last byte, never past its first
            step = min(covered, width - covered)
            t |= t >> (8 * step)
            covered += step
        t |= (diff & int.from_bytes(bytes(flag) * count, "big")) << (8 * (moved_at + k - (offset + width - 1)))
        hits = t & int.from_bytes(bytes(tail) * count, "big")
        counts.append(hits.bit_count())
        firsts.append(1 << (hits.bit_length() - 1) if hits else 0)
        failed_rows |= hits
        offset += width + 1
    failed = sum(counts)
    found = _mismatches(task, vectors, widths, data, _first_lines(failed_rows, firsts, len(data), line))
    names = [p.name for p in task.outputs]

    def moved(i: int, k: int) -> bool:
        return data[i * line + moved_at + k] != ord("0")

    describe = _describer(task, vectors, moved)
    return Score(layout.checks - failed, layout.checks, recorded.feedback(names, counts, found, describe))


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
    line = recorded.line_bytes([*widths, len(widths)])
    found = []
    for i in numbers:
        fields = data[i * line : (i + 1) * line - 1].decode("ascii").split(" ")
        for k, (value, care) in enumerate(zip(_fields(vectors.expected[i], widths), _fields(vectors.care[i], widths))):
            if care and (not recorded.matches(fields[k], value, care) or fields[-1][k] != "0"):
                found.append((i, k, f"{widths[k]}'h{value & care:x}", recorded.shown(widths[k], fields[k])))
    return found


def _fields(word: int, widths: list[int]) -> list[int]:
    """A packed word split into port values (the first port in the most significant bits)."""
    values = []
    for width in reversed(widths):
        values.append(word & ((1 << width) - 1))
        word >>= width
    return values[::-1]
