"""Benches: what a task's testbench needs on disk, how it is built, and how to read its verdict.

A built-in task's bench is generated from its golden model (`testbench.py`); the loaders'
benches wrap a benchmark's own files. The episode does the rest the same way for all.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gyms.base import Task
from gyms.verilog import testbench
from gyms.verilog.precheck import PortSpec
from gyms.verilog.simulators import Build
from gyms.verilog.spec import MODULE, DesignTask
from gyms.verilog.tasks import builtin_tasks
from gyms.verilog.testbench import Score
from gyms.verilog.vectors import make_vectors

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
    allow_printing: bool  # whether the verdict carries a nonce a design cannot forge
    reserved_modules: frozenset[str]  # the testbench's own modules, which a design may not redefine

    def prepare(self, directory: Path) -> Build: ...

    def score(self, output: str, nonce: str) -> Score | None: ...


class BuiltinBench:
    allow_printing = True
    reserved_modules = frozenset({testbench.TB_TOP})

    def __init__(self, task: DesignTask, options: BenchOptions) -> None:
        self.task = task
        self.options = options
        self.module = MODULE
        self.expected_ports = tuple(PortSpec(p.name, p.direction, p.width) for p in task.ports)

    def prepare(self, directory: Path) -> Build:
        opts = self.options
        per_sequence = opts.vectors if opts.vectors is not None else self.task.vectors
        vectors = make_vectors(self.task, opts.seed, per_sequence, opts.sequences)
        for name, text in testbench.data_files(self.task, vectors).items():
            (directory / name).write_text(text)
        (directory / "tb.sv").write_text(testbench.render(self.task, len(vectors), opts.waves))
        return Build(["tb.sv", DESIGN], testbench.TB_TOP, opts.waves, strict_x=True)

    def score(self, output: str, nonce: str) -> Score | None:
        return testbench.parse(output, nonce)


_MODULE_NAME = re.compile(r"^\s*module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.MULTILINE)


def _modules_in(*files: Path) -> frozenset[str]:
    return frozenset(name for f in files for name in _MODULE_NAME.findall(f.read_text(errors="replace")))


_MISMATCHES = re.compile(r"Mismatches:\s*(\d+)\s+in\s+(\d+)\s+samples")
_HINT = re.compile(r"^Hint: .*$", re.MULTILINE)


class VerilogEvalBench:
    """VerilogEval v2: `<stem>_test.sv` (module tb, with RefModule from `<stem>_ref.sv`)."""

    module = "TopModule"
    allow_printing = False

    def __init__(self, directory: Path, stem: str, expected_ports: tuple[PortSpec, ...] | None) -> None:
        self.directory = directory
        self.stem = stem
        self.expected_ports = expected_ports
        self.reserved_modules = _modules_in(directory / f"{stem}_test.sv", directory / f"{stem}_ref.sv")

    def prepare(self, directory: Path) -> Build:
        shutil.copyfile(self.directory / f"{self.stem}_test.sv", directory / "test.sv")
        shutil.copyfile(self.directory / f"{self.stem}_ref.sv", directory / "ref.sv")
        return Build(["test.sv", "ref.sv", DESIGN], "tb")

    def score(self, output: str, nonce: str) -> Score | None:
        found = _MISMATCHES.findall(output)
        if not found:
            return None
        mismatches, samples = (int(x) for x in found[-1])
        return Score(max(samples - mismatches, 0), samples, tuple(_HINT.findall(output)[:testbench.MAX_SHOWN]))


_PASSED = "Your Design Passed"


class RtllmBench:
    """RTLLM 2.0: `<design>/testbench.v` prints "Your Design Passed"; a pass scores 1 check of 1."""

    allow_printing = False

    def __init__(self, directory: Path, module: str, expected_ports: tuple[PortSpec, ...] | None) -> None:
        self.directory = directory
        self.module = module
        self.expected_ports = expected_ports
        self.reserved_modules = _modules_in(directory / "testbench.v")

    def prepare(self, directory: Path) -> Build:
        for item in self.directory.iterdir():
            # The testbench and any data files it reads; never the reference or the prompt.
            if item.is_file() and not item.name.startswith("verified_") and item.name != "design_description.txt":
                shutil.copyfile(item, directory / item.name)
        top = _MODULE_NAME.search((self.directory / "testbench.v").read_text(errors="replace"))
        return Build(["testbench.v", DESIGN], top.group(1) if top else None)

    def score(self, output: str, nonce: str) -> Score | None:
        if _PASSED in output:
            return Score(1, 1, ())
        # Only a testbench that ran to its report counts as a verdict.
        failed = re.search(r"^.*(?:Fail|Error|error|failures).*$", output, re.MULTILINE)
        return Score(0, 1, (failed.group(0).strip(),)) if failed else None


def make_bench(task: Task, options: BenchOptions) -> Bench:
    kind = task.metadata.get("kind")
    ports = task.metadata.get("ports")
    expected = tuple(PortSpec(*p) for p in ports) if ports else None
    if kind == "builtin":
        return BuiltinBench(builtin_tasks()[task.id], options)
    if kind == "verilog-eval":
        return VerilogEvalBench(Path(task.metadata["dir"]), task.metadata["stem"], expected)
    if kind == "rtllm":
        return RtllmBench(Path(task.metadata["dir"]), task.metadata["module"], expected)
    raise ValueError(f"task {task.id!r} is not a Verilog gym task (metadata kind {kind!r})")
