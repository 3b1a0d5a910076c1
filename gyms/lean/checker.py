"""Check proofs: a pool of warm checker processes, or one fresh checker per check (cold).

Both return a `Checked`: Lean's messages, the axioms the theorem depends on, or the checker's
refusal of the proof's syntax. A check's time limit is CPU time (`gyms.warm`: the checker's
processes, measured while the host waits), backed by wall time `WALL_PER_CPU` times as long;
starting a checker is limited in wall time alone. The warm pool restarts a checker that crashed
or was killed for taking too long (in the background, so the step that hit the limit returns at
once), recycles a checker after `backend.recycle_after` checks, and re-runs a check once on a
fresh process when the checker crashes under it, so that only a proof that crashes Lean twice is
blamed for it. A protocol violation is never re-run: it fails the check at once.
"""

from __future__ import annotations

import math
import os
import queue
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

from gyms.lean.backends import COLD_FILE, Backend, Launch
from gyms.lean.heavycheck import HeavyCheckProcess
from gyms.lean.protocol import Checked, ProofJob, ProtocolError, ProtocolViolation, axioms_from_messages, json_lines
from gyms.lean.repl import ReplProcess
from gyms.sandbox import Limits, Sandbox
from gyms.warm import WALL_PER_CPU, WarmCrash, WarmTimeout

HEALTH_JOB = ProofJob("", "theorem heavygym_health : 1 + 1 = 2", "heavygym_health", "rfl")
# What a crashed wasm Lean prints when its 2 GB heap runs out.
_OUT_OF_MEMORY = ("out of memory", "bad_alloc", "Out of memory")

Checker = HeavyCheckProcess | ReplProcess


class LeanCrashedOnProof(WarmCrash):
    """Lean crashed while checking this text, twice: the text is to blame, not the machine."""


@dataclass(frozen=True)
class Health:
    ok: bool
    seconds: float
    starts: int
    detail: str = ""


def make_checker(backend: Backend, header: str, name: str, sandbox: Sandbox) -> Checker:
    """A (not yet started) checker process of `backend` for sessions of `header`."""
    launch: Launch = backend.warm()
    kind = HeavyCheckProcess if backend.protocol == "heavycheck" else ReplProcess
    return kind(
        launch.argv, header, name=name, env=launch.env, files=launch.files,
        start_timeout_s=backend.start_timeout_s, sandbox=sandbox,
    )  # fmt: skip


