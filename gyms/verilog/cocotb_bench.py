"""Build and run a design under cocotb 2.x on Icarus or Verilator, in the sandbox.

We call the simulators directly, the way cocotb's own runner does (`cocotb_tools.runner`),
rather than through it: the runner would need a Python process of its own in the sandbox,
and we want each step under its own limits. The test module is `cocotb_vectors.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from gyms.sandbox import Limits, RunResult
from gyms.verilog.simulators import TIMESCALE, Job, build_jobs
from gyms.verilog.spec import MODULE, DesignTask
from gyms.verilog.testbench import CARE, EXPECTED, STIMULUS, WAVES
from gyms.verilog.toolchain import ToolMissing, require_iverilog, require_verilator

TEST_MODULE = "heavygym_cocotb_vectors"
STARTED = "HEAVYGYM_COCOTB_STARTED"
DUMP_MODULE = "heavygym_dump"


def _config() -> tuple[ModuleType, ModuleType]:
    """cocotb's configuration module and find_libpython, imported only when cocotb is used."""
    try:
        import cocotb_tools.config as config
        import find_libpython
    except ImportError as exc:
        raise ToolMissing(f"cocotb is not installed ({exc}): pip install cocotb==2.1.0") from exc
    return config, find_libpython


def bench_files(task: DesignTask, job_dir: Path, waves: bool, simulator: str) -> None:
    """Write the test module and its description next to the data files."""
    shutil.copyfile(Path(__file__).with_name("cocotb_vectors.py"), job_dir / f"{TEST_MODULE}.py")
    description = {
        "clock": task.clock,
        "inputs": [[p.name, p.width] for p in task.inputs],
        "outputs": [[p.name, p.width] for p in task.outputs],
        "stimulus": STIMULUS,
        "expected": EXPECTED,
        "care": CARE,
    }
    (job_dir / "bench.json").write_text(json.dumps(description))
    if simulator == "icarus":
        # A design without `timescale would run in seconds, too coarse for the test's 1 ns steps.
        (job_dir / "cmds.f").write_text(f"+timescale+{TIMESCALE}\n")
        if waves:
            (job_dir / f"{DUMP_MODULE}.v").write_text(
                f'module {DUMP_MODULE}();\ninitial begin\n  $dumpfile("{WAVES}");\n  $dumpvars(0, {MODULE});\nend\n'
                "endmodule\n"
            )


def _env(nonce: str) -> dict[str, str]:
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
        "COCOTB_RESULTS_FILE": "results.xml",
        "COCOTB_RANDOM_SEED": "1",
        "COCOTB_ANSI_OUTPUT": "0",
        "COCOTB_TRUST_INERTIAL_WRITES": "1",
        "HEAVYGYM_NONCE": nonce,
    }


def build(job: Job, simulator: str, waves: bool, limits: Limits) -> RunResult:
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


def simulate(job: Job, simulator: str, waves: bool, nonce: str, limits: Limits) -> RunResult:
    env: Mapping[str, str] = _env(nonce)
    if simulator == "icarus":
        config, _ = _config()
        # -none: no waveform unless our dump module asked for one.
        return job.run(["vvp", "-m", str(config.lib_entry("vpi", "icarus")), "sim.vvp",
                        *([] if waves else ["-none"])], limits, env)  # fmt: skip
    return job.run(["obj/sim", *(["--trace", "--trace-file", WAVES] if waves else [])], limits, env)
