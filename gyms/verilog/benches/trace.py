"""VerilogEval without its reference in the sandbox: the reference's trace, recorded once, checks candidates.

A VerilogEval testbench instantiates the reference (`RefModule`) next to the candidate and
prints its own verdict, so a design that escaped the screen could read the reference's
signals or print `Mismatches: 0`. Instead:

1. **Trusted run** (once per problem, simulator and version): the dataset's own testbench runs
   with the reference as the design under test, wrapped in a recorder `TopModule` that writes
   the time (in fs), every input and every output at the end of each time step where one of
   them changed (`$fstrobe`), and the time the testbench finished. The reference itself is then
   driven with the trace's inputs; only if it reproduces the trace exactly is the problem
   checked by its trace (races between the testbench's stimulus and the clock can make the two
   runs differ; such a problem keeps the old, forgeable path and says so).
2. **Candidate run**: a generated testbench drives the recorded inputs at the recorded times
   (clocks first, the other inputs after the design's edge-triggered processes, as a stimulus
   changed at a clock edge is seen by the original testbench's reference) until the time the
   original testbench finished, and records the candidate's outputs at the end of every time
   step where an input or one of its outputs changed. Nothing of the reference is in the sandbox.
3. **Host**: the candidate's output waveform is compared with the reference's at every one of
   those time steps (an x in the reference matches anything, as in VerilogEval's own check).

So the comparison is of whole waveforms, at the resolution of time steps. The dataset's
testbench compares at every edge of its own clock (seeing, on Icarus, the values the outputs
held just before the edge); a design it rejects differs from the reference at some instant,
and so at the end of some time step: the trace check rejects it too. A design that is right
only at the instants the inputs change, or that glitches for part of a clock period, fails
here, although a sample at the end of each input change would have missed it. Not compared:
values an output takes and leaves within one time step (zero-width glitches; whether the
dataset's testbench sees one depends on the order in which the simulator runs that instant's
processes).
Times are in fs, the finest unit Verilog has, so no design can change its outputs between two
instants the trace bench can tell apart. See docs/gyms/verilog.md, "Timing contract".

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
from gyms.verilog.benches import recorded
from gyms.verilog.benches.recorded import OUTPUTS, NoVerdict, Score
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.checks.simulators import Build

FORMAT = 5  # bump when the recorder or the trace bench changes: old traces are then ignored
TRACE = "trace.txt"
RECORDER_FILE, TRACE_BENCH_FILE = "recorder.sv", "trace_bench.sv"
STIMULUS, TIMES = "trace_stim.txt", "trace_times.hex"
TRACE_TOP = "heavygym_trace"
MAX_TRACE_BYTES = 8 * 2**20
MIN_SAMPLES = 2  # a trace of the initial state alone checks nothing
# Time steps the candidate may add to the reference's (its outputs changing when the reference's
# did not), as a multiple of the trace's: each is compared, and a design that changes its
# outputs more often than that is refused without reading further.
EXTRA_STEPS = 4
FS_PER_PS = 1000
_CLOCK = re.compile(r"^(clk|clock)\w*$", re.IGNORECASE)
_TIMESCALE = re.compile(rb"^[ \t]*`timescale[^\n]*", re.MULTILINE)


@dataclass(frozen=True)
class Trace:
    times: tuple[int, ...]  # fs; the last one is when the original testbench finished
    inputs: tuple[str, ...]  # per sample: the inputs' bits, concatenated in port order
    outputs: tuple[tuple[str, ...], ...]  # per sample: each output's bits
    # The testbench's own `timescale` line ("" if it has none): the design after the trace
    # bench gets the same time unit as it had after the original testbench.
    timescale: str


def _ins(ports: Sequence[PortSpec]) -> list[PortSpec]:
    return [p for p in ports if p.direction == "input"]


def _outs(ports: Sequence[PortSpec]) -> list[PortSpec]:
    return [p for p in ports if p.direction == "output"]


def _decl(p: PortSpec) -> str:
    return f"[{p.width - 1}:0] " if p.width > 1 else ""


def recorder_source(ports: Sequence[PortSpec], reference: str) -> str:
    """A TopModule with the reference's ports that instantiates it and records every change,
    and the time the testbench finished (`end`)."""
    header = ", ".join(f"{p.direction} {_decl(p)}{p.name}" for p in ports)
    conns = ", ".join(f".{p.name}({p.name})" for p in ports)
    order = [*_ins(ports), *_outs(ports)]
    fmt = "%0d" + " %b" * len(order)
    args = ", ".join(["$time", *(p.name for p in order)])
    sensitivity = " or ".join(p.name for p in order)
    return f"""`timescale 1fs/1fs
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
  final $fwrite(heavygym_fd, "end %0d\\n", $time);
endmodule
"""


def trace_bench_source(ports: Sequence[PortSpec], count: int, timescale: str) -> str:
    """The candidate's testbench: drive the recorded inputs at their times, and record the
    outputs (with the time) at the end of every time step where an input or an output changed."""
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
    names = ", ".join(p.name for p in outs)
    record = f'$fstrobe(fd, "%0d{" %b" * len(outs)}", $time, {names});'
    return f"""`timescale 1fs/1fs
