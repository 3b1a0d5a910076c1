"""VerilogEval v2 benches: the problem as shipped (forgeable), and its traced form.

`VerilogEvalBench.ready` records the reference's trace in a trusted run (`trace.py`, cached)
and returns a `TraceBench`, which needs no reference in the sandbox; only problems without a
trace are checked as shipped, and say so.
"""

from __future__ import annotations

import re
from pathlib import Path

from gyms.verilog.benches import trace as traces
from gyms.verilog.benches.base import (
    DESIGN,
    MAX_LINE_CHARS,
    TESTBENCH_HEADING,
    Bench,
    SimulatorBench,
    TrustedRun,
    modules_in,
    read_outputs,
)
from gyms.verilog.benches.recorded import MAX_SHOWN, NoVerdict, Score
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.checks.simulators import Build, Job
from gyms.verilog.checks.toolchain import require_verilator

_MISMATCHES = re.compile(r"Mismatches:\s*(\d+)\s+in\s+(\d+)\s+samples")
_HINT = re.compile(r"^Hint: .*$", re.MULTILINE)
_OUTPUT_FAILS = re.compile(r"^Hint: Output '[^']*' has \d+ mismatches")
_OUTPUT_PASSES = re.compile(r"^Hint: Output '[^']*' has no mismatches")

_recordings: dict[tuple[str, str, str], traces.Recording] = {}  # per process: (testbench, simulator, cache)


def _hints(output: str) -> tuple[str, ...]:
    """VerilogEval's hints, failing outputs first (each with the time of its first mismatch);
    an output without mismatches is left out when another has some, so the fault leads."""
    hints = [h[:MAX_LINE_CHARS] for h in _HINT.findall(output)]
    failing = [h for h in hints if _OUTPUT_FAILS.match(h)]
    rest = [h for h in hints if not _OUTPUT_FAILS.match(h) and not (failing and _OUTPUT_PASSES.match(h))]
    return tuple(failing[:MAX_SHOWN] + rest[:MAX_SHOWN])


class VerilogEvalBench(SimulatorBench):
    """VerilogEval v2 run as shipped: `<stem>_test.sv` (module tb) with RefModule from
    `<stem>_ref.sv` in the sandbox, and the verdict its testbench prints. Forgeable: used only
    where the reference's trace cannot be recorded (see `ready`)."""

    module = "TopModule"
    forgeable = True

    def __init__(self, directory: Path, stem: str, expected_ports: tuple[PortSpec, ...] | None, reference: str,
                 simulator: str) -> None:  # fmt: skip
        self.directory = directory
        self.stem = stem
        self.expected_ports = expected_ports
        self.reference = reference  # the task's reference, as the answer would define it
        self.simulator = simulator
        self.reserved_modules = modules_in(directory / f"{stem}_test.sv", directory / f"{stem}_ref.sv")
        self.forgeable_reason = "no trace"

    @property
    def test_file(self) -> Path:
        return self.directory / f"{self.stem}_test.sv"

    @property
    def ref_file(self) -> Path:
        return self.directory / f"{self.stem}_ref.sv"

    def ready(self, run: TrustedRun) -> Bench:
        """The problem checked against its reference's recorded trace, or as shipped where there
        is no trace."""
        ports = self.expected_ports
        if not traces.traceable_ports(ports):
            self.forgeable_reason = "the reference's ports could not be read, or include an inout"
            return self
        assert ports is not None
        version = require_verilator().version if self.simulator == "verilator" else "icarus"
        key = (str(self.test_file), self.simulator, str(traces.cache_dir()))
        if key not in _recordings:
            _recordings[key] = traces.record(self.test_file.read_bytes(), self.ref_file.read_bytes(), self.reference,
                                             ports, f"{self.simulator}-{version}",
                                             lambda *args: run(self, *args))  # fmt: skip
        made = _recordings[key]
        if made.trace is None:
            self.forgeable_reason = made.reason
            return self
        return TraceBench(self, made.trace)

    def prepare(self, job: Job) -> Build:
        job.write("test.sv", self.test_file.read_bytes())
        job.write("ref.sv", self.ref_file.read_bytes())
        return Build(["test.sv", "ref.sv", DESIGN], "tb")

    def score(self, job: Job, output: str) -> Score | NoVerdict:
        found = _MISMATCHES.findall(output)
        if not found:
            return NoVerdict("the testbench printed no verdict", started=True)
        mismatches, samples = (int(x) for x in found[-1])
        return Score(max(samples - mismatches, 0), samples, _hints(output), TESTBENCH_HEADING)


class TraceBench(SimulatorBench):
    """A VerilogEval problem checked against its reference's recorded trace (`trace.py`): the
    sandbox gets the recorded stimulus and no reference; the outputs are compared here."""

    module = "TopModule"
    forgeable = False

    def __init__(self, base: VerilogEvalBench, trace: traces.Trace) -> None:
        assert base.expected_ports is not None
        self.simulator = base.simulator
        self.expected_ports = base.expected_ports
        self.reserved_modules = base.reserved_modules | {traces.TRACE_TOP}
        self.trace = trace

    def prepare(self, job: Job) -> Build:
        for name, text in traces.trace_bench_files(self.expected_ports, self.trace).items():
            job.write(name, text)
        return Build([traces.TRACE_BENCH_FILE, DESIGN], traces.TRACE_TOP)

    def score(self, job: Job, output: str) -> Score | NoVerdict:
        limit = traces.size_limit(self.expected_ports, self.trace)
        data = read_outputs(job, limit, traces.too_many_changes(self.trace))
        if isinstance(data, NoVerdict):
            return data
        return traces.score(self.trace, self.expected_ports, data)
