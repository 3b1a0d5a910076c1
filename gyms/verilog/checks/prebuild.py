"""Fill the compiler cache once before the first Verilator build of a machine.

A cold Verilator build compiles Verilator's runtime library too (~6-11 s on 2 cores); with a
warm ccache only the design's own C++ is compiled (~1.5 s). Without this, the first episodes
on a fresh machine would be charged for the runtime library, and two workers would compile
it at once. One worker builds a trivial design under a file lock; the others wait for it,
and a marker file makes every later call free.

Under `--sandbox docker` the compiler that fills the cache is the toolchain image's g++, not
the host's: its entries are keyed by that compiler, and the marker names the image. The warm-up
is the one run that writes the cache, in a container of its own that mounts it writable
(`Sandbox.run(shared=...)`); the builds of answers read it where the worker's container mounts
it read-only (`build_sandbox`).
"""

from __future__ import annotations

import fcntl
import re
from pathlib import Path

from gyms import hostfs
from gyms.sandbox import Limits, Sandbox
from gyms.verilog.benches.cocotb_bench import build_cocotb
from gyms.verilog.checks.simulators import Build, Job, VerilatorSim

WARM_TIMEOUT_S = 180.0
_DESIGN = "module TopModule (input clk, input [3:0] a, output reg [3:0] q);\n" \
          "  always @(posedge clk) q <= a;\nendmodule\n"  # fmt: skip
_TB = """`timescale 1ns/1ps
module warm_tb;
  reg clk = 1'b0;
  reg [3:0] a = 4'd5;
  wire [3:0] q;
  TopModule dut (.clk(clk), .a(a), .q(q));
  initial begin
    #5 clk = 1'b1;
    #5 $display("warm %0d", q);
    $finish;
  end
endmodule
"""


def ensure_warm(sandbox: Sandbox, cache: Path, env: dict[str, str], flavour: str, version: str) -> None:
    """Build once per (flavour, Verilator version, docker image) into `cache`; `flavour` is
    "binary" or "cocotb"."""
    image = sandbox.container.image if sandbox.container is not None else None
    where = "" if image is None else "-" + re.sub(r"[^A-Za-z0-9_.-]", "-", image)
    marker = cache / f".heavygym-warm-{flavour}-{version}{where}"
    if marker.exists():
        return
    with open(cache / ".heavygym-warm.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if marker.exists():
            return
        limits = Limits(wall_s=WARM_TIMEOUT_S, cpu_s=int(WARM_TIMEOUT_S), memory_mb=4096, processes=128)
        with sandbox.workdir(prefix="heavygym-verilog-warm-") as workdir:
            hostfs.write_file(workdir.path, "design.sv", _DESIGN)
            job = Job(sandbox, workdir, ".", env, [cache])
            if flavour == "cocotb":
                result = build_cocotb(job, "verilator", False, limits)
            else:
                hostfs.write_file(workdir.path, "tb.sv", _TB)
                result = VerilatorSim().build(job, Build(["design.sv", "tb.sv"], "warm_tb"), limits)
        if result.ok:  # a failed warm-up is retried next time; the real build reports the problem
            marker.touch()
