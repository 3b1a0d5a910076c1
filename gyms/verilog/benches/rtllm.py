"""The RTLLM 2.0 bench: the benchmark's own testbench and the verdict it prints (forgeable)."""

from __future__ import annotations

import re
from pathlib import Path

from gyms.verilog.benches.base import (
    DESIGN,
    MAX_LINE_CHARS,
    MODULE_NAME,
    TESTBENCH_HEADING,
    SimulatorBench,
    modules_in,
)
from gyms.verilog.benches.recorded import MAX_SHOWN, NoVerdict, Score
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.checks.simulators import Build, Job

_PASSED = "Your Design Passed"
_FAILED = re.compile(r"Fail|Error|error|failures")
_SIMULATOR_LINE = re.compile(r"^(VCD (info|warning)|- |.*\$finish)")  # Icarus' and Verilator's own chatter


class RtllmBench(SimulatorBench):
    """RTLLM 2.0: `<design>/testbench.v` prints "Your Design Passed"; a pass scores 1 check of 1.

    Forgeable: the testbench computes or embeds its expected values and prints a plain verdict
    inside the sandbox, and its stimulus cannot be split from its checks in general."""

    forgeable = True

    def __init__(self, directory: Path, module: str, expected_ports: tuple[PortSpec, ...] | None,
                 reference_file: str | None, simulator: str) -> None:  # fmt: skip
        self.directory = directory
        self.module = module
        self.expected_ports = expected_ports
        self.reference_file = reference_file  # where the reference is not named verified_*
        self.simulator = simulator
        self.reserved_modules = modules_in(directory / "testbench.v")
        self.forgeable_reason = "RTLLM testbenches compute their expected values themselves"

    def prepare(self, job: Job) -> Build:
        for item in sorted(self.directory.iterdir()):
            # The testbench and any data files it reads; never the reference or the prompt.
            if item.is_file() and not item.name.startswith("verified_") and item.name not in (
                    "design_description.txt", self.reference_file):  # fmt: skip
                job.write(item.name, item.read_bytes())
        top = MODULE_NAME.search((self.directory / "testbench.v").read_text(errors="replace"))
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
