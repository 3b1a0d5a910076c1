"""The bench protocol: what a task's testbench needs on disk, how it is built and simulated,
and how to read its verdict.

Every way of checking an answer is a `Bench` (built-in SV, cocotb, VerilogEval as shipped or
against its reference's trace, RTLLM), made once per step by `make_bench`. The episode does
the rest the same way for all and never asks which bench it has.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gyms import hostfs
from gyms.sandbox import Limits, SandboxRun
from gyms.verilog.benches.recorded import OUTPUTS, NoVerdict, Score
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.checks.simulators import Build, Job, make_simulator

DESIGN = "design.sv"
TESTBENCH_HEADING = "The testbench reports:"
MAX_LINE_CHARS = 200  # a testbench line shown to the model, at most


@dataclass(frozen=True)
class BenchOptions:
    vectors: int | None  # per sequence; None: the task's own default
    sequences: int
    seed: int
    waves: bool
    simulator: str  # "icarus" or "verilator"
    testbench: str  # the gym's `testbench` option: which bench built-in tasks get


@dataclass(frozen=True)
class SimTiming:
    """A simulation's time allowances under a bench, measured on 2 cores (docs/gyms/verilog.md):
    generous, so that a correct design never times out on a loaded machine, yet a hung
    simulation ends within seconds."""

    base_s: float  # start-up
    per_vector_s: float  # per vector, where the task has no measured cost per cycle
    own_per_vector_s: float  # the bench's own cost per vector, on top of a task's measured cost
    # The conformance check's hangs (`with_short_time_limits`): only long enough for the
    # simulator to start and reach the loop, which `never_finishing` puts at time 0. A design
    # that finished in that time would still be seen to finish (the check then fails).
    short_s: float


# Icarus and a Verilator binary start in well under 0.1 s idle; ~4 us per vector measured.
SV_TIMING = SimTiming(base_s=2.0, per_vector_s=0.0005, own_per_vector_s=0.0, short_s=0.5)


@dataclass(frozen=True)
class NotStarted:
    """The bench's own test never started: a set-up fault, an infrastructure error."""

    reason: str


@dataclass(frozen=True)
class BenchRaised:
    """The bench's own test raised on the design: the answer's fail (only the infrastructure
    makes an error), with the gym's bug on record."""

    reason: str  # for the run record
    feedback: str  # what the model reads


# Runs our own files (`files`) in a fresh sandbox as `bench` runs them, with the build `build`,
# and returns the file `read` of the run (at most `limit` bytes; None where it failed).
TrustedRun = Callable[["Bench", dict[str, str | bytes], Build, str, int], "bytes | None"]


class Bench(Protocol):
    module: str  # the module the candidate must define
    expected_ports: tuple[PortSpec, ...] | None
    # Whether the verdict is text the testbench prints inside the sandbox, which a design that
    # escaped the screen could print too. Such benches also refuse printing in designs.
    forgeable: bool
    forgeable_reason: str  # why, where forgeable
    reserved_modules: frozenset[str]  # the testbench's own modules, which a design may not redefine
    flavour: str  # the Verilator build whose runtime the compiler cache is warmed for: binary or cocotb
    memory_mb: int | None  # the simulation's memory limit

    def ready(self, run: TrustedRun) -> Bench:
        """The bench that checks answers, once any trusted runs it needs are done (most: itself)."""
        ...

    def prepare(self, job: Job) -> Build: ...

    def build(self, job: Job, build: Build, limits: Limits) -> SandboxRun: ...

    def simulate(self, job: Job, build: Build, limits: Limits) -> SandboxRun: ...

    def score(self, job: Job, output: str) -> Score | NoVerdict: ...

    def stopped(self, job: Job, ran: SandboxRun, missing: NoVerdict) -> NotStarted | BenchRaised | None:
        """What the bench's own records say of a run that gave no verdict (None: nothing more)."""
        ...


class SimulatorBench:
    """What the benches that run plain Verilog on the simulator share (all but cocotb)."""

    simulator: str
    forgeable_reason = ""
    flavour = "binary"
    memory_mb: int | None = 2048
    # As a value of the gym's `testbench` option (class attributes, read before any task):
    timing = SV_TIMING
    builtin_only = False  # whether benchmark sources are refused with it
    package: str | None = None  # a Python package it runs in the simulator, described with its version

    def ready(self, run: TrustedRun) -> Bench:
        return self

    def build(self, job: Job, build: Build, limits: Limits) -> SandboxRun:
        return make_simulator(self.simulator).build(job, build, limits)

    def simulate(self, job: Job, build: Build, limits: Limits) -> SandboxRun:
        return make_simulator(self.simulator).simulate(job, build, [], limits)

    def stopped(self, job: Job, ran: SandboxRun, missing: NoVerdict) -> NotStarted | BenchRaised | None:
        return None


def read_outputs(job: Job, limit: int, too_large: str | None = None) -> bytes | None | NoVerdict:
    """The recorded outputs file, read without following links and no further than `limit`."""
    try:
        return job.read(OUTPUTS, limit)
    except hostfs.TooLarge:
        return NoVerdict(too_large or f"the testbench recorded more than the {limit} bytes its samples take",
                         started=True)  # fmt: skip
    except hostfs.UnsafePath:
        return NoVerdict(f"{OUTPUTS} is not a regular file", started=True)


MODULE_NAME = re.compile(r"^\s*module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.MULTILINE)


def modules_in(*files: Path) -> frozenset[str]:
    # The benchmark's own files, on the host (not sandbox-written).
    return frozenset(name for f in files for name in MODULE_NAME.findall(f.read_text(errors="replace")))
