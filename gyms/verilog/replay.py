"""VerilogEval without its reference in the sandbox: record the reference once, replay for candidates.

A VerilogEval testbench instantiates the reference (`RefModule`) next to the candidate and
prints its own verdict, so a design that escaped the screen could read the reference's
signals or print `Mismatches: 0`. Instead:

1. **Trusted run** (once per problem, simulator and version): the dataset's own testbench runs
   with the reference as the design under test, wrapped in a recorder `TopModule` that writes
   the time, every input and every output at the end of each time step where one of them
   changed (`$fstrobe`). The trace is then replayed against the reference itself; only if the
   reference reproduces it exactly is the problem replayable (races between the testbench's
   stimulus and the clock can make replay differ; such a problem keeps the old, forgeable
   path and says so).
2. **Candidate run**: a generated testbench drives the recorded inputs at the recorded times
   (clocks first, the other inputs after the design's edge-triggered processes, as a stimulus
   changed at a clock edge is seen by the original testbench's reference) and records the
   candidate's outputs at each of those times. Nothing of the reference is in the sandbox.
3. **Host**: the recorded outputs are compared with the trace (an x in the reference matches
   anything, as in VerilogEval's own check), one check per time step and output.

Traces are cached by content hash under the user's cache directory (mode 700), outside every
sandbox: `$HEAVYGYM_TRACE_CACHE`, else `$XDG_CACHE_HOME/heavygym/verilog-traces`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gyms import cache
from gyms.verilog import recorded
from gyms.verilog.precheck import PortSpec
from gyms.verilog.recorded import OUTPUTS, NoVerdict, Score
from gyms.verilog.simulators import Build

FORMAT = 3  # bump when the recorder or the replay bench changes: old traces are then ignored
TRACE = "trace.txt"
RECORDER_FILE, REPLAY_FILE = "recorder.sv", "replay.sv"
STIMULUS, TIMES = "replay_stim.txt", "replay_times.hex"
REPLAY_TOP = "heavygym_replay"
MAX_TRACE_BYTES = 8 * 2**20
MIN_SAMPLES = 2  # a trace of the initial state alone checks nothing
_CLOCK = re.compile(r"^(clk|clock)\w*$", re.IGNORECASE)


@dataclass(frozen=True)
class Trace:
    times: tuple[int, ...]
    inputs: tuple[str, ...]  # per sample: the inputs' bits, concatenated in port order
    outputs: tuple[tuple[str, ...], ...]  # per sample: each output's bits


def _ins(ports: Sequence[PortSpec]) -> list[PortSpec]:
    return [p for p in ports if p.direction == "input"]


def _outs(ports: Sequence[PortSpec]) -> list[PortSpec]:
    return [p for p in ports if p.direction == "output"]


def _decl(p: PortSpec) -> str:
    return f"[{p.width - 1}:0] " if p.width > 1 else ""


def recorder_source(ports: Sequence[PortSpec], reference: str) -> str:
    """A TopModule with the reference's ports that instantiates it and records every change."""
    header = ", ".join(f"{p.direction} {_decl(p)}{p.name}" for p in ports)
    conns = ", ".join(f".{p.name}({p.name})" for p in ports)
    order = [*_ins(ports), *_outs(ports)]
    fmt = "%0d" + " %b" * len(order)
    args = ", ".join(["$time", *(p.name for p in order)])
    sensitivity = " or ".join(p.name for p in order)
    return f"""`timescale 1ps/1ps
module TopModule ({header});
  {reference} heavygym_ref ({conns});
  integer heavygym_fd;
  initial begin
    heavygym_fd = $fopen("{TRACE}", "w");
    $fstrobe(heavygym_fd, "{fmt}", {args});
  end
  always @({sensitivity}) begin
    $fstrobe(heavygym_fd, "{fmt}", {args});
    $fflush(heavygym_fd);  // a side effect: Verilator runs a block of a lone $fstrobe only once
  end
endmodule
"""


