from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
T = TypeVar("T")


def requires(available: bool, reason: str) -> pytest.MarkDecorator:
    """Skip where a tool is missing, except under CI: the set-up installs every tool there,
    so a missing one is a failure, never a silent skip."""
    return pytest.mark.skipif(not available and not os.environ.get("CI"), reason=reason)


def _verilog_tools() -> tuple[bool, bool]:
    from gyms.verilog.toolchain import find_verilator, iverilog_version

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


def past_its_limit(
    run: Callable[[float], T], times: Callable[[T], tuple[float, float] | None], last: tuple[float, float],
    attempts: int = 3,
) -> tuple[T, float]:
    """A run under load whose wall time went past its limit, and that limit: what a test of a
    CPU-time limit needs to show (a wall-clock limit would have failed the run). `times` gives a
    run's (CPU, wall) seconds, None for a run that did not pass (returned at once, for the caller's
    assertions). Each try's limit is the geometric mean of the CPU and wall time last seen: as far
    above the CPU time the work needs as below the wall time the load stretched it to, since the
    load slows it by a factor no test controls (other work shares the machine) and a checker with
    threads of its own spends more CPU than one core's share. A try that came out faster than its
    limit is tried again with its own times."""
    for _ in range(attempts):
        limit = round((last[0] * last[1]) ** 0.5, 2)
        result = run(limit)
        seen = times(result)
        if seen is None or seen[1] > limit:
            return result, limit
        last = seen
    raise AssertionError(f"the load did not slow the work past its limit in {attempts} tries: the test shows nothing")


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

