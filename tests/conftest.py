from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from gyms.warm import WALL_PER_CPU

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
T = TypeVar("T")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with a test marked slow run first. `make test`'s two processes take whole files in
    this order, so the short files fill in at the end instead of a long one running alone."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: every file keeps its own order


def requires(available: bool, reason: str) -> pytest.MarkDecorator:
    """Skip where a tool is missing, except under CI: the set-up installs every tool there,
    so a missing one is a failure, never a silent skip."""
    return pytest.mark.skipif(not available and not os.environ.get("CI"), reason=reason)


def _verilog_tools() -> tuple[bool, bool]:
    from gyms.verilog.checks.toolchain import find_verilator, iverilog_version

    return iverilog_version() is not None, find_verilator() is not None


_HAS_ICARUS, _HAS_VERILATOR = _verilog_tools()
needs_icarus = requires(_HAS_ICARUS, "iverilog is not installed")
needs_verilator = requires(_HAS_VERILATOR, "no Verilator >= 5.036")


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """`count` processes spinning on the CPU while the block runs: a loaded machine, made on purpose.
    Each in a session of its own: with the kernel's autogroup scheduling, the processes of one
    session share one slice of the CPU (and the sandbox runs each command in a session of its own)."""
    loop = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(loop, start_new_session=True) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()


# A limit is at least this many times the CPU time the work took before: the same work's CPU
# time varies from run to run, and grows with the load (cores that share caches or an SMT sibling
# with busy loops do less per CPU second): the Lean checker's took 1.4 to 2.5 s here.
CPU_MARGIN = 2.0


def past_its_limit(
    run: Callable[[float, int], T], seen: Callable[[T], tuple[float | None, float]], last: tuple[float, float],
    loops: int, backstop: float = WALL_PER_CPU, attempts: int = 5,
) -> tuple[T, float]:
    """A run whose wall time, under a load of busy loops, went past its CPU-time limit but not
    past the wall-clock backstop (`backstop` times the limit), and that limit: what a test of a
    CPU-time limit needs to show (a wall-clock limit would have failed the run, and the CPU-time
    limit, not the backstop, decided it).

    `run(limit, loops)` does the work beside `loops` busy loops (`busy_loops`); `seen(result)`
    gives the work's CPU seconds (None where it did not pass) and wall seconds; `last` is the
    (CPU, wall) seconds of the work measured before, under `loops` loops. The limit is CPU_MARGIN
    times the CPU time, or more, so that the wall time last seen lies mid-way (geometrically)
    between the limit and the backstop. How much a load slows the work depends on what else the
    machine runs, so a try whose wall time missed that window is tried again: under twice the
    loops if it came out faster than its limit, and under a limit set from its own wall time if it
    reached the backstop. A try inside the window is returned whatever its outcome, for the
    caller's assertions."""
    cpu, wall = last
    for _ in range(attempts):
        limit = round(max(CPU_MARGIN * cpu, wall / backstop**0.5), 2)
        result = run(limit, loops)
        seen_cpu, seen_wall = seen(result)
        # Shown with a failure's report: the tries that led to it.
        print(f"past_its_limit: limit {limit} s, {loops} loops: CPU {seen_cpu} s, wall {seen_wall:.2f} s",
              file=sys.stderr)  # fmt: skip
        if limit < seen_wall < backstop * limit:
            return result, limit
        cpu = max(cpu, seen_cpu or 0.0)
        if seen_wall <= limit:
            loops, wall = 2 * loops, 2 * seen_wall
        else:
            wall = seen_wall
    raise AssertionError(f"no load put the work's wall time between its limit and the backstop in {attempts} tries")


def reply_shapes(code: str, tag: str) -> dict[str, str]:
    """A reply holding `code` in a ```TAG fence, in every common shape a correct reply comes in."""
    fenced = f"Here it is:\n```{tag}\n{code}\n```\n"
    return {
        "crlf": fenced.replace("\n", "\r\n"),
        "lone cr": fenced.replace("\n", "\r"),
        "closing fence without a newline": fenced.rstrip("\n"),
        "closing fence on the last line": f"```{tag}\n{code}```",
        "bom": "\ufeff" + fenced,
        "bom, no fence": "\ufeff" + code,
        "lone cr, no fence": code.replace("\n", "\r"),
        "whitespace after the fences": f"```{tag} \t\n{code}\n``` \t \n",
        "all at once": f"\ufeff```{tag} \t\r\n" + code.replace("\n", "\r\n") + "\r\n``` \t",
    }


def harness(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed `harness` command as a user would."""
    exe = Path(sys.executable).parent / "harness"
    return subprocess.run(
        [str(exe), *args], input=stdin, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.fixture(scope="session")
def example_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example third-party gym, pip-installed into a directory of its own."""
    target = tmp_path_factory.mktemp("plugin")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(ROOT / "examples" / "heavygym-example-gym")],
        check=True,
    )  # fmt: skip
    return target


def with_path(*dirs: Path) -> dict[str, str]:
    """Environment for a subprocess that also sees `dirs` (and the test helpers)."""
    parts = [str(d) for d in dirs] + [str(TESTS)]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return {"PYTHONPATH": os.pathsep.join(parts)}


def reward_rise(curve: list[float], samples_per_step: int, first: int = 5, last: int = 10) -> tuple[float, float, float]:
    """(start, end, z) of a learning curve: the mean reward of its first and last steps, and their
    difference in standard errors. A reward lies in [0, 1], so a step's samples vary at most as a
    Bernoulli of the same mean does: z is conservative. Learning checks assert z, not a fixed
    gain, because the sampling noise of a step's reward is what a fixed gain would have to clear."""
    start, end = sum(curve[:first]) / first, sum(curve[-last:]) / last
    variance = start * (1 - start) / (first * samples_per_step) + end * (1 - end) / (last * samples_per_step)
    return start, end, (end - start) / max(variance, 1e-12) ** 0.5

