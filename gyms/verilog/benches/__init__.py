"""Benches: every way of checking an answer behind one protocol (`base.Bench`).

A built-in task gets the bench the gym's `testbench` option names (`TESTBENCHES`): the
generated SystemVerilog testbench (`builtin.py`, `testbench.py`) or cocotb (`cocotb_bench.py`);
both record outputs that the host compares with the golden model (`vectors.py`, `recorded.py`).
A benchmark task gets its dataset's bench: VerilogEval (`verilog_eval.py`, checked against the
reference's recorded trace by `trace.py`) or RTLLM (`rtllm.py`). `make_bench` is the one place
that chooses.
"""

from __future__ import annotations

from pathlib import Path

from gyms.base import Task
from gyms.verilog.benches.base import Bench, BenchOptions
from gyms.verilog.benches.builtin import BuiltinBench
from gyms.verilog.benches.cocotb_bench import CocotbBench
from gyms.verilog.benches.rtllm import RtllmBench
from gyms.verilog.benches.verilog_eval import VerilogEvalBench
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.tasks import design_task

# The gym's `testbench` option: the bench of built-in tasks. Their class attributes (`timing`,
# `builtin_only`, `package`) are what the gym needs before any task is made.
TESTBENCHES: dict[str, type[BuiltinBench]] = {"sv": BuiltinBench, "cocotb": CocotbBench}

__all__ = ["TESTBENCHES", "Bench", "BenchOptions", "make_bench"]


def make_bench(task: Task, options: BenchOptions) -> Bench:
    kind = task.metadata.get("kind")
    testbench = TESTBENCHES[options.testbench]
    if kind == "builtin":
        return testbench(design_task(task.id), options)
    if testbench.builtin_only:
        raise ValueError(f"task {task.id}: the {options.testbench} testbench exists for built-in tasks only")
    ports = task.metadata.get("ports")
    expected = tuple(PortSpec(*p) for p in ports) if ports else None
    if kind == "verilog-eval":
        return VerilogEvalBench(Path(task.metadata["dir"]), task.metadata["stem"], expected, task.reference or "",
                                options.simulator)  # fmt: skip
    if kind == "rtllm":
        return RtllmBench(Path(task.metadata["dir"]), task.metadata["module"], expected,
                          task.metadata.get("reference_file"), options.simulator)  # fmt: skip
    raise ValueError(f"task {task.id!r} is not a Verilog gym task (metadata kind {kind!r})")
