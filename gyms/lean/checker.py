"""Check Lean text: a pool of warm checker processes, or one cold `lean` process per check.

Both return a `Checked`: Lean's messages and, where the checker can list them, the axioms the
theorem depends on. The warm pool restarts a checker that crashed or was killed for taking
too long (in the background, so the step that hit the limit returns at once), recycles a
checker after `backend.recycle_after` checks, and re-runs a check once on a fresh process
when the checker crashes under it, so that only a proof that crashes Lean twice is blamed
for it.
"""

from __future__ import annotations

import os
import queue
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

from gyms.lean.backends import COLD_FILE, Backend, Launch
from gyms.lean.protocol import Axiom, Message, ProtocolError, axioms_from_messages, json_lines
from gyms.lean.repl import ReplProcess
from gyms.sandbox import Limits, Sandbox
from gyms.warm import WarmCrash, WarmTimeout

# Time the axioms request of the wasm checker may take at least (it walks the proof term).
_AXIOMS_MIN_S = 5.0
_HEALTH_CODE = "example : 1 + 1 = 2 := rfl"
# What a crashed wasm Lean prints when its 2 GB heap runs out.
_OUT_OF_MEMORY = ("out of memory", "bad_alloc", "Out of memory")


class LeanCrashedOnProof(WarmCrash):
    """Lean crashed while checking this text, twice: the text is to blame, not the machine."""


@dataclass(frozen=True)
class Checked:
    messages: tuple[Message, ...]
    axioms: tuple[Axiom, ...] | None  # None: the checker could not list them
    axioms_required: bool  # whether `axioms is None` means the theorem was never declared
    seconds: float
    peak_rss_mb: float | None = None  # cold checks: the lean process's peak memory


@dataclass(frozen=True)
class Health:
    ok: bool
    seconds: float
    starts: int
    detail: str = ""


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
        self._idle: queue.Queue[ReplProcess] = queue.Queue()
        for checker in self._checkers:
            self._idle.put(checker)
        self._launcher = ThreadPoolExecutor(max_workers=size, thread_name_prefix="lean-checker-start")

    @property
    def starts(self) -> int:
        return sum(c.starts for c in self._checkers)

    @property
    def pids(self) -> list[int]:
        """The sandbox processes of the running checkers (for measuring their memory)."""
        return [c.pid for c in self._checkers if c.pid is not None]

    def _make(self, index: int) -> ReplProcess:
        launch: Launch = self.backend.warm()
        return ReplProcess(
            launch.argv, self.header, name=f"lean-{self.backend.name}-{index}", env=launch.env, files=launch.files,
            start_timeout_s=self.backend.start_timeout_s, sandbox=self.sandbox,
        )  # fmt: skip

    def check(self, code: str, theorem: str, timeout_s: float) -> Checked:
        """Elaborate `code` and list the axioms of `theorem` (raises WarmTimeout, WarmCrash,
        or ProtocolError when the checker refuses the request)."""
        checker = self._acquire()
        started = time.monotonic()
        try:
            checked = self._check_with_retry(checker, code, theorem, timeout_s)
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
        return Checked(checked.messages, checked.axioms, checked.axioms_required, time.monotonic() - started)

    def _check_with_retry(self, checker: ReplProcess, code: str, theorem: str, timeout_s: float) -> Checked:
        try:
            return self._check_on(checker, code, theorem, timeout_s)
        except WarmCrash:
            self._start(checker)  # a fresh process: was it the machine, or the proof?
        try:
            return self._check_on(checker, code, theorem, timeout_s)
        except WarmCrash as exc:
            raise LeanCrashedOnProof(f"Lean crashed twice on this text: {exc}") from exc

    def _acquire(self) -> ReplProcess:
        checker = self._idle.get()
        if not checker.alive:
            try:
                self._start(checker)
            except WarmCrash:
                self._idle.put(checker)  # dead, but the next caller may try again
                raise
        return checker

    def _check_on(self, checker: ReplProcess, code: str, theorem: str, timeout_s: float) -> Checked:
        deadline = time.monotonic() + timeout_s
        if not self.backend.axioms_by_request:
            reply = checker.command(f"{code}\n\n#print axioms {theorem}\n", timeout_s)
            printed, messages = axioms_from_messages(reply.messages, theorem)
            return Checked(tuple(messages), None if printed is None else tuple(printed), True, 0.0)
        reply = checker.command(code, timeout_s)
        answer = checker.request({"axioms": theorem, "env": reply.env}, max(deadline - time.monotonic(), _AXIOMS_MIN_S))
        listed = answer.get("axioms")  # absent when the theorem was never declared
        axioms = (
            None if not isinstance(listed, list) else tuple(Axiom(str(a["name"]), bool(a["imported"])) for a in listed)
        )
        return Checked(reply.messages, axioms, True, 0.0)

    def _start(self, checker: ReplProcess) -> None:
        self._launcher.submit(checker.start).result()

    def _restart_later(self, checker: ReplProcess) -> None:
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

    def health(self, timeout_s: float = 30.0) -> list[Health]:
        """Check a known-good line on every checker (starting those that are down)."""
        reports = []
        checkers = [self._idle.get() for _ in self._checkers]
        for checker in checkers:
            started = time.monotonic()
            try:
                if not checker.alive:
                    self._start(checker)
                reply = checker.command(_HEALTH_CODE, timeout_s)
                errors = [m.render() for m in reply.messages if m.severity == "error"]
                reports.append(Health(not errors, time.monotonic() - started, checker.starts, "\n".join(errors)))
            except (WarmTimeout, WarmCrash, ProtocolError) as exc:
                checker.close()
                reports.append(Health(False, time.monotonic() - started, checker.starts, str(exc)))
            self._idle.put(checker)
        return reports

    def close(self) -> None:
        # No waiting for a restart in progress: a gym worker process has 2 s to exit.
        self._launcher.shutdown(wait=False, cancel_futures=True)
        for checker in self._checkers:
            checker.close()


