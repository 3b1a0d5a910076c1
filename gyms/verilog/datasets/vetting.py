"""Vetting a benchmark's own files: each loaded task's reference under its own testbench.

A benchmark task whose own files fail on this simulator (a reference or testbench that does not
compile here, a testbench that never finishes, a reference it fails) would score every answer 0
and count the dataset's fault as the model's. So, when a `source=` benchmark is loaded, every
task's reference is built and run once with the testbench it ships with (the bench an episode
would use, in the sandbox, with the episode's build limit), and the result is cached: ok, or
the tool's message; and the simulation's wall time, from which the gym sets the task's
simulation limit. Tasks that fail are left out of `VerilogGym.tasks()`, with the message.

The cache key is a content hash of the simulator and its version, the reference as the design
is given to the testbench, and every file of the task's bench (testbench, data files), so an
edited file or another simulator version is vetted afresh. One JSON file per key, in
`$HEAVYGYM_VETTING_CACHE`, else `$XDG_CACHE_HOME/heavygym/verilog-vetting` or
`~/.cache/heavygym/verilog-vetting` (mode 700). A cache that cannot be read or written costs
only the runs: the load vets without it and says so once.

(Not `answers/mutant_vetting.py`, which vets the built-in tasks' mutants.)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path

from gyms import cache
from gyms.base import Task
from gyms.sandbox import Limits, Sandbox, SandboxError, SandboxRun
from gyms.verilog.benches import Bench, BenchOptions, make_bench
from gyms.verilog.benches.base import DESIGN
from gyms.verilog.benches.recorded import NoVerdict
from gyms.verilog.checks.prebuild import ensure_warm
from gyms.verilog.checks.simulators import Job, build_sandbox, make_simulator
from gyms.verilog.checks.toolchain import ToolMissing, build_env, ccache_dir, iverilog_version, require_verilator
from gyms.verilog.episode import build_limits

FORMAT = 1  # bump when what a vetting run does changes: older results are then ignored
CACHE_ENV = "HEAVYGYM_VETTING_CACHE"
# The longest a reference may simulate when vetted. Far above any benchmark testbench's need
# (VerilogEval and RTLLM run in well under a second); a testbench without $finish hits it.
VET_SIM_LIMIT_S = 60.0
PROGRESS_EVERY_S = 5.0
MESSAGE_CHARS = 1500


@dataclass(frozen=True)
class Vetting:
    ok: bool
    message: str  # why not: the tool's output, trimmed ("" when ok)
    sim_s: float  # the reference's simulation wall time (0 where it did not run)
    internal: bool = False  # our fault, not the dataset's (a broken C++ toolchain): never cached


def vet_references(
    tasks: Sequence[Task],
    simulator: str,
    compile_timeout_s: float,
    ccache: str | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, Vetting]:
    """Each task's vetting on `simulator`, from the cache or from a run (several at once).

    `say` gets the progress lines (default: stderr). Raises ToolMissing when the simulator is
    not installed.
    """
    say = say or _stderr
    make_simulator(simulator)  # a missing simulator is one error, not one per task
    simulator_id = _simulator_id(simulator)
    folder = cache_dir()
    keys = {t.id: _key(t, simulator_id) for t in tasks}
    found = {t.id: cached for t in tasks if (cached := _load(folder / f"{keys[t.id]}.json")) is not None}
    todo = [t for t in tasks if t.id not in found]
    if not todo:
        return found
    say(f"verilog: vetting {len(todo)} benchmark references on {simulator} ({len(found)} cached in {folder})")
    run = _Runner(simulator, compile_timeout_s, ccache)
    options = BenchOptions(None, 1, 0, False, simulator, "sv")  # the vectors and seed: the loaders' benches use none
    started = time.monotonic()
    cache_ok = True
    with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        # Benches are made here: making one registers paths to hide, which the threads read.
        pending: dict[Future[Vetting], Task] = {pool.submit(run, t, make_bench(t, options)): t for t in todo}
        last = started
        while pending:
            done, _ = wait(pending, timeout=PROGRESS_EVERY_S, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                found[task.id] = result = future.result()
                if cache_ok and not result.internal:
                    cache_ok = _store(folder / f"{keys[task.id]}.json", result, say)
            if time.monotonic() - last >= PROGRESS_EVERY_S and pending:
                last = time.monotonic()
                say(f"verilog: vetted {len(todo) - len(pending)} of {len(todo)} on {simulator} "
                    f"({last - started:.0f} s)")  # fmt: skip
    failed = sum(not v.ok for v in found.values())
    say(f"verilog: vetted {len(todo)} references on {simulator} in {time.monotonic() - started:.1f} s; "
        f"{failed} of {len(tasks)} tasks excluded (their own files fail)")  # fmt: skip
    return found


def cache_dir() -> Path:
    return cache.cache_dir("verilog-vetting", CACHE_ENV)


class _Runner:
    """One task's vetting run: its bench and reference, built and simulated in a fresh sandbox."""

    def __init__(self, simulator: str, compile_timeout_s: float, ccache: str | None) -> None:
        self.simulator = simulator
        # An answer's build limit (as in the episode): a reference that needs more could not be matched.
        self.build_limits = build_limits(compile_timeout_s)
        self.sim_limits = Limits(wall_s=VET_SIM_LIMIT_S, cpu_s=math.ceil(VET_SIM_LIMIT_S), memory_mb=2048)
        self.ccache = ccache

    def __call__(self, task: Task, bench: Bench) -> Vetting:
        try:
            return self._vet(task, bench)
        except (SandboxError, ToolMissing, OSError) as exc:
            return Vetting(False, f"internal error while vetting: {exc}", 0.0, internal=True)

    def _vet(self, task: Task, bench: Bench) -> Vetting:
        make_simulator(self.simulator)  # raises ToolMissing before any work
        compiler_cache = ccache_dir(self.ccache) if self.simulator == "verilator" else None
        sandbox = build_sandbox(compiler_cache)
        with sandbox.workdir(prefix="heavygym-verilog-vetting-") as workdir:
            scratch = workdir.path / ".ccache-tmp"
            job = Job(sandbox, workdir, ".", self._env(sandbox, compiler_cache, scratch, bench.flavour))
            build = bench.prepare(job)
            job.write(DESIGN, task.reference or "")
            built = bench.build(job, build, self.build_limits)
            if not built.ok:
                return self._build_failed(built)
            ran = bench.simulate(job, build, self.sim_limits)
            if ran.killed in ("timeout", "cpu-limit"):
                return _bad(f"the testbench did not finish within {VET_SIM_LIMIT_S:g} s with the reference")
            score = bench.score(job, ran.stdout)
        if isinstance(score, NoVerdict):
            return _bad(f"the testbench printed no verdict with the reference ({score.reason}):\n{ran.output}")
        if not score.all_passed:
            shown = "\n".join(score.mismatches) or ran.output
            return _bad(f"the reference fails its own testbench ({score.passed} of {score.total} checks):\n{shown}")
        return Vetting(True, "", round(ran.wall_s, 4))

    def _env(self, sandbox: Sandbox, compiler_cache: Path | None, scratch: Path, flavour: str) -> dict[str, str]:
        """Verilator's build environment, as an episode's: the compiler cache read-only."""
        if self.simulator != "verilator":
            return {}
        verilator = require_verilator()
        if compiler_cache is not None:
            ensure_warm(sandbox, compiler_cache, build_env(verilator, compiler_cache), flavour, verilator.version)
        return build_env(verilator, compiler_cache, scratch=scratch)

    def _build_failed(self, built: SandboxRun) -> Vetting:
        if built.killed in ("timeout", "cpu-limit"):
            return _bad(f"the reference and its testbench did not compile within {self.build_limits.wall_s:g} s")
        if self.simulator == "verilator" and "%Error" not in built.output:
            # Verilator accepted the files but the C++ toolchain failed: as in an episode, ours.
            return Vetting(False, f"internal error: the Verilator C++ build failed:\n{_trim(built.output)}", 0.0,
                           internal=True)  # fmt: skip
        return _bad(f"the reference and its testbench do not compile on {self.simulator}:\n{built.output}")