module {TRACE_TOP};
  localparam integer N = {count};
  reg [{max(in_bits, 1) - 1}:0] stimulus [0:N-1];
  reg [63:0] times [0:N-1];
{chr(10).join(decls)}
  integer i, fd;
  reg recording = 1'b0, sampled = 1'b0;
  reg [63:0] sampled_at;

  TopModule dut ({conns});

  // One line per time step, written at its end, whoever asks first: the input loop at each
  // recorded time, or the watcher below when an output changes at any other time.
  task sample;
    if (recording && (!sampled || sampled_at != $time)) begin
      sampled = 1'b1;
      sampled_at = $time;
      {record}
    end
  endtask

  // A process waiting on the outputs (Verilator would run an always block without edges as
  // combinational logic, once).
  initial forever begin
    @({" or ".join(p.name for p in outs)});
    sample;
  end

  initial begin
    $readmemb("{STIMULUS}", stimulus);
    $readmemh("{TIMES}", times);
    fd = $fopen("{OUTPUTS}", "w");
    recording = 1'b1;
    for (i = 0; i < N; i = i + 1) begin
      if (times[i] > $time) #(times[i] - $time);
      if (i == 0) begin
{chr(10).join(first)}
      end else begin
{chr(10).join(later)}
      end
      sample;
    end
    recording = 1'b0;  // the last sample was at the time the original testbench finished
    #1 $fclose(fd);
    $finish;
  end
endmodule
{timescale or "`resetall"}
"""


def _is_clock(p: PortSpec) -> bool:
    return p.width == 1 and bool(_CLOCK.match(p.name))


def trace_bench_files(ports: Sequence[PortSpec], trace: Trace) -> dict[str, str]:
    stim = "".join(f"{bits or '0'}\n" for bits in trace.inputs)
    times = "".join(f"{t:016x}\n" for t in trace.times)
    bench = trace_bench_source(ports, len(trace.times), trace.timescale)
    return {TRACE_BENCH_FILE: bench, STIMULUS: stim, TIMES: times}


def timescale_of(test: bytes) -> str:
    """The testbench's last `timescale line: the one a design compiled after it inherits."""
    found = _TIMESCALE.findall(test)
    return found[-1].decode("ascii", errors="replace").strip() if found else ""


def parse_trace(data: bytes | None, ports: Sequence[PortSpec], timescale: str) -> Trace | None:
    """The recorder's lines, the last one of each time step kept, and a last sample at the time
    the testbench finished; None if malformed or empty."""
    if not data:
        return None
    ins, outs = _ins(ports), _outs(ports)
    widths = [p.width for p in (*ins, *outs)]
    lines = data.decode("ascii", errors="replace").splitlines()
    if not lines or not lines[-1].startswith("end "):
        return None
    per_time: dict[int, list[str]] = {}
    last = -1
    for line in lines[:-1]:
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
    end = lines[-1].removeprefix("end ")
    if not per_time or not end.isdigit() or int(end) < last:
        return None
    per_time.setdefault(int(end), per_time[last])  # the outputs are compared until the testbench ends
    times = tuple(per_time)
    inputs = tuple("".join(v[: len(ins)]) for v in per_time.values())
    outputs = tuple(tuple(v[len(ins) :]) for v in per_time.values())
    return Trace(times, inputs, outputs, timescale)


def parse_samples(data: bytes | None, trace: Trace, widths: Sequence[int]) -> list[tuple[int, list[str]]] | NoVerdict:
    """The candidate's lines: (time in fs, output fields), times strictly increasing, every
    recorded time present and none after the last; NoVerdict for anything else."""
    text = recorded.as_text(data)
    if isinstance(text, NoVerdict):
        return text
    if text and not text.endswith("\n"):
        return NoVerdict("the recorded outputs end in the middle of a line", started=True)
    samples: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines()):
        time, _, rest = line.partition(" ")
        fields = recorded.parse(f"{rest}\n".encode(), 1, widths)
        if not time.isdigit() or isinstance(fields, NoVerdict):
            return NoVerdict(f"recorded sample {number} is malformed", started=True)
        if samples and int(time) <= samples[-1][0]:
            return NoVerdict(f"recorded sample {number} is out of order", started=True)
        samples.append((int(time), fields[0]))
    seen = {t for t, _ in samples}
    reached = sum(1 for t in trace.times if t in seen)
    if reached < len(trace.times) or (samples and samples[-1][0] > trace.times[-1]):
        return NoVerdict(f"the simulation ended after {reached} of {len(trace.times)} samples", started=True)
    return samples


