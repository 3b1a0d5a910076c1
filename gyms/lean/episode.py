"""One Lean episode: extract the proof, screen it, check it, judge it, explain the verdict.

The episode holds only its task, turn count and `Settings`, so it pickles to gym workers;
the checkers live in the worker process (one client per process, settings and imports),
started on first use and reused by every episode there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gyms.base import Episode, Outcome, Task, Verdict
from gyms.lean.acceptance import judge, screen
from gyms.lean.backends import Backend, BackendUnavailable, NativeBackend, WasmBackend
from gyms.lean.checker import CheckerPool, ColdChecker, LeanCrashedOnProof
from gyms.lean.extract import Refusal, extract_proof
from gyms.lean.protocol import Message, ProofJob, ProtocolError, ProtocolViolation
from gyms.resources import per_process
from gyms.sandbox import SandboxError
from gyms.warm import WarmCrash, WarmTimeout

RETRY = " You may try again."
# Lean's messages can be long (goal states); the model gets this much of each, and this many.
_MESSAGE_CHARS = 1500
_MESSAGES = 8


@dataclass(frozen=True)
class Settings:
    backend: str = "wasm"  # "wasm" or "native"
    checker: str = "warm"  # "warm" (pool of checkers) or "cold" (a lean process per check)
    checkers: int = 1  # warm checkers per worker process
    check_timeout_s: float = 20.0  # CPU time per check; wall time WALL_PER_CPU times as long backs it up
    cold_start_s: float = 60.0
    wasm_dir: str | None = None
    node: str = "node"
    repl: str | None = None
    project: str | None = None
    lean: str | None = None

    def make_backend(self) -> Backend:
        if self.backend == "wasm":
            return WasmBackend(self.wasm_dir, self.node)
        return NativeBackend(self.repl, self.project, self.lean)


def client(settings: Settings, imports: str) -> CheckerPool | ColdChecker:
    """This process's checkers for these settings and imports (`gyms.resources.per_process`)."""

    def make() -> CheckerPool | ColdChecker:
        backend = settings.make_backend()
        if settings.checker == "cold":
            return ColdChecker(backend, imports, settings.cold_start_s)
        return CheckerPool(backend, imports, settings.checkers)

    return per_process(("lean", settings, imports), make)


def split_header(header: str) -> tuple[str, str]:
    """(imports, the rest): the imports start a checker session, the rest precedes each check."""
    lines = header.splitlines(keepends=True)
    cut = 0
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("import "):
            cut = i + 1
        elif stripped and not stripped.startswith("--"):
            break
    return "".join(lines[:cut]), "".join(lines[cut:])


class LeanEpisode(Episode):
    def __init__(self, task: Task, max_turns: int, settings: Settings) -> None:
        super().__init__(task, max_turns)
        self.settings = settings

    def evaluate(self, action: str) -> Verdict:
        retry = RETRY if self.turn < self.max_turns else ""
        meta = self.task.metadata
        found = extract_proof(action, meta["statement"], meta["name"])
        if isinstance(found, Refusal):
            return Verdict(0.0, Outcome.FAIL, found.reason + retry, {"stage": "extract"})
        problems = screen(found.text)
        if problems:
            return Verdict(0.0, Outcome.FAIL, _explain(problems, []) + retry, {"stage": "screen", "problems": problems})
        imports, rest = split_header(meta.get("header", ""))
        job = ProofJob(rest, meta["statement"], meta["name"], found.text)
        shift = job.prefix.count("\n")  # the checker counts lines from the start of `job.prefix`
        info: dict[str, Any] = {"backend": self.settings.backend, "checker": self.settings.checker}
        try:
            checked = client(self.settings, imports).check(job, self.settings.check_timeout_s)
        except ProtocolViolation as exc:
            # Only code run by the checked text can write to the reply channel.
            feedback = "The proof made the checker answer out of protocol; it was stopped."
            return Verdict(0.0, Outcome.FAIL, feedback + retry, {**info, "stage": "check", "violation": str(exc)})
        except WarmTimeout:
            feedback = (
                f"Lean did not finish checking the proof within {self.settings.check_timeout_s:g} s of CPU time; "
                "it was stopped."
            )
            return Verdict(0.0, Outcome.FAIL, feedback + retry, {**info, "stage": "check", "timed_out": True})
        except LeanCrashedOnProof as exc:
            feedback = "Lean crashed while checking this proof (it likely ran out of memory)."
            return Verdict(0.0, Outcome.FAIL, feedback + retry, {**info, "stage": "check", "crash": str(exc)[:2000]})
        except (WarmCrash, ProtocolError, BackendUnavailable, SandboxError) as exc:
            return Verdict(0.0, Outcome.ERROR, "internal error: the Lean checker failed", {**info, "error": str(exc)})
        info.update(check_s=checked.seconds, check_cpu_s=checked.cpu_s, messages=len(checked.messages))
        judgement = judge(checked.messages, checked.axioms, checked.axioms_required, checked.refused)
        if judgement.accepted:
            return Verdict(1.0, Outcome.PASS, "Proof accepted.", {**info, "stage": "accepted"})
        problems = list(judgement.problems)
        if checked.refused_at is not None and checked.refused_at[0] > shift:
            line, column = checked.refused_at
            problems[-1] += f" (line {line - shift}, column {column} of the proof)"
        feedback = _explain(problems, [m.shifted(shift) for m in judgement.errors])
        return Verdict(
            0.0, Outcome.FAIL, feedback + retry, {**info, "stage": "judge", "problems": list(judgement.problems)}
        )


def _explain(problems: list[str], errors: list[Message]) -> str:
    """Feedback for the model; positions count lines of its proof (line 1 is the first)."""
    text = "The proof was not accepted: " + "; ".join(problems) + "."
    shown = []
    for m in errors[:_MESSAGES]:
        where = f"line {m.line}, column {m.column}" if m.line >= 1 else "at the theorem's statement"
        data = m.data.strip()
        if len(data) > _MESSAGE_CHARS:
            data = data[:_MESSAGE_CHARS] + " [...]"
        shown.append(f"{where}: {m.severity}: {data}")
    if shown:
        text += "\nLean says (lines of your proof):\n" + "\n".join(shown)
    if len(errors) > _MESSAGES:
        text += f"\n[{len(errors) - _MESSAGES} more messages]"
    return text
