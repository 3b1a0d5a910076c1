"""One attempt at a Verilog task: extract, pre-check, build and simulate in the sandbox, score.

An episode is pickled between the gym pool's processes, so it holds only the task, its
settings and the path of its work directory (made on the first step, in the worker). Each
turn works in a subdirectory `turn-N/` of it, where its logs and waveforms stay: `info`
passes their paths, and `close()` removes them unless `keep_artifacts` is set.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gyms import hostfs
from gyms.base import GYM_EXCEPTION, Episode, Outcome, Task, Verdict
from gyms.sandbox import Limits, Sandbox, SandboxRun, Workdir
from gyms.verilog.benches import Bench, BenchOptions, make_bench
from gyms.verilog.benches.base import DESIGN, BenchRaised, NotStarted
from gyms.verilog.benches.recorded import NoVerdict, Score
from gyms.verilog.benches.testbench import WAVES
from gyms.verilog.checks.extract import MAX_SOURCE_CHARS, extract_verilog
from gyms.verilog.checks.prebuild import ensure_warm
from gyms.verilog.checks.precheck import precheck
from gyms.verilog.checks.simulators import Build, Job, build_sandbox, make_simulator
from gyms.verilog.checks.toolchain import build_env, ccache_dir, require_verilator
from gyms.warm import WALL_PER_CPU

FEEDBACK_CHARS = 2500  # compiler output beyond this is noise to the model
CCACHE_SCRATCH = ".ccache-tmp"  # ccache's temporary files, in the turn directory
RETRY = "\nFix the design and answer with the complete module again."
# The answer's design is found by its `module` keyword (checks/extract.py): a design written as a
# `macromodule` alone is not found, and the feedback says why.
_MACROMODULE = re.compile(r"\bmacromodule\b")



# The limits on an answer's build and simulation are CPU time (`compile_timeout_s` and the
# simulation timeout of it, counted per process), which a loaded machine does not eat into; wall
# time only backs them up, WALL_PER_CPU times as long, as for every gym's checks. A design that
# loops burns CPU and ends at its CPU limit whatever the load, while a correct one on a machine at
# load 12 (6 runnable processes per core, seen under CI beside other work) took more than 30 s of
# wall time to build with a few seconds of CPU, and failed as the model's fault.


def cpu_limits(cpu_s: float, **limits: Any) -> Limits:
    """`cpu_s` of CPU time, backed up by WALL_PER_CPU times as much wall time."""
    return Limits(wall_s=cpu_s * WALL_PER_CPU, cpu_s=math.ceil(cpu_s), **limits)


def build_limits(compile_timeout_s: float) -> Limits:
    return cpu_limits(compile_timeout_s, memory_mb=4096, processes=128)


@dataclass(frozen=True)
class Settings:
    """The gym options an episode needs (plain values: they travel with the episode)."""

    bench: BenchOptions  # the simulator and the testbench among them
    compile_timeout_s: float
    sim_timeout_s: float
    keep_artifacts: bool
    ccache_dir: str | None  # None: the default directory; "off": no cache
    # (task id, simulation timeout) where a task has its own (heavy suite, benchmarks); else sim_timeout_s
    sim_timeouts: tuple[tuple[str, float], ...] = ()
    # (task id, seconds) the reference took to simulate, where measured (vetted benchmark tasks)
    reference_sim_s: tuple[tuple[str, float], ...] = ()

    @property
    def simulator(self) -> str:
        return self.bench.simulator


class VerilogEpisode(Episode):
    def __init__(self, task: Task, max_turns: int, settings: Settings, dataset_fault: str | None = None) -> None:
        super().__init__(task, max_turns)
        self.settings = settings
        self.dataset_fault = dataset_fault  # why the task's own files fail here (vetting), if they do
        self.workdir: Workdir | None = None

    def close(self) -> None:
        if self.workdir is not None and not self.settings.keep_artifacts:
            self.workdir.cleanup()
            self.workdir = None

    def evaluate(self, action: str) -> Verdict:
        if self.dataset_fault is not None:
            why = f"the benchmark's own files fail on {self.settings.simulator}: {self.dataset_fault}"
            return Verdict(0.0, Outcome.ERROR, f"internal error: task {self.task.id} is excluded: {why}",
                           {"error": why, "dataset_fault": True})  # fmt: skip
        retry = RETRY if self.turn < self.max_turns else ""
        s = self.settings
        bench = make_bench(self.task, s.bench)
        code = extract_verilog(action, bench.module)
        if code is None and _MACROMODULE.search(action):
            return _fail(f"No Verilog found: a design is read by its `module` keyword, and `macromodule` is not "
                         f"read. Write it as `module {bench.module}` (macromodule means the same) in a ```verilog code block.", {})
        if code is None:
            return _fail(f"No Verilog found. Answer with the complete `module {bench.module}` in a ```verilog "
                         "code block.", {})  # fmt: skip
        if len(code) > MAX_SOURCE_CHARS:
            return _fail(f"The design is {len(code)} characters long; the limit is {MAX_SOURCE_CHARS}.", {})
        bench = bench.ready(self._trusted_run)
        started = time.monotonic()
        # Printing is refused where the verdict is printed text (forgeable benches).
        checked = precheck(code, bench.module, bench.expected_ports, not bench.forgeable, bench.reserved_modules,
                           s.simulator)  # fmt: skip
        info: dict[str, Any] = {"stage": "precheck", "precheck_s": round(time.monotonic() - started, 4),
                                "forgeable": bench.forgeable}  # fmt: skip
        if bench.forgeable:
            info["forgeable_reason"] = bench.forgeable_reason
        if not checked.ok:
            return _fail("Your design has errors:\n" + "\n".join(checked.errors) + retry, info)
        job = self._job(bench)
        info.update(workdir=str(job.workdir.path), turn_dir=str(job.path))
        try:
            return self._run(job, bench, code, info, retry)
        except hostfs.UnsafePath as exc:
            # Only code run in the sandbox can plant what the host refuses to follow.
            return _fail(f"The simulation left an unexpected entry in its directory ({exc}).{retry}", info)

    def _run(self, job: Job, bench: Bench, code: str, info: dict[str, Any], retry: str) -> Verdict:
        s = self.settings
        job.write(DESIGN, code)
        build = bench.prepare(job)
        built = bench.build(job, build, self._build_limits())
        info.update(stage="build", build_s=round(built.wall_s, 3), build_log=str(_log(job, "build.log", built)))
        if not built.ok:
            return self._build_failed(built, info, retry)
        ran = bench.simulate(job, build, self._sim_limits(bench))
        info.update(stage="simulate", sim_s=round(ran.wall_s, 3), sim_cpu_s=round(ran.cpu_s, 3),
                    sim_log=str(_log(job, "sim.log", ran)))
        if s.bench.waves and job.has_file(WAVES):
            info["waves"] = str(job.path / WAVES)
        score = bench.score(job, ran.stdout)
        if isinstance(score, NoVerdict):
            return self._no_verdict(job, bench, ran, score, info, retry)
        info.update(checks_passed=score.passed, checks_total=score.total)
        return _scored(score, info, retry)

    # -- steps -----------------------------------------------------------------------------

    def _job(self, bench: Bench) -> Job:
        cache = self._cache()
        sandbox = build_sandbox(cache)
        if self.workdir is None:
            self.workdir = sandbox.workdir(prefix="heavygym-verilog-")
        subdir = f"turn-{self.turn}"
        # Made afresh: whatever a sandboxed run left under that name (a link, a FIFO) is removed,
        # never followed; owned by the sandbox uid, which writes its build there.
        hostfs.make_dir(self.workdir.path, subdir, self.workdir.uid)
        env = self._env(sandbox, cache, self.workdir.path / subdir / CCACHE_SCRATCH, bench.flavour)
        return Job(sandbox, self.workdir, subdir, env)

    def _cache(self) -> Path | None:
        """Verilator's compiler cache (made if missing), None for Icarus or with the cache off."""
        s = self.settings
        make_simulator(s.simulator)  # raises ToolMissing early
        return ccache_dir(s.ccache_dir) if s.simulator == "verilator" else None

    def _env(self, sandbox: Sandbox, cache: Path | None, scratch: Path, flavour: str) -> dict[str, str]:
        if self.settings.simulator != "verilator":
            return {}
        verilator = require_verilator()
        if cache is not None:
            ensure_warm(sandbox, cache, build_env(verilator, cache), flavour, verilator.version)
        # The design's build only reads the cache (it is not bound writable into the sandbox).
        return build_env(verilator, cache, scratch=scratch)

    def _trusted_run(self, bench: Bench, files: dict[str, str | bytes], build: Build, read: str,
                     limit: int) -> bytes | None:  # fmt: skip
        """Our own files (a dataset's testbench and reference) run as `bench` runs them, in a fresh sandbox."""
        cache = self._cache()
        sandbox = build_sandbox(cache)
        with sandbox.workdir(prefix="heavygym-verilog-trace-") as workdir:
            job = Job(sandbox, workdir, ".", self._env(sandbox, cache, workdir.path / CCACHE_SCRATCH, bench.flavour))
            for name, data in files.items():
                job.write(name, data)
            if not bench.build(job, build, self._build_limits()).ok:
                return None
            bench.simulate(job, build, self._sim_limits(bench))
            try:
                return job.read(read, limit)
            except hostfs.UnsafePath:
                return None

    def _build_limits(self) -> Limits:
        return build_limits(self.settings.compile_timeout_s)

    def _sim_timeout_s(self) -> float:
        s = self.settings
        return dict(s.sim_timeouts).get(self.task.id, s.sim_timeout_s)

    def _sim_limits(self, bench: Bench) -> Limits:
        return cpu_limits(self._sim_timeout_s(), memory_mb=bench.memory_mb,
                          file_mb=512 if self.settings.bench.waves else 64)  # fmt: skip

    # -- verdicts --------------------------------------------------------------------------

    def _build_failed(self, built: SandboxRun, info: dict[str, Any], retry: str) -> Verdict:
        if built.killed == "timeout" or built.killed == "cpu-limit":
            return _fail(f"Your design took longer than {self.settings.compile_timeout_s:g} s to compile; "
                         f"make it smaller.{retry}", info)  # fmt: skip
        log = built.output
        if self.settings.simulator == "verilator" and "%Error" not in log:
            # Verilator accepted the design but the C++ toolchain failed: not the model's doing.
            return Verdict(0.0, Outcome.ERROR, "internal error: the Verilator C++ build failed",
                           {**info, "error": _trim(log)})  # fmt: skip
        return _fail("The simulator could not compile your design:\n" + _compile_errors(log) + retry, info)

    def _no_verdict(self, job: Job, bench: Bench, ran: SandboxRun, missing: NoVerdict, info: dict[str, Any],
                    retry: str) -> Verdict:  # fmt: skip
        s = self.settings
        if ran.killed in ("timeout", "cpu-limit"):
            info["timed_out"] = True
            limit = self._sim_timeout_s()
            reference = dict(s.reference_sim_s).get(self.task.id)
            if reference is None:
                ran_past = f"The simulation did not finish within {limit:g} s."
            else:
                info["reference_sim_s"] = reference
                ran_past = (f"The reference design finished in {reference:.2g} s; yours ran past the limit of "
                            f"{limit:g} s.")  # fmt: skip
            return _fail(
                f"{ran_past} Look for a loop that never ends (a while/for loop whose condition never changes) or a "
                "combinational loop (a signal that depends on itself through always @* blocks or assigns)." + retry,
                info,
            )
        fault = bench.stopped(job, ran, missing)
        if isinstance(fault, NotStarted):
            return Verdict(0.0, Outcome.ERROR, f"internal error: {fault.reason}", {**info, "error": _trim(ran.output)})
        if isinstance(fault, BenchRaised):
            # The answer's fail, since only the infrastructure makes an error, and the gym's bug on record.
            info[GYM_EXCEPTION] = fault.reason
            return _fail(fault.feedback + retry, info)
        return _fail(f"The simulation ended before the testbench finished ({missing.reason}):\n" + _trim(ran.output)
                     + retry, info)  # fmt: skip