def _bad(message: str) -> Vetting:
    return Vetting(False, _trim(message), 0.0)


def _trim(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + "\n[... trimmed ...]"


def _simulator_id(simulator: str) -> str:
    version = require_verilator().version if simulator == "verilator" else iverilog_version()
    return f"{simulator}-{version}"


def _bench_files(task: Task) -> list[Path]:
    """The dataset files a task's bench reads: its folder (RTLLM) or its problem's files (VerilogEval)."""
    folder = Path(task.metadata["dir"])
    if task.metadata["kind"] == "verilog-eval":
        return sorted(folder.glob(f"{task.metadata['stem']}_*"))
    return sorted(p for p in folder.iterdir() if p.is_file())


def _key(task: Task, simulator_id: str) -> str:
    digest = hashlib.sha256()
    for part in (str(FORMAT), simulator_id, task.metadata["kind"], task.reference or ""):
        digest.update(part.encode() + b"\0")
    for path in _bench_files(task):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _load(path: Path) -> Vetting | None:
    try:
        blob = json.loads(path.read_text())
        if blob.pop("format") != FORMAT:
            return None
        return Vetting(bool(blob["ok"]), str(blob["message"]), float(blob["sim_s"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing, unreadable or from another version: vetted again


def _store(path: Path, result: Vetting, say: Callable[[str], None]) -> bool:
    """False (said once) where the cache cannot be written."""
    blob = {"format": FORMAT, **asdict(result)}
    del blob["internal"]
    try:
        cache.write_json_atomically(path, blob)
        return True
    except OSError as exc:
        say(f"warning: the vetting cache {path.parent} cannot be written ({exc.strerror or exc}); vetting without "
            f"it (set {CACHE_ENV} to a writable directory)")  # fmt: skip
        return False


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
