"""Benches: what a task's testbench needs on disk, how it is built, and how to read its verdict.

A built-in task's bench is generated from its golden model (`testbench.py`); the loaders'
benches wrap a benchmark's own files. The episode does the rest the same way for all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Protocol

from gyms import hostfs
from gyms.base import Task
from gyms.verilog import replay, testbench
from gyms.verilog.precheck import PortSpec
from gyms.verilog.recorded import MAX_SHOWN, OUTPUTS, NoVerdict, Score
from gyms.verilog.simulators import Build, Job
from gyms.verilog.spec import MODULE, DesignTask
from gyms.verilog.tasks import design_task
from gyms.verilog.vectors import Vectors, make_vectors

DESIGN = "design.sv"


@dataclass(frozen=True)
class BenchOptions:
    vectors: int | None  # per sequence; None: the task's own default
    sequences: int
    seed: int
    waves: bool


class Bench(Protocol):
    module: str  # the module the candidate must define
    expected_ports: tuple[PortSpec, ...] | None
    # Whether the verdict is text the testbench prints inside the sandbox, which a design that
    # escaped the screen could print too. Such benches also refuse printing in designs.
    forgeable: bool
    reserved_modules: frozenset[str]  # the testbench's own modules, which a design may not redefine

    def prepare(self, job: Job) -> Build: ...

    def score(self, job: Job, output: str) -> Score | NoVerdict: ...


def read_outputs(job: Job, limit: int, too_large: str | None = None) -> bytes | None | NoVerdict:
    """The recorded outputs file, read without following links and no further than `limit`."""
    try:
        return job.read(OUTPUTS, limit)
    except hostfs.TooLarge:
        return NoVerdict(too_large or f"the testbench recorded more than the {limit} bytes its samples take",
                         started=True)  # fmt: skip
    except hostfs.UnsafePath:
        return NoVerdict(f"{OUTPUTS} is not a regular file", started=True)


class BuiltinBench:
    """A built-in task: the testbench records outputs; the golden model's values stay here."""

    forgeable = False
    reserved_modules = frozenset({testbench.TB_TOP})

    def __init__(self, task: DesignTask, options: BenchOptions) -> None:
        self.task = task
        self.options = options
        self.module = MODULE
        self.expected_ports = tuple(PortSpec(p.name, p.direction, p.width) for p in task.ports)

    @cached_property
    def vectors(self) -> Vectors:
        opts = self.options
        per_sequence = opts.vectors if opts.vectors is not None else self.task.vectors
        return _vectors(self.task, opts.seed, per_sequence, opts.sequences)

    def prepare(self, job: Job) -> Build:
        job.write(testbench.STIMULUS, _stimulus_file(self.task, self.vectors))
        job.write("tb.sv", testbench.render(self.task, len(self.vectors), self.options.waves))
        return Build(["tb.sv", DESIGN], testbench.TB_TOP, self.options.waves, strict_x=True)

    def score(self, job: Job, output: str) -> Score | NoVerdict:
        data = read_outputs(job, testbench.size_limit(self.task, len(self.vectors)))
        if isinstance(data, NoVerdict):
            return data
        return testbench.score(self.task, self.vectors, data)


# The host's work per step is the golden model's run and the stimulus file: a pure function of
# (task, seed, vectors, sequences), so each is computed once per process and reused by every
# step of every episode (a heavy task's 10^5+ cycles take seconds of Python). A few entries
# only: a heavy task's vectors take tens of MB.
@lru_cache(maxsize=8)
def _vectors(task: DesignTask, seed: int, per_sequence: int, sequences: int) -> Vectors:
    return make_vectors(task, seed, per_sequence, sequences)


_stimulus_texts: dict[int, tuple[Vectors, str]] = {}


def _stimulus_file(task: DesignTask, vectors: Vectors) -> str:
    key = id(vectors)
    found = _stimulus_texts.get(key)
    if found is None or found[0] is not vectors:  # an id reused by new vectors is a miss
        if len(_stimulus_texts) >= 8:
            _stimulus_texts.pop(next(iter(_stimulus_texts)))
        found = _stimulus_texts[key] = (vectors, testbench.stimulus_file(task, vectors))
    return found[1]