def _fail(feedback: str, info: dict[str, Any]) -> Verdict:
    return Verdict(0.0, Outcome.FAIL, feedback, info)


def _scored(score: Score, info: dict[str, Any], retry: str) -> Verdict:
    if score.all_passed:
        checks = "the check" if score.total == 1 else f"all {score.total} checks"
        return Verdict(1.0, Outcome.PASS, f"Correct: {checks} passed.", info)
    lines = [f"{score.passed} of {score.total} checks passed."]
    if score.mismatches:
        lines += [score.heading, *score.mismatches]
    return Verdict(score.reward, Outcome.FAIL, "\n".join(lines) + retry, info)


def _log(job: Job, name: str, result: SandboxRun) -> Path:
    return job.write(name, result.output)  # replaces, never follows, what the sandbox left there


_NOISE = re.compile(
    r"^(make(\[\d+\])?: |g\+\+ |ccache |- V e r i l a t|- Verilator:|\s*\.\.\. For warning description)"
)


def _compile_errors(log: str) -> str:
    """The compiler's messages, errors before warnings, without build chatter (make, g++ lines)."""
    blocks: list[list[str]] = []
    for line in log.splitlines():
        if not line.strip() or _NOISE.match(line):
            continue
        if line[0].isspace() and blocks:
            blocks[-1].append(line)  # a message's source excerpt or continuation
        else:
            blocks.append([line])
    blocks.sort(key=lambda block: "error" not in block[0].lower())  # stable: errors first
    return _trim("\n".join(line for block in blocks for line in block))


def _trim(text: str) -> str:
    text = text.strip()
    if len(text) <= FEEDBACK_CHARS:
        return text
    return text[:FEEDBACK_CHARS] + "\n[... output trimmed ...]"
