"""The two simulator backends: Icarus Verilog and Verilator, each a build and a run in the sandbox.

Both run a plain SystemVerilog testbench (ours or a benchmark's) and return the sandbox's
`SandboxRun`s; reading the verdict from the output is the bench's job. The cocotb form has its
own commands (see `benches/cocotb_bench.py`) but the same `Job`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gyms import hostfs
from gyms.resources import per_process
from gyms.sandbox import Limits, Sandbox, SandboxRun, Workdir
from gyms.verilog.checks.toolchain import Verilator, require_iverilog, require_verilator

SIMULATORS = ("icarus", "verilator")
TIMESCALE = "1ns/1ps"


def build_sandbox(cache: Path | None) -> Sandbox:
    """This process's sandbox for the gym's builds and simulations, one per compiler cache
    (choosing the backend probes bwrap once). The cache is exposed: bwrap shows it on its
    read-only root anyway; a docker container mounts it read-only at its host path, where the
    builds' ccache reads it (the warm-up that fills it runs with it `shared`: writable)."""
    return per_process(("verilog-sandbox", cache), lambda: Sandbox(expose=[cache] if cache is not None else ()))


@dataclass
class Job:
    """Commands of one turn: run in `workdir/subdir`, with the build environment and shared dirs."""

    sandbox: Sandbox
    workdir: Workdir
    subdir: str
    env: Mapping[str, str] = field(default_factory=dict)
    shared: Sequence[Path] = ()

    @property
    def path(self) -> Path:
        return self.workdir.path / self.subdir

    # The sandbox can write the turn directory: the host touches it only through hostfs, which
    # follows no link the sandbox may have planted there.

    def _rel(self, name: str) -> str:
        return name if self.subdir == "." else f"{self.subdir}/{name}"

    def write(self, name: str, data: str | bytes) -> Path:
        return hostfs.write_file(self.workdir.path, self._rel(name), data)

    def read(self, name: str, limit: int) -> bytes | None:
        """The regular file `name` of the turn directory (None if missing); UnsafePath otherwise."""
        return hostfs.read_file(self.workdir.path, self._rel(name), limit)

    def has_file(self, name: str) -> bool:
        """Whether `name` is a regular, non-empty file, without reading more than one byte of it."""
        try:
            return bool(hostfs.read_file(self.workdir.path, self._rel(name), 0))
        except hostfs.TooLarge:
            return True  # more than 0 bytes
        except hostfs.UnsafePath:
            return False

    def run(self, argv: Sequence[str], limits: Limits, env: Mapping[str, str] | None = None) -> SandboxRun:
        # The sandbox starts in the work directory; each turn works in a subdirectory of its own.
        wrapped = ["sh", "-c", 'cd "$0" && exec "$@"', self.subdir, *argv]
        return self.sandbox.run(wrapped, self.workdir, limits=limits, env={**self.env, **(env or {})},
                                shared=self.shared)  # fmt: skip


@dataclass(frozen=True)
class Build:
    sources: Sequence[str]  # relative to the turn directory
    top: str | None  # the simulation's top module; None lets the simulator pick the root(s)
    waves: bool = False
    strict_x: bool = False  # Verilator: randomise uninitialised state, as X would be on Icarus


class Icarus:
    name = "icarus"

    def __init__(self) -> None:
        require_iverilog()

    def build(self, job: Job, build: Build, limits: Limits) -> SandboxRun:
        top = ["-s", build.top] if build.top else []
        return job.run(["iverilog", "-g2012", *top, "-o", "sim.vvp", *build.sources], limits)

    def simulate(self, job: Job, build: Build, plusargs: Sequence[str], limits: Limits) -> SandboxRun:
        # -n: a $stop ends the run instead of waiting for interactive input.
        return job.run(["vvp", "-n", "sim.vvp", *plusargs], limits)


class VerilatorSim:
    name = "verilator"

    def __init__(self) -> None:
        self.verilator: Verilator = require_verilator()

    def build(self, job: Job, build: Build, limits: Limits) -> SandboxRun:
        argv = [
            # Warnings are not fatal (designs from models are lint-dirty), but a duplicate module is:
            # Verilator would otherwise keep the first declaration and drop the testbench's.
            "verilator", "--binary", "-Wno-fatal", "-Werror-MODDUP", "--timescale", TIMESCALE, "-Mdir", "obj",
            "-o", "sim", "--build-jobs", str(build_jobs()),
        ]  # fmt: skip
        if build.top:
            argv += ["--top-module", build.top]
        if build.waves:
            argv.append("--trace")
        if build.strict_x:
            argv += ["--x-assign", "unique", "--x-initial", "unique"]
        return job.run([*argv, *build.sources], limits)

    def simulate(self, job: Job, build: Build, plusargs: Sequence[str], limits: Limits) -> SandboxRun:
        extra = ["+verilator+rand+reset+2", "+verilator+seed+1"] if build.strict_x else []
        return job.run(["obj/sim", *plusargs, *extra], limits)


Simulator = Icarus | VerilatorSim


def make_simulator(name: str) -> Simulator:
    if name == "icarus":
        return Icarus()
    if name == "verilator":
        return VerilatorSim()
    raise ValueError(f"unknown simulator {name!r}; choose one of {', '.join(SIMULATORS)}")


def build_jobs() -> int:
    """Parallel C++ compiles per Verilator build: a new design compiles one file, so two is plenty."""
    return max(1, min(2, len(os.sched_getaffinity(0))))