def default_pool_size(memory_gb_per_checker: float) -> int:
    """Checkers this machine can hold: one per core, as far as available memory allows."""
    cores = len(os.sched_getaffinity(0))
    try:
        with open("/proc/meminfo") as meminfo:
            available_kb = next(int(line.split()[1]) for line in meminfo if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return 1
    return max(1, min(cores, int(available_kb / 2**20 / memory_gb_per_checker)))


class CheckerPool:
    """`size` warm checkers whose session loaded `header` (imports); thread-safe. The default
    size is what the machine holds (`default_pool_size`); the gym uses one pool per worker
    process, of `checkers` checkers (default 1).

    Checkers are only ever started on the pool's own launcher threads, which live as long as
    the pool: bwrap's `--die-with-parent` kills a sandbox when the *thread* that started it
    ends, so a checker started from a short-lived thread would die with it.
    """

    def __init__(
        self, backend: Backend, header: str = "", size: int | None = None, sandbox: Sandbox | None = None
    ) -> None:
        size = default_pool_size(backend.checker_memory_gb) if size is None else size
        if size < 1:
            raise ValueError(f"a checker pool needs at least one checker, got {size}")
        self.backend = backend
        self.header = header
        self.sandbox = sandbox or Sandbox()
        self._checkers = [self._make(i) for i in range(size)]
        self._idle: queue.Queue[Checker] = queue.Queue()
        for checker in self._checkers:
            self._idle.put(checker)
        self._launcher = ThreadPoolExecutor(max_workers=size, thread_name_prefix="lean-checker-start")
        self.closed = False  # once closed it checks nothing more (`gyms.resources.per_process` makes a new one)

    @property
    def starts(self) -> int:
        return sum(c.starts for c in self._checkers)

    @property
    def pids(self) -> list[int]:
        """The sandbox processes of the running checkers (for measuring their memory)."""
        return [c.pid for c in self._checkers if c.pid is not None]

    def _make(self, index: int) -> Checker:
        return make_checker(self.backend, self.header, f"lean-{self.backend.name}-{index}", self.sandbox)

    def check(self, job: ProofJob, cpu_s: float) -> Checked:
        """Check one proof within `cpu_s` of CPU time (raises WarmTimeout, WarmCrash,
        ProtocolViolation, or ProtocolError when the checker refuses the request)."""
        checker = self._acquire()
        started = time.monotonic()
        try:
            checked = self._check_with_retry(checker, job, cpu_s)
        except (WarmTimeout, WarmCrash):
            self._restart_later(checker)
            raise
        except BaseException:
            self._idle.put(checker)  # the checker is fine; the request was not
            raise
        if self.backend.recycle_after is not None and checker.checks >= self.backend.recycle_after:
            self._restart_later(checker)
        else:
            self._idle.put(checker)
        return replace(checked, seconds=time.monotonic() - started, cpu_s=checker.last_cpu_s)

    def _check_with_retry(self, checker: Checker, job: ProofJob, cpu_s: float) -> Checked:
        try:
            return checker.check(job, cpu_s)
        except ProtocolViolation:
            raise  # the checked text did it: no second chance
        except WarmCrash:
            self._start(checker)  # a fresh process: was it the machine, or the proof?
        try:
            return checker.check(job, cpu_s)
        except ProtocolViolation:
            raise
        except WarmCrash as exc:
            raise LeanCrashedOnProof(f"Lean crashed twice on this text: {exc}") from exc

    def _acquire(self) -> Checker:
        checker = self._idle.get()
        if not checker.alive:
            try:
                self._start(checker)
            except WarmCrash:
                self._idle.put(checker)  # dead, but the next caller may try again
                raise
        return checker

    def _start(self, checker: Checker) -> None:
        self._launcher.submit(checker.start).result()

    def _restart_later(self, checker: Checker) -> None:
        def restart() -> None:
            try:
                checker.start()
            except WarmCrash:
                checker.close()  # the next check tries again, and reports why it cannot start
            finally:
                self._idle.put(checker)

        self._launcher.submit(restart)

    def warm_up(self) -> None:
        """Start every checker now, in parallel, instead of on first use."""
        checkers = [self._idle.get() for _ in self._checkers]
        starts = [self._launcher.submit(c.start) for c in checkers if not c.alive]
        wait(starts)
        for checker in checkers:
            self._idle.put(checker)
        for start in starts:
            start.result()  # raises WarmCrash if a checker cannot start

    def health(self, cpu_s: float = 30.0) -> list[Health]:
        """Check a known-good proof on every checker (starting those that are down)."""
        reports = []
        checkers = [self._idle.get() for _ in self._checkers]
        for checker in checkers:
            started = time.monotonic()
            try:
                if not checker.alive:
                    self._start(checker)
                checked = checker.check(HEALTH_JOB, cpu_s)
                errors = [m.render() for m in checked.messages if m.severity == "error"]
                problems = errors + ([checked.refused] if checked.refused else [])
                if checked.axioms is None and not problems:
                    problems.append("the health theorem was not declared")
                reports.append(Health(not problems, time.monotonic() - started, checker.starts, "\n".join(problems)))
            except (WarmTimeout, WarmCrash, ProtocolError) as exc:
                checker.close()
                reports.append(Health(False, time.monotonic() - started, checker.starts, str(exc)))
            self._idle.put(checker)
        return reports

    def close(self) -> None:
        # No waiting for a restart in progress: a gym worker process has 2 s to exit.
        self.closed = True
        self._launcher.shutdown(wait=False, cancel_futures=True)
        for checker in self._checkers:
            checker.close()


class ColdChecker:
    """A fresh checker process per check: what a warm pool saves, measured. On wasm it is the
    warm checker, started for one check and stopped (so a proof is judged the same way, and
    no proof runs as commands); natively, one `lean --json` process per check."""

    def __init__(
        self, backend: Backend, header: str = "", start_s: float = 60.0, sandbox: Sandbox | None = None
    ) -> None:
        self.backend = backend
        self.header = header
        self.start_s = start_s  # allowance for starting Lean and loading the imports
        self.sandbox = sandbox or Sandbox()

    def check(self, job: ProofJob, cpu_s: float) -> Checked:
        """Check one proof: `start_s` of wall time to start Lean, then `cpu_s` of CPU time."""
        launch = self.backend.cold()
        if launch is None:
            return self._check_once(job, cpu_s)
        return self._check_lean_json(launch, job, cpu_s)

    def _check_once(self, job: ProofJob, cpu_s: float) -> Checked:
        started = time.monotonic()
        checker = make_checker(self.backend, self.header, f"lean-{self.backend.name}-cold", self.sandbox)
        checker.start_timeout_s = self.start_s
        try:
            checker.start()
            try:
                checked = checker.check(job, cpu_s)
            except ProtocolViolation:
                raise
            except WarmCrash as exc:
                raise LeanCrashedOnProof(f"Lean crashed on this text: {exc}") from exc
        finally:
            checker.close()
        return replace(checked, seconds=time.monotonic() - started, cpu_s=checker.last_cpu_s)

    def _check_lean_json(self, launch: Launch, job: ProofJob, cpu_s: float) -> Checked:
        # One lean process loads the imports and checks: its CPU limit covers both (an rlimit),
        # and the wall time backs up the check's part WALL_PER_CPU times over.
        wall = self.start_s + cpu_s * WALL_PER_CPU
        limits = Limits(
            wall_s=wall, cpu_s=math.ceil(self.start_s + cpu_s), memory_mb=None, processes=512, open_files=4096,
            output_bytes=1 << 20,
        )  # fmt: skip
        text = f"{self.header}{job.text()}\n\n#print axioms {job.name}\n"
        with self.sandbox.workdir(prefix=f"heavygym-lean-cold-{self.backend.name}-") as workdir:
            for name, content in {**launch.files, COLD_FILE: text}.items():
                (workdir.path / name).write_text(content)
                (workdir.path / name).chmod(0o644)
            run = self.sandbox.run(launch.argv, workdir, limits=limits, env=launch.env)
        if run.killed in ("timeout", "cpu-limit"):
            raise WarmTimeout(f"lean did not finish within {limits.cpu_s} s of CPU time ({wall:.0f} s of wall time)")
        shift = self.header.count("\n")  # report positions in the job's text, as the warm checkers do
        messages = [m.shifted(shift) for m in json_lines(run.stdout)]
        if any(marker in run.output for marker in _OUT_OF_MEMORY):
            raise LeanCrashedOnProof("Lean ran out of memory on this text")
        if run.returncode not in (0, 1) or (run.returncode == 1 and not messages):
            raise WarmCrash(f"lean exited with code {run.returncode}: {run.output.strip()[-2000:]}")
        axioms, rest = axioms_from_messages(messages, job.name)
        return Checked(tuple(rest), None if axioms is None else tuple(axioms), True, run.wall_s, run.peak_rss_mb,
                       cpu_s=run.cpu_s)  # fmt: skip

    def close(self) -> None:
        """Nothing to release: every check ran in a process of its own."""
