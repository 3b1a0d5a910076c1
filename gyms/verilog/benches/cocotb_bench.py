"""The cocotb bench: a built-in task's stimulus driven from Python through cocotb 2.x, on
Icarus or Verilator, in the sandbox.

We call the simulators directly, the way cocotb's own runner does (`cocotb_tools.runner`),
rather than through it: the runner would need a Python process of its own in the sandbox,
and we want each step under its own limits. The test module is `cocotb_vectors.py`; it only
records outputs, and no secret is passed to it (nothing in its environment, command line or
files decides the verdict). Whether cocotb itself ran to its end is read from its own
results file (`results.xml`), never from text the design can print.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from gyms import hostfs
from gyms.sandbox import Limits, SandboxRun
from gyms.verilog.benches.base import DESIGN, BenchRaised, NotStarted, SimTiming
from gyms.verilog.benches.builtin import BuiltinBench
from gyms.verilog.benches.recorded import OUTPUTS, NoVerdict
from gyms.verilog.benches.testbench import STIMULUS, WAVES
from gyms.verilog.checks.simulators import TIMESCALE, Build, Job, build_jobs
from gyms.verilog.checks.toolchain import ToolMissing, require_iverilog, require_verilator
from gyms.verilog.spec import MODULE, DesignTask

TEST_MODULE = "heavygym_cocotb_vectors"
TEST_NAME = "vectors"  # the one test in cocotb_vectors.py
DUMP_MODULE = "heavygym_dump"
RESULTS = "results.xml"
MAX_RESULTS_BYTES = 64 * 1024
# The start-up of the embedded Python (~0.2 s idle) and ~40 us per vector, measured; its hangs
# need the embedded Python to start before they reach their loop.
COCOTB_TIMING = SimTiming(base_s=5.0, per_vector_s=0.001, own_per_vector_s=0.001, short_s=2.0)


class CocotbBench(BuiltinBench):
    """A built-in task under cocotb: the same stimulus, timing and recorded outputs as the SV
    testbench, so the same scoring; its own build, run, and reading of how its test ended."""

    flavour = "cocotb"
    memory_mb = None  # an embedded Python maps a lot
    timing = COCOTB_TIMING
    builtin_only = True
    package = "cocotb"

    def prepare(self, job: Job) -> Build:
        self.write_stimulus(job)
        bench_files(self.task, job, self.options.waves, self.simulator)
        return Build([DESIGN], MODULE, self.options.waves)  # what build_cocotb reads: the waves flag

    def build(self, job: Job, build: Build, limits: Limits) -> SandboxRun:
        return build_cocotb(job, self.simulator, build.waves, limits)

    def simulate(self, job: Job, build: Build, limits: Limits) -> SandboxRun:
        return simulate_cocotb(job, self.simulator, build.waves, limits)

    def stopped(self, job: Job, ran: SandboxRun, missing: NoVerdict) -> NotStarted | BenchRaised | None:
        status = test_status(job)
        if _not_started(missing, ran):
            return NotStarted("the cocotb test did not start")
        if _raised(missing, status):
            # Our test raised on this design (a port or value it did not expect).
            return BenchRaised(f"the cocotb test ended with {status}",
                               f"The testbench could not check your design (its test ended with {status}); answer "
                               "with exactly the ports the task asks for.")  # fmt: skip
        return None


def _not_started(missing: NoVerdict, ran: SandboxRun) -> bool:
    """cocotb's results file, not the printed log, says how our test ended. A test that never
    started is a set-up fault, unless a resource limit stopped the simulator first."""
    return not missing.started and not ran.killed and ran.returncode >= 0


def _raised(missing: NoVerdict, status: str | None) -> bool:
    """Once the test had started (its output file exists), a simulation that stopped early (cocotb
    records a SimFailure, or died before writing its results) is the design's doing, and so is
    anything else short of a pass: our test raising on what the design did."""
    return missing.started and status not in (None, "failed:SimFailure", "failed:CancelledError", "passed")


def _config() -> tuple[ModuleType, ModuleType]:
    """cocotb's configuration module and find_libpython, imported only when cocotb is used."""
    try:
        import cocotb_tools.config as config
        import find_libpython
    except ImportError as exc:
        raise ToolMissing(f"cocotb is not installed ({exc}): pip install cocotb==2.1.0") from exc
    return config, find_libpython


