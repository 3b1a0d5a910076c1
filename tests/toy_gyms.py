"""Small gyms written for the tests: each action names a behaviour of the episode."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from gyms import Candidate, Episode, Gym, InfrastructureError, Outcome, Task, Verdict, hostfs
from gyms.sandbox import _OWNER_NAME, Limits, Sandbox, Workdir, shm_root, uids_of

_kept: list = []  # sandboxed processes this worker started and keeps running
_warm: dict[str, tuple[Workdir, object]] = {}  # tag -> this worker's warm checker: its directory, its process


class ToyEpisode(Episode):
    """`pass`, `fail`, `sleep:SECONDS`, `crash` (the process dies), `raise` (a gym bug: the checker
    raises on the answer), `infra` (an infrastructure fault: `InfrastructureError`), `unpicklable`
    (a result that cannot travel back from the worker), `orphan:SECONDS` (starts a sandboxed
    `sleep SECONDS`, then the process dies). `closed_in`: the process that closed it."""

    closed_in: int | None = None

    def close(self) -> None:
        self.closed_in = os.getpid()

    def evaluate(self, action: str) -> Verdict:
        if action == "pass":
            return Verdict(1.0, Outcome.PASS, "well done", {"pid": os.getpid()})
        if action.startswith("sleep:"):
            time.sleep(float(action.split(":")[1]))
            return Verdict(0.0, Outcome.FAIL, "slept", {"pid": os.getpid()})
        if action == "crash":
            os._exit(7)
        if action == "raise":
            raise RuntimeError("a bug in the gym")
        if action == "infra":
            raise InfrastructureError("the checker's tool is missing")
        if action == "unpicklable":
            return Verdict(0.0, Outcome.FAIL, "a result that cannot be sent", {"callback": lambda: None})
        if action.startswith("orphan:"):  # start a sandboxed process, then die without cleaning up
            _kept.append(Sandbox().popen(["sleep", action.split(":")[1]], Sandbox().workdir()))
            os._exit(7)
        return Verdict(0.0, Outcome.FAIL, f"{action!r} is wrong", {"pid": os.getpid()})


class FilesEpisode(ToyEpisode):
    """Works as real gyms do: each turn writes into the episode's own work directory (made on
    the first step, in the worker) and the worker keeps a warm sandboxed checker running in a
    directory of its own. `crash` and `sleep:SECONDS` first start a sandboxed process in the
    episode's directory, so the worker dies or hangs with it running. Every name, directory and
    process carries `tag`, so a test finds exactly its own leftovers. `backend`: the sandbox's
    (docker: the image named by `HEAVYGYM_SANDBOX_IMAGE`, which must hold coreutils' `sleep`)."""

    def __init__(self, task: Task, max_turns: int, tag: str, backend: str = "bwrap") -> None:
        super().__init__(task, max_turns)
        self.tag = tag  # digits: `sleep 3600.TAG` is a valid command that names this test
        self.backend = backend
        self.workdir: Workdir | None = None

    def evaluate(self, action: str) -> Verdict:
        sandbox = Sandbox(self.backend)
        if self.workdir is None:
            self.workdir = sandbox.workdir(prefix=f"heavygym-toy-{self.tag}-")
        if self.tag not in _warm:
            warm = sandbox.workdir(prefix=f"heavygym-toy-{self.tag}-warm-")
            _warm[self.tag] = (warm, sandbox.popen(["sleep", f"3600.{self.tag}"], warm))
        lost = [t for t in range(1, self.turn) if not (self.workdir.path / f"turn-{t}").is_file()]
        if lost:
            return Verdict(0.0, Outcome.FAIL, f"the files of turns {lost} are gone", {"pid": os.getpid()})
        hostfs.write_file(self.workdir.path, f"turn-{self.turn}", action)
        if action == "crash" or action.startswith("sleep:"):
            _kept.append(sandbox.popen(["sleep", f"3600.{self.tag}"], self.workdir))
        verdict = super().evaluate(action)
        info = {**verdict.info, "workdir": str(self.workdir.path)}
        return Verdict(verdict.reward, verdict.outcome, verdict.feedback, info)

    def close(self) -> None:
        if self.workdir is not None:
            self.workdir.cleanup()
            self.workdir = None


class ToyGym(Gym):
    name = "toy"
    version = "1"
    step_timeout_s = 1.0

    def __init__(self, max_turns: int | str = 3, tasks: int | str = 3) -> None:
        self.max_turns = int(max_turns)
        self.n_tasks = int(tasks)

    def tasks(self, split: str = "train") -> list[Task]:
        return [Task(f"toy/{i}", "say pass", reference="pass") for i in range(self.n_tasks)]

    def open(self, task: Task) -> Episode:
        return ToyEpisode(task, self.max_turns)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [*super().candidates(task, rng), Candidate("nope", "fail", "wrong")]


class ToolFeedbackGym(ToyGym):
    """The toy gym, whose feedback is a tool's output (`Gym.feedback_role`)."""

    name = "toy-tool"
    feedback_role = "tool"


GATE_S = 60.0  # a bound for a broken build only: a gate opens as soon as its test's event happens


class GateEpisode(ToyEpisode):
    """`gate` waits (in the gym worker) until the file `gate` exists, then ends as `opened`."""

    def __init__(self, task: Task, max_turns: int, gate: str, opened: Outcome) -> None:
        super().__init__(task, max_turns)
        self.gate = Path(gate)
        self.opened = opened

    def evaluate(self, action: str) -> Verdict:
        if action != "gate":
            return super().evaluate(action)
        deadline = time.monotonic() + GATE_S
        while not self.gate.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return Verdict(float(self.opened is Outcome.PASS), self.opened, "opened")


class GateGym(ToyGym):
    """Episodes whose `gate` answers wait for the test to create the file `gate`."""

    def __init__(self, gate: Path, opened: Outcome = Outcome.FAIL, max_turns: int = 3, tasks: int = 2) -> None:
        super().__init__(max_turns=max_turns, tasks=tasks)
        self.gate = str(gate)
        self.opened = opened

    def open(self, task: Task) -> Episode:
        return GateEpisode(task, self.max_turns, self.gate, self.opened)


class RaisingGym(ToyGym):
    """Its known-bad answer makes the gym raise: a fail, recorded as a gym exception."""

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [Candidate("pass", "pass", "reference"), Candidate("raise", "fail", "gym-bug")]


class LyingGym(ToyGym):
    """Breaks every promise the conformance check tests."""

    name = "lying"

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [
            Candidate("nope", "pass", "reference"),  # the "reference" fails
            Candidate("pass", "fail", "bad-but-passes"),
            Candidate("sleep:60", "timeout", "hang"),  # beyond the host timeout: an error
            Candidate("raise", "fail", "gym-bug"),
        ]


class StagedEpisode(Episode):
    """Checks an answer in stages, as real gyms do, and says in `info["stage"]` where it ended:
    `refused` is stopped by a screen, `broken` at `compile`; everything else gets to `run`, where
    `loop` runs a sandboxed process that never ends until the time limit stops it (`unmarked`
    too, but the episode forgets to set `info["timed_out"]`), and `pass` passes."""

    def __init__(self, task: Task, max_turns: int, limit_s: float) -> None:
        super().__init__(task, max_turns)
        self.limit_s = limit_s

    def evaluate(self, action: str) -> Verdict:
        if action == "refused":
            return Verdict(0.0, Outcome.FAIL, "the screen refused the answer", {"stage": "screen"})
        if action == "broken":
            return Verdict(0.0, Outcome.FAIL, "the answer does not compile", {"stage": "compile"})
        if action == "pass":
            return Verdict(1.0, Outcome.PASS, "well done", {"stage": "run"})
        if action not in ("loop", "unmarked"):
            return Verdict(0.0, Outcome.FAIL, "the answer ran and is wrong", {"stage": "run"})
        sandbox = Sandbox()
        with sandbox.workdir() as workdir:
            ran = sandbox.run(["sleep", "600"], workdir, limits=Limits(wall_s=self.limit_s))
        timed_out = ran.killed == "timeout"
        feedback = f"stopped by the {self.limit_s:g} s limit" if timed_out else "the run ended"
        info = {"stage": "run"} if action == "unmarked" else {"stage": "run", "timed_out": timed_out}
        return Verdict(0.0, Outcome.FAIL, feedback, info)


class StagedGym(ToyGym):
    """One task per candidate given (`expect:stage:action`, `;`-separated) and a time limit of
    `limit_s`; its short-limit variant for the conformance check's hangs uses `short_limit_s`."""

    name = "staged"

    def __init__(self, candidates: str, limit_s: float | str = 2.0, short_limit_s: float | str = 0.2) -> None:
        super().__init__(tasks=1)
        self.planned = [Candidate(action, expect, f"{expect}:{action}", stage=stage or None)  # type: ignore[arg-type]
                        for expect, stage, action in (c.split(":") for c in candidates.split(";"))]  # fmt: skip
        self.limit_s = float(limit_s)
        self.short_limit_s = float(short_limit_s)
        self.step_timeout_s = self.limit_s + 2.0

    def open(self, task: Task) -> Episode:
        return StagedEpisode(task, self.max_turns, self.limit_s)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [*super().candidates(task, rng), *self.planned]

    def with_short_time_limits(self) -> StagedGym:
        short = StagedGym("pass::pass", self.short_limit_s, self.short_limit_s)
        short.planned = self.planned
        return short


class FilesGym(ToyGym):
    """ToyGym whose episodes keep files and sandboxed processes, tagged `tag` (see FilesEpisode)."""

    name = "files-toy"

    def __init__(self, tag: str, max_turns: int | str = 3, backend: str = "bwrap") -> None:
        super().__init__(max_turns)
        self.tag = tag
        self.backend = backend

    def open(self, task: Task) -> Episode:
        return FilesEpisode(task, self.max_turns, self.tag, self.backend)

    def directories_left(self, worker_pids: set[int]) -> list[str]:
        """Entries under /dev/shm that this gym's episodes, or the given workers, made."""
        found = []
        for name in os.listdir(shm_root()):
            owner = _OWNER_NAME.search(name)
            if f"-{self.tag}-" in name or (owner is not None and int(owner[1]) in worker_pids):
                found.append(name)
        return found

    def processes_left(self, worker_pids: set[int]) -> list[int]:
        """Live processes that run as a sandbox uid of the given workers, or run this gym's
        sandboxed command."""
        uids = [uids_of(pid) for pid in worker_pids]
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                status = Path(entry.path, "status").read_text()
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue  # exited while we looked
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            if fields["State"].startswith("Z"):
                continue
            uid = int(fields["Uid"].split()[0])
            if any(uid in r for r in uids) or f"3600.{self.tag}".encode() in cmdline:
                found.append(int(entry.name))
        return found


_held: set[str] = set()  # keys of the StickyEpisodes this worker process holds open


class StickyEpisode(ToyEpisode):
    """Keeps state in its worker's process between turns, as a connection would
    (`stays_on_worker`): the first step opens it there; later steps fail as `error` unless they
    run where it is. `held` reports what the worker holds; closing removes it there."""

    stays_on_worker = True

    def __init__(self, task: Task, max_turns: int) -> None:
        super().__init__(task, max_turns)
        self.key = f"{os.getpid()}-{random.randrange(10**12)}"

    def evaluate(self, action: str) -> Verdict:
        if self.turn == 1:
            _held.add(self.key)
        elif self.key not in _held:
            return Verdict(0.0, Outcome.ERROR, "its state is not in this worker", {"pid": os.getpid()})
        if action == "held":
            return Verdict(0.0, Outcome.FAIL, "held", {"pid": os.getpid(), "held": sorted(_held)})
        verdict = super().evaluate(action)
        if verdict.outcome is not Outcome.FAIL or self.turn >= self.max_turns:
            _held.discard(self.key)
        return verdict

    def close(self) -> None:
        _held.discard(self.key)


class StickyGym(ToyGym):
    name = "sticky"

    def open(self, task: Task) -> Episode:
        return StickyEpisode(task, self.max_turns)


class AttackedGym(ToyGym):
    """A gym that declares an attack suite, as a third-party gym would: `holes` of its attacks
    are answers the toy checker passes ("pass"), one raises ("raise") and one is an
    infrastructure fault ("infra") when `flawed`; the rest are plain wrong answers."""

    name = "attacked"

    def __init__(self, holes: int | str = 0, flawed: bool | str = False) -> None:
        super().__init__(max_turns=1)
        self.holes, self.flawed = int(holes), str(flawed).lower() in ("1", "true", "yes")

    def attack_suites(self) -> list[Any]:
        from gyms.attacks import Attack, AttackSuite

        attacks = [Attack(f"wrong {i}", f"guess {i}") for i in range(3)]
        attacks += [Attack(f"hole {i}", "pass") for i in range(self.holes)]
        if self.flawed:
            attacks += [Attack("crashes the checker", "raise"), Attack("breaks the tool", "infra")]
        return [AttackSuite("toy hacks", self.tasks()[0], tuple(attacks), "pass", "nope")]