def replay_source(ports: Sequence[PortSpec], count: int) -> str:
    """The candidate's testbench: drive the recorded inputs, record outputs at the same times."""
    ins, outs = _ins(ports), _outs(ports)
    in_bits = sum(p.width for p in ins)
    decls = [f"  reg {_decl(p)}{p.name};" for p in ins] + [f"  wire {_decl(p)}{p.name};" for p in outs]
    conns = ", ".join(f".{p.name}({p.name})" for p in ports)
    first, later, lo = [], [], in_bits
    for p in ins:
        hi, lo = lo - 1, lo - p.width
        value = f"stimulus[i][{hi}:{lo}]"
        first.append(f"        {p.name} = {value};")
        # Later, clocks change first and other inputs after the edge-triggered processes have
        # run (at time 0 there is no edge to race with, and Verilator drops NBAs made then).
        later.append(f"        {p.name} {'=' if _is_clock(p) else '<='} {value};")
    later.sort(key=lambda line: "<=" in line)
    record = f'$fstrobe(fd, "{" ".join("%b" for _ in outs)}", {", ".join(p.name for p in outs)});'
    return f"""`timescale 1ps/1ps
module {REPLAY_TOP};
  localparam integer N = {count};
  reg [{max(in_bits, 1) - 1}:0] stimulus [0:N-1];
  reg [63:0] times [0:N-1];
{chr(10).join(decls)}
  integer i, fd;

  TopModule dut ({conns});

  initial begin
    $readmemb("{STIMULUS}", stimulus);
    $readmemh("{TIMES}", times);
    fd = $fopen("{OUTPUTS}", "w");
    for (i = 0; i < N; i = i + 1) begin
      if (times[i] > $time) #(times[i] - $time);
      if (i == 0) begin
{chr(10).join(first)}
      end else begin
{chr(10).join(later)}
      end
      {record}
    end
    #1 $fclose(fd);
    $finish;
  end
endmodule
"""


def _is_clock(p: PortSpec) -> bool:
    return p.width == 1 and bool(_CLOCK.match(p.name))


def replay_files(ports: Sequence[PortSpec], trace: Trace) -> dict[str, str]:
    stim = "".join(f"{bits or '0'}\n" for bits in trace.inputs)
    times = "".join(f"{t:016x}\n" for t in trace.times)
    return {REPLAY_FILE: replay_source(ports, len(trace.times)), STIMULUS: stim, TIMES: times}


def parse_trace(data: bytes | None, ports: Sequence[PortSpec]) -> Trace | None:
    """The recorder's lines, the last one of each time step kept; None if malformed or empty."""
    if not data:
        return None
    ins, outs = _ins(ports), _outs(ports)
    widths = [p.width for p in (*ins, *outs)]
    per_time: dict[int, list[str]] = {}
    last = -1
    for line in data.decode("ascii", errors="replace").splitlines():
        fields = line.split(" ")
        if len(fields) != len(widths) + 1 or not fields[0].isdigit():
            return None
        values = fields[1:]
        if any(len(v) != w or not set(v) <= set("01xz") for v, w in zip(values, widths)):
            return None
        time = int(fields[0])
        if time < last:
            return None
        last = time
        per_time[time] = values
    times = tuple(per_time)
    inputs = tuple("".join(v[: len(ins)]) for v in per_time.values())
    outputs = tuple(tuple(v[len(ins) :]) for v in per_time.values())
    return Trace(times, inputs, outputs)


