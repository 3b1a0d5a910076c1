"""The conformance check of the Verilog gym, through a real gym pool: every built-in task on
Icarus, a combinational, a clocked and a memory task on Verilator, a subset under cocotb.

Simulation timeouts are shortened here so that the never-finishing candidates (one per task)
do not dominate the run; the defaults are in gyms/verilog/gym.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import harness, needs_icarus, needs_verilator, requires
from rtllm_shapes import write_designs

from gyms.conformance import GARBAGE_ACTIONS, check_gym
from gyms.sandbox import Sandbox
from gyms.verilog import VerilogGym
from gyms.verilog.tasks import builtin_tasks
from gyms.verilog.checks.toolchain import package_version


def _sandbox_loads_libpython() -> bool:
    """cocotb embeds this interpreter's libpython in the simulator: the sandbox uid must reach it."""
    import find_libpython

    library = find_libpython.find_libpython()
    sandbox = Sandbox()
    with sandbox.workdir() as workdir:
        probe = f"import ctypes; ctypes.CDLL({library!r})"
        return library is not None and sandbox.run([sys.executable, "-c", probe], workdir).ok


needs_cocotb = requires(
    package_version("cocotb") is not None and _sandbox_loads_libpython(),
    "cocotb is missing, or the sandbox uid cannot read this interpreter's libpython",
)


def assert_conforms(gym: VerilogGym, tasks: int) -> None:
    report = check_gym(gym, workers=2)
    assert report.ok, [(v.task_id, v.label, v.problem, v.observation) for v in report.violations]
    assert report.tasks == tasks
    labels = {c.label for c in report.checks}
    assert {"reference", "syntax-error", "never-finishes", *GARBAGE_ACTIONS} <= labels
    assert any(label.startswith("mutant:") for label in labels)
    assert all("short time limits" in note for note in report.notes)  # nothing went unexercised
    assert not report.not_applicable


@needs_icarus
def test_every_builtin_task_conforms_on_icarus() -> None:
    assert_conforms(VerilogGym(sim_timeout_s=1.5), len(builtin_tasks()))


# What differs on Verilator is the simulator, not the task: two-state values, its timing and
# the C++ build. A combinational bench, a clocked one and a clocked memory (arrays) cover them;
# the Icarus sweep above checks every task itself. Verilator builds each candidate (a C++
# compile): every task took 1090 s of a 64-minute CI run, one task of each of the six
# categories 157-402 s. `harness gyms check verilog -o simulator=verilator` sweeps every task.
VERILATOR_CATEGORIES = ("combinational", "sequential", "memory")


def first_task_of(categories: tuple[str, ...]) -> list[str]:
    firsts: dict[str, str] = {}
    for task_id, task in builtin_tasks().items():
        firsts.setdefault(task.category, task_id)
    return [firsts[c] for c in categories]


@pytest.mark.slow
@needs_verilator
def test_a_combinational_a_clocked_and_a_memory_task_conform_on_verilator() -> None:
    tasks = first_task_of(VERILATOR_CATEGORIES)
    assert_conforms(VerilogGym(simulator="verilator", sim_timeout_s=1.5, tasks=",".join(tasks)), len(tasks))


@needs_icarus
@needs_cocotb
def test_a_subset_conforms_under_cocotb_on_icarus() -> None:
    assert_conforms(VerilogGym(testbench="cocotb", tasks="alu8,stack4", sim_timeout_s=4), 2)


@needs_verilator
@needs_cocotb
def test_one_task_conforms_under_cocotb_on_verilator() -> None:
    assert_conforms(VerilogGym(simulator="verilator", testbench="cocotb", tasks="pipeline_stage", sim_timeout_s=4), 1)


@needs_icarus
def test_the_cli_check_passes() -> None:
    result = harness("gyms", "check", "verilog", "-o", "tasks=adder8", "-o", "sim_timeout_s=1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS gym verilog" in result.stdout


def _hang_checks(report) -> dict[str, object]:
    return {c.task_id: c for c in report.checks if c.label == "never-finishes"}


@needs_icarus
def test_the_hang_reaches_the_simulator_on_rtllm_shaped_designs(tmp_path: Path) -> None:
    # Non-ANSI ports connected by position with a parameter the testbench sets; a helper module
    # first, a `timescale, a `default_nettype none and a comment naming the design.
    gym = VerilogGym(source=f"rtllm:{write_designs(tmp_path, {'mul_reg', 'pair_buffer'})}")
    report = check_gym(gym, workers=2)
    assert report.ok, [(v.task_id, v.label, v.problem, v.observation) for v in report.violations]
    hangs = _hang_checks(report)
    assert set(hangs) == {"rtllm/mul_reg", "rtllm/pair_buffer"}
    assert all(c.status == "ok" for c in hangs.values()), hangs  # stopped by the limit in the simulation
    syntax = [c for c in report.checks if c.label == "syntax-error"]
    assert len(syntax) == 2 and all(c.status == "ok" for c in syntax)


@needs_icarus
def test_a_hang_the_build_refuses_is_not_applicable(tmp_path: Path) -> None:
    # The testbench reads a register inside the design, which the hang's wrapper does not have.
    gym = VerilogGym(source=f"rtllm:{write_designs(tmp_path, {'peek_counter'})}")
    report = check_gym(gym, workers=2)
    hang = _hang_checks(report)["rtllm/peek_counter"]
    assert hang.status == "not applicable" and hang not in report.violations
    assert "never reached stage 'simulate': it ended at 'build'" in hang.not_applicable
    assert "count_q" in hang.not_applicable  # the simulator's own message says why
    assert report.ok and any("the timeout was not exercised" in n for n in report.notes)


@needs_icarus
def test_only_the_first_hang_waits_out_the_full_limit() -> None:
    gym = VerilogGym(tasks="adder8,mux4,counter_mod10")
    short = gym.with_short_time_limits()
    assert short.sim_timeout_s < gym.sim_timeout_s and short.step_timeout_s < gym.step_timeout_s
    assert short.tasks() == gym.tasks()
    report = check_gym(gym, workers=2)
    assert report.ok, [(v.task_id, v.label, v.problem) for v in report.violations]
    limits = [c.observation.split("within ", 1)[1].split(" s.")[0] for c in report.checks if c.label == "never-finishes"]
    assert limits == [f"{gym.sim_timeout_s:g}", f"{short.sim_timeout_s:g}", f"{short.sim_timeout_s:g}"]