_MODULE_NAME = re.compile(r"^\s*module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.MULTILINE)


def _modules_in(*files: Path) -> frozenset[str]:
    # The benchmark's own files, on the host (not sandbox-written).
    return frozenset(name for f in files for name in _MODULE_NAME.findall(f.read_text(errors="replace")))


_MISMATCHES = re.compile(r"Mismatches:\s*(\d+)\s+in\s+(\d+)\s+samples")
_HINT = re.compile(r"^Hint: .*$", re.MULTILINE)
_OUTPUT_FAILS = re.compile(r"^Hint: Output '[^']*' has \d+ mismatches")
_OUTPUT_PASSES = re.compile(r"^Hint: Output '[^']*' has no mismatches")
TESTBENCH_HEADING = "The testbench reports:"
MAX_LINE_CHARS = 200  # a testbench line shown to the model, at most


def _hints(output: str) -> tuple[str, ...]:
    """VerilogEval's hints, failing outputs first (each with the time of its first mismatch);
    an output without mismatches is left out when another has some, so the fault leads."""
    hints = [h[:MAX_LINE_CHARS] for h in _HINT.findall(output)]
    failing = [h for h in hints if _OUTPUT_FAILS.match(h)]
    rest = [h for h in hints if not _OUTPUT_FAILS.match(h) and not (failing and _OUTPUT_PASSES.match(h))]
    return tuple(failing[:MAX_SHOWN] + rest[:MAX_SHOWN])


class VerilogEvalBench:
    """VerilogEval v2 run as shipped: `<stem>_test.sv` (module tb) with RefModule from
    `<stem>_ref.sv` in the sandbox, and the verdict its testbench prints. Forgeable: used only
    where the reference's trace cannot be replayed (see `replay.py`)."""

    module = "TopModule"
    forgeable = True

    def __init__(self, directory: Path, stem: str, expected_ports: tuple[PortSpec, ...] | None) -> None:
        self.directory = directory
        self.stem = stem
        self.expected_ports = expected_ports
        self.reserved_modules = _modules_in(directory / f"{stem}_test.sv", directory / f"{stem}_ref.sv")
        self.forgeable_reason = "not replayed"

    @property
    def test_file(self) -> Path:
        return self.directory / f"{self.stem}_test.sv"

    @property
    def ref_file(self) -> Path:
        return self.directory / f"{self.stem}_ref.sv"

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


class ReplayBench:
    """A VerilogEval problem replayed from its reference's trace (`replay.py`): the sandbox gets
    the recorded stimulus and no reference; the outputs are compared here."""

    module = "TopModule"
    forgeable = False

    def __init__(self, base: VerilogEvalBench, trace: replay.Trace) -> None:
        assert base.expected_ports is not None
        self.expected_ports = base.expected_ports
        self.reserved_modules = base.reserved_modules | {replay.REPLAY_TOP}
        self.trace = trace

    def prepare(self, job: Job) -> Build:
        for name, text in replay.replay_files(self.expected_ports, self.trace).items():
            job.write(name, text)
        return Build([replay.REPLAY_FILE, DESIGN], replay.REPLAY_TOP)

    def score(self, job: Job, output: str) -> Score | NoVerdict:
        limit = replay.size_limit(self.expected_ports, self.trace)
        data = read_outputs(job, limit, replay.too_many_changes(self.trace))
        if isinstance(data, NoVerdict):
            return data
        return replay.score(self.trace, self.expected_ports, data)


_PASSED = "Your Design Passed"
_FAILED = re.compile(r"Fail|Error|error|failures")
_SIMULATOR_LINE = re.compile(r"^(VCD (info|warning)|- |.*\$finish)")  # Icarus' and Verilator's own chatter


class RtllmBench:
    """RTLLM 2.0: `<design>/testbench.v` prints "Your Design Passed"; a pass scores 1 check of 1.

    Forgeable: the testbench computes or embeds its expected values and prints a plain verdict
    inside the sandbox, and its stimulus cannot be split from its checks in general."""

    forgeable = True

    def __init__(self, directory: Path, module: str, expected_ports: tuple[PortSpec, ...] | None,
                 reference_file: str | None = None) -> None:  # fmt: skip
        self.directory = directory
        self.module = module
        self.expected_ports = expected_ports
        self.reference_file = reference_file  # where the reference is not named verified_*
        self.reserved_modules = _modules_in(directory / "testbench.v")
        self.forgeable_reason = "RTLLM testbenches compute their expected values themselves"

    def prepare(self, job: Job) -> Build:
        for item in sorted(self.directory.iterdir()):
            # The testbench and any data files it reads; never the reference or the prompt.
            if item.is_file() and not item.name.startswith("verified_") and item.name not in (
                    "design_description.txt", self.reference_file):  # fmt: skip
                job.write(item.name, item.read_bytes())
        top = _MODULE_NAME.search((self.directory / "testbench.v").read_text(errors="replace"))
        return Build(["testbench.v", DESIGN], top.group(1) if top else None)

    def score(self, job: Job, output: str) -> Score | NoVerdict:
        if _PASSED in output:
            return Score(1, 1, ())
        lines = (line.strip() for line in output.splitlines())
        printed = [line[:MAX_LINE_CHARS] for line in lines if line and not _SIMULATOR_LINE.match(line)]
        failures = [line for line in printed if _FAILED.search(line)]
        # Only a testbench that ran to its report counts as a verdict.
        if not failures:
            return NoVerdict("the testbench printed no verdict", started=True)
        # Its report (the last failure line) first, then its other failure lines, then what else it
        # printed (values some testbenches show at each check).
        report = failures[-1]
        others = failures[:-1] + [line for line in printed if not _FAILED.search(line)]
        return Score(0, 1, (report, *others[: MAX_SHOWN - 1]), TESTBENCH_HEADING)


def make_bench(task: Task, options: BenchOptions) -> Bench:
    kind = task.metadata.get("kind")
    ports = task.metadata.get("ports")
    expected = tuple(PortSpec(*p) for p in ports) if ports else None
    if kind == "builtin":
        return BuiltinBench(design_task(task.id), options)
    if kind == "verilog-eval":
        return VerilogEvalBench(Path(task.metadata["dir"]), task.metadata["stem"], expected)
    if kind == "rtllm":
        return RtllmBench(Path(task.metadata["dir"]), task.metadata["module"], expected,
                          task.metadata.get("reference_file"))  # fmt: skip
    raise ValueError(f"task {task.id!r} is not a Verilog gym task (metadata kind {kind!r})")