def bench_files(task: DesignTask, job: Job, waves: bool, simulator: str) -> None:
    """Write the test module and its description next to the stimulus."""
    job.write(f"{TEST_MODULE}.py", Path(__file__).with_name("cocotb_vectors.py").read_bytes())
    description = {
        "clock": task.clock,
        "inputs": [[p.name, p.width] for p in task.inputs],
        "outputs": [[p.name, p.width] for p in task.outputs],
        # Per output: it may change only at a rising edge (docs/gyms/verilog.md, "Timing contract").
        "registered": list(task.registered),
        "async_reset": [task.reset.name, task.reset.active] if task.reset and task.reset.asynchronous else None,
        "stimulus": STIMULUS,
        "outputs_file": OUTPUTS,
    }
    job.write("bench.json", json.dumps(description))
    if simulator == "icarus":
        # A design without `timescale would run in seconds, too coarse for the test's 1 ns steps.
        job.write("cmds.f", f"+timescale+{TIMESCALE}\n")
        if waves:
            job.write(f"{DUMP_MODULE}.v",
                f'module {DUMP_MODULE}();\ninitial begin\n  $dumpfile("{WAVES}");\n  $dumpvars(0, {MODULE});\nend\n'
                "endmodule\n"
            )


def _env() -> dict[str, str]:
    config, find_libpython = _config()
    libpython = find_libpython.find_libpython()
    if libpython is None:
        raise ToolMissing("cocotb needs the shared libpython of this interpreter, and none was found")
    paths = [p for p in sys.path if p and Path(p).is_dir()]
    return {
        "COCOTB_TOPLEVEL": MODULE,
        "COCOTB_TEST_MODULES": TEST_MODULE,
        "TOPLEVEL_LANG": "verilog",
        "PYGPI_PYTHON_BIN": sys.executable,
        "GPI_USERS": f"{libpython};{config.pygpi_entry_point()}",
        "PYTHONPATH": os.pathsep.join([".", *paths]),
        "COCOTB_RESULTS_FILE": RESULTS,
        "COCOTB_RANDOM_SEED": "1",
        "COCOTB_ANSI_OUTPUT": "0",
        "COCOTB_TRUST_INERTIAL_WRITES": "1",
    }


def build_cocotb(job: Job, simulator: str, waves: bool, limits: Limits) -> SandboxRun:
    if simulator == "icarus":
        require_iverilog()
        dump = ["-s", DUMP_MODULE, f"{DUMP_MODULE}.v"] if waves else []
        argv = ["iverilog", "-g2012", "-f", "cmds.f", "-s", MODULE, "-o", "sim.vvp", *dump, "design.sv"]
        return job.run(argv, limits)
    config, _ = _config()
    require_verilator()
    libs = config.libs_dir
    argv = [
        "verilator", "-cc", "--exe", "--build", "--build-jobs", str(build_jobs()), "-Mdir", "obj",
        "--top-module", MODULE, "--vpi", "--public-flat-rw", "--prefix", "Vtop", "-o", "sim", "-Wno-fatal",
        "--timescale", TIMESCALE, "-LDFLAGS", f"-Wl,-rpath,{libs} -L{libs} -lcocotbvpi_verilator",
        *(["--trace"] if waves else []),
        str(config.share_dir / "lib" / "verilator" / "verilator.cpp"), "design.sv",
    ]  # fmt: skip
    return job.run(argv, limits)


def simulate_cocotb(job: Job, simulator: str, waves: bool, limits: Limits) -> SandboxRun:
    env: Mapping[str, str] = _env()
    if simulator == "icarus":
        config, _ = _config()
        # -none: no waveform unless our dump module asked for one.
        return job.run(["vvp", "-m", str(config.lib_entry("vpi", "icarus")), "sim.vvp",
                        *([] if waves else ["-none"])], limits, env)  # fmt: skip
    return job.run(["obj/sim", *(["--trace", "--trace-file", WAVES] if waves else [])], limits, env)


def test_status(job: Job) -> str | None:
    """How cocotb says our test ended: "passed", "failed:<exception type>", "error", or None
    when there is no well-formed results file (cocotb never got to write one)."""
    try:
        data = job.read(RESULTS, MAX_RESULTS_BYTES)
    except hostfs.UnsafePath:
        return None
    if data is None or b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        return None  # cocotb writes neither; refusing them keeps the parser from expanding entities
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return None
    cases = [c for c in root.iter("testcase") if c.get("name") == TEST_NAME]
    if len(cases) != 1:
        return None
    case = cases[0]
    failure = case.find("failure")
    if failure is not None:
        return f"failed:{failure.get('type', '')}"
    if case.find("error") is not None:
        return "error"
    return "passed" if case.find("skipped") is None else "error"