def score(trace: Trace, ports: Sequence[PortSpec], data: bytes | None) -> Score | NoVerdict:
    outs, ins = _outs(ports), _ins(ports)
    widths = [p.width for p in outs]
    rows = recorded.parse(data, len(trace.times), widths)
    if isinstance(rows, NoVerdict):
        return rows

    def expected(i: int) -> list[tuple[int, int]]:
        # An x (or z) in the reference is a don't-care, as in VerilogEval's own comparison.
        return [(int(b.translate(_ZERO_UNKNOWN), 2), int(b.translate(_CARE), 2)) for b in trace.outputs[i]]

    def describe(i: int, name: str, want: str, got: str) -> list[str]:
        bits, fields = trace.inputs[i], []
        for p in ins:
            fields.append(f"{p.name}={recorded.shown(p.width, bits[: p.width])}")
            bits = bits[p.width :]
        return [f"MISMATCH at {trace.times[i]} ps: output {name} expected {want} got {got}",
                f"  inputs at {trace.times[i]} ps: {' '.join(fields)}"]  # fmt: skip

    return recorded.compare(rows, [p.name for p in outs], widths, expected, describe)


_ZERO_UNKNOWN = str.maketrans("xz", "00")
_CARE = str.maketrans("01xz", "1100")


def size_limit(ports: Sequence[PortSpec], trace: Trace) -> int:
    return len(trace.times) * recorded.line_bytes([p.width for p in _outs(ports)])


def replayable_ports(ports: Sequence[PortSpec] | None) -> bool:
    return bool(ports) and all(p.direction in ("input", "output") for p in ports) and bool(_outs(ports or ()))


# -- making and caching traces --------------------------------------------------------------

# Runs `files` in a fresh sandboxed directory with `build`, and returns the file `read` (capped).
Runner = Callable[[dict[str, str | bytes], Build, str, int], "bytes | None"]


@dataclass(frozen=True)
class Recording:
    trace: Trace | None  # None: the problem cannot be replayed
    reason: str  # why not, for the run record


def cache_dir() -> Path:
    return cache.cache_dir("verilog-traces", "HEAVYGYM_TRACE_CACHE")


def record(
    test: bytes, ref: bytes, reference: str, ports: Sequence[PortSpec], simulator: str, run: Runner
) -> Recording:
    """The reference's trace for this testbench, from the cache or from a trusted run."""
    key = hashlib.sha256(b"\0".join([test, ref, simulator.encode(), str(FORMAT).encode()])).hexdigest()
    path = cache_dir() / f"{key}.json"
    cached = _load(path)
    if cached is not None:
        return cached
    made = _make(test, ref, reference, ports, run)
    _store(path, made)
    return made


def _make(test: bytes, ref: bytes, reference: str, ports: Sequence[PortSpec], run: Runner) -> Recording:
    recorder = recorder_source(ports, "RefModule")
    files: dict[str, str | bytes] = {"test.sv": test, "ref.sv": ref, RECORDER_FILE: recorder}
    data = run(files, Build(["test.sv", "ref.sv", RECORDER_FILE], "tb"), TRACE, MAX_TRACE_BYTES)
    trace = parse_trace(data, ports)
    if trace is None or len(trace.times) < MIN_SAMPLES:
        return Recording(None, "the reference's trace could not be recorded")
    replay = {**replay_files(ports, trace), "design.sv": reference}
    again = run(replay, Build([REPLAY_FILE, "design.sv"], REPLAY_TOP), OUTPUTS, size_limit(ports, trace))
    checked = score(trace, ports, again)
    if not isinstance(checked, Score) or not checked.all_passed:
        return Recording(None, "the reference does not reproduce its own trace when replayed")
    return Recording(trace, "")


def _load(path: Path) -> Recording | None:
    try:
        blob = json.loads(path.read_text())
        if blob.get("format") != FORMAT:
            return None
        if blob["trace"] is None:
            return Recording(None, blob["reason"])
        t = blob["trace"]
        return Recording(Trace(tuple(t["times"]), tuple(t["inputs"]), tuple(tuple(o) for o in t["outputs"])), "")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(path: Path, made: Recording) -> None:
    trace = made.trace
    blob = {
        "format": FORMAT,
        "reason": made.reason,
        "trace": None if trace is None else {"times": trace.times, "inputs": trace.inputs, "outputs": trace.outputs},
    }
    try:
        cache.write_json_atomically(path, blob)
    except OSError:
        pass  # a cache that cannot be written only costs the trusted run again