def score(trace: Trace, ports: Sequence[PortSpec], data: bytes | None) -> Score | NoVerdict:
    """The candidate's waveform against the reference's, at every time step either recorded: at
    each, the reference's value is the one it held from its latest sample until then."""
    outs, ins = _outs(ports), _ins(ports)
    widths = [p.width for p in outs]
    samples = parse_samples(data, trace, widths)
    if isinstance(samples, NoVerdict):
        return samples
    held = _held(trace, [t for t, _ in samples])

    def expected(i: int) -> list[tuple[int, int]]:
        # An x (or z) in the reference is a don't-care, as in VerilogEval's own comparison.
        return [(int(b.translate(_ZERO_UNKNOWN), 2), int(b.translate(_CARE), 2)) for b in trace.outputs[held[i]]]

    def describe(i: int, name: str, want: str, got: str) -> list[str]:
        bits, fields = trace.inputs[held[i]], []
        for p in ins:
            fields.append(f"{p.name}={recorded.shown(p.width, bits[: p.width])}")
            bits = bits[p.width :]
        at = _ps(samples[i][0])
        return [f"MISMATCH at {at} ps: output {name} expected {want} got {got}",
                f"  inputs at {at} ps: {' '.join(fields)}"]  # fmt: skip

    return recorded.compare([fields for _, fields in samples], [p.name for p in outs], widths, expected, describe)


def _held(trace: Trace, times: Sequence[int]) -> list[int]:
    """For each of `times` (increasing), the index of the trace's latest sample at or before it."""
    found, j = [], 0
    for t in times:
        while j + 1 < len(trace.times) and trace.times[j + 1] <= t:
            j += 1
        found.append(j)
    return found


def _ps(fs: int) -> str:
    whole, part = divmod(fs, FS_PER_PS)
    return f"{whole}.{part:03d}".rstrip("0") if part else str(whole)


_ZERO_UNKNOWN = str.maketrans("xz", "00")
_CARE = str.maketrans("01xz", "1100")


def too_many_changes(trace: Trace) -> str:
    return (f"your outputs changed at more than {EXTRA_STEPS * len(trace.times)} instants where the reference's "
            "inputs and outputs did not; outputs must change only when their inputs do (no delays)")


def size_limit(ports: Sequence[PortSpec], trace: Trace) -> int:
    """The bytes of the trace's samples, and of as many again where the outputs changed on
    their own, each line with the longest time."""
    line = len(str(trace.times[-1])) + 1 + recorded.line_bytes([p.width for p in _outs(ports)])
    return (1 + EXTRA_STEPS) * len(trace.times) * line


def traceable_ports(ports: Sequence[PortSpec] | None) -> bool:
    return bool(ports) and all(p.direction in ("input", "output") for p in ports) and bool(_outs(ports or ()))


# -- making and caching traces --------------------------------------------------------------

# Runs `files` in a fresh sandboxed directory with `build`, and returns the file `read` (capped).
Runner = Callable[[dict[str, str | bytes], Build, str, int], "bytes | None"]


@dataclass(frozen=True)
class Recording:
    trace: Trace | None  # None: the problem cannot be checked by a trace
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
    trace = parse_trace(data, ports, timescale_of(test))
    if trace is None or len(trace.times) < MIN_SAMPLES:
        return Recording(None, "the reference's trace could not be recorded")
    bench = {**trace_bench_files(ports, trace), "design.sv": reference}
    again = run(bench, Build([TRACE_BENCH_FILE, "design.sv"], TRACE_TOP), OUTPUTS, size_limit(ports, trace))
    checked = score(trace, ports, again)
    if not isinstance(checked, Score) or not checked.all_passed:
        return Recording(None, "the reference does not reproduce its own trace under the trace bench")
    return Recording(trace, "")


def _load(path: Path) -> Recording | None:
    try:
        blob = json.loads(path.read_text())
        if blob.get("format") != FORMAT:
            return None
        if blob["trace"] is None:
            return Recording(None, blob["reason"])
        t = blob["trace"]
        outputs = tuple(tuple(o) for o in t["outputs"])
        return Recording(Trace(tuple(t["times"]), tuple(t["inputs"]), outputs, t["timescale"]), "")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(path: Path, made: Recording) -> None:
    trace = made.trace
    blob = {
        "format": FORMAT,
        "reason": made.reason,
        "trace": None if trace is None else {"times": trace.times, "inputs": trace.inputs, "outputs": trace.outputs,
                                             "timescale": trace.timescale},
    }
    try:
        cache.write_json_atomically(path, blob)
    except OSError:
        pass  # a cache that cannot be written only costs the trusted run again