class ColdChecker:
    """One fresh `lean --json` process per check: what a warm pool saves, measured."""

    def __init__(
        self, backend: Backend, header: str = "", start_s: float = 60.0, sandbox: Sandbox | None = None
    ) -> None:
        self.backend = backend
        self.header = header
        self.start_s = start_s  # allowance for starting Lean and loading the imports
        self.sandbox = sandbox or Sandbox()

    def check(self, code: str, theorem: str, timeout_s: float) -> Checked:
        launch = self.backend.cold()
        wall = timeout_s + self.start_s
        limits = Limits(
            wall_s=wall, cpu_s=int(4 * wall) + 60, memory_mb=None, processes=512, open_files=4096,
            output_bytes=1 << 20,
        )  # fmt: skip
        # Where the checker can list axioms natively, ask for them as the REPL backend does.
        axioms_by_command = not self.backend.axioms_by_request
        text = self.header + code + (f"\n\n#print axioms {theorem}\n" if axioms_by_command else "\n")
        with self.sandbox.workdir(prefix=f"heavygym-lean-cold-{self.backend.name}-") as workdir:
            for name, content in {**launch.files, COLD_FILE: text}.items():
                (workdir.path / name).write_text(content)
                (workdir.path / name).chmod(0o644)
            run = self.sandbox.run(launch.argv, workdir, limits=limits, env=launch.env)
        if run.killed == "timeout":
            raise WarmTimeout(f"lean did not finish within {wall:.0f} s; it was killed")
        shift = self.header.count("\n")  # report positions in `code`, as the warm checker does
        messages = [m.shifted(shift) for m in json_lines(run.stdout)]
        if any(marker in run.output for marker in _OUT_OF_MEMORY):
            raise LeanCrashedOnProof("Lean ran out of memory on this text")
        if run.returncode not in (0, 1) or (run.returncode == 1 and not messages):
            raise WarmCrash(f"lean exited with code {run.returncode}: {run.output.strip()[-2000:]}")
        if not axioms_by_command:
            return Checked(tuple(messages), None, False, run.wall_s, run.peak_rss_mb)
        axioms, rest = axioms_from_messages(messages, theorem)
        return Checked(tuple(rest), None if axioms is None else tuple(axioms), True, run.wall_s, run.peak_rss_mb)

    def close(self) -> None:
        """Nothing to release: every check ran in a process of its own."""
