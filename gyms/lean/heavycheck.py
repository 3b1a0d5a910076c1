"""The client of the wasm checker (`programs/HeavyCheck.lean`): one sandboxed process whose
session loaded the task header's imports, checking `ProofJob`s.

Replies are authenticated: each request carries a fresh random id, and the client accepts
exactly one reply, a JSON line with that id. A reply with another id, an unreadable line, or
any output after the reply is a `ProtocolViolation`: the process is stopped and the check
fails. Output found *before* a request (which no request of ours asked for) ends the process
instead, and the pool re-runs the check on a fresh one, so it never lands on a later
episode. The reply channel itself is a device only the checker can open (see
`tools/lean_wasm/glue.py`), so none of this should ever trigger; it is the second line of defence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from gyms.lean.protocol import (
    Axiom, Checked, Message, ProofJob, ProtocolError, ProtocolViolation, message, new_id,
)  # fmt: skip
from gyms.sandbox import Limits, Sandbox
from gyms.warm import WALL_PER_CPU, WARM_CPU_S, SandboxedPipe, WarmCrash, WarmTimeout

# node runs a dozen threads (V8, libuv, emscripten's pthread pool) and each counts as a process.
THREADS = 512
# Lean opens its .olean files one by one, and node keeps a few descriptors of its own.
OPEN_FILES = 4096
# A reply is one JSON line; a goal state can be long, but not this long.
_MAX_REPLY_BYTES = 8 << 20


class LeanPipe(SandboxedPipe):
    """A long-lived Lean checker process (either protocol) under the limits Lean needs."""

    def __init__(
        self,
        argv: Sequence[str],
        header: str,
        *,
        name: str = "lean",
        env: Mapping[str, str] | None = None,
        files: Mapping[str, str] | None = None,
        start_timeout_s: float = 180.0,
        sandbox: Sandbox | None = None,
    ) -> None:
        # No address-space limit: V8 reserves far more address space than it uses.
        limits = Limits(cpu_s=WARM_CPU_S, memory_mb=None, wall_s=float("inf"), processes=THREADS, open_files=OPEN_FILES)
        super().__init__(argv, name, limits, env=env, files=files, sandbox=sandbox)
        self.header = header
        self.start_timeout_s = start_timeout_s
        self.checks = 0  # checks answered by the current process


class HeavyCheckProcess(LeanPipe):
    def __init__(self, argv: Sequence[str], header: str, **options: Any) -> None:
        super().__init__(argv, header, **options)
        self._ready = False

    @property
    def alive(self) -> bool:
        return self.running and self._ready

    def start(self) -> None:
        """Start a fresh process and load the header's imports (raises WarmCrash)."""
        self._launch()
        self.checks, self._ready = 0, False
        try:
            reply = self._ask({"header": self.header}, self.start_timeout_s)
        except WarmTimeout as exc:
            raise WarmCrash(f"{self.name} checker did not load its header within {self.start_timeout_s:.0f} s") from exc
        except ProtocolViolation as exc:  # nothing untrusted has run yet: a fault of ours
            raise WarmCrash(str(exc)) from exc
        errors = [m.render() for m in _messages(reply, self) if m.severity == "error"]
        if "message" in reply or errors:
            self._crashed("the session header does not load:\n" + "\n".join(errors or [str(reply.get("message"))]))
        self._ready = True

    def check(self, job: ProofJob, cpu_s: float) -> Checked:
        """Check one proof within `cpu_s` of CPU time (WALL_PER_CPU times as long in wall time)."""
        if not self.alive:
            self._crashed("the process is not running")
        payload = {"before": job.before, "statement": job.statement, "name": job.name, "proof": job.proof}
        reply = self._ask({"check": payload}, cpu_s * WALL_PER_CPU, cpu_s)
        self.checks += 1
        if "message" in reply:
            raise ProtocolError(f"the checker refused the request: {reply['message']}")
        if "failed" in reply:
            failure = Message("error", 0, 0, f"Lean stopped with an error: {str(reply['failed'])[:2000]}")
            return Checked((failure,), None, True, 0.0)
        if "refused" in reply:
            pos = reply.get("pos")
            at = (int(pos["line"]), int(pos["column"])) if isinstance(pos, dict) else None
            return Checked((), None, True, 0.0, refused=str(reply["refused"]), refused_at=at)
        listed = reply.get("axioms")
        if listed is not None and not isinstance(listed, list):
            self._violation("a reply whose axioms are not a list")
        try:
            axioms = None if listed is None else tuple(Axiom(str(a["name"]), bool(a["imported"])) for a in listed)
        except (TypeError, KeyError) as exc:
            self._violation(f"a malformed axiom in the reply ({exc})")
        return Checked(_messages(reply, self), axioms, True, 0.0)

    def _ask(self, payload: Mapping[str, Any], timeout_s: float, cpu_s: float | None = None) -> dict[str, Any]:
        if self._proc is None:
            raise WarmCrash(f"{self.name} checker is not running")
        if self._read_available():
            # Output no request asked for: never let it answer this one. A fresh process
            # takes the check (the pool restarts a crashed checker and re-runs the check).
            self._crashed("it wrote output between requests")
        request_id = new_id()
        reply = self._exchange(json.dumps({"id": request_id, **payload}).encode() + b"\n\n", timeout_s, cpu_s)
        if reply.get("id") != request_id:
            self._violation(f"a reply with another id ({str(reply.get('id'))[:40]!r})")
        if self._read_available():
            self._violation("more output after the reply")
        return reply

    def _take_reply(self) -> dict[str, Any] | None:
        if b"\n" not in self._buffer:
            if len(self._buffer) > _MAX_REPLY_BYTES:
                self._violation(f"a reply longer than {_MAX_REPLY_BYTES} bytes")
            return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except ValueError:
            self._violation(f"an unreadable reply {line[:100]!r}")
        if not isinstance(reply, dict):
            self._violation(f"a reply that is not a JSON object: {line[:100]!r}")
        return reply

    def _violation(self, what: str) -> NoReturn:
        self.close()
        raise ProtocolViolation(f"{self.name} checker sent {what}; it was stopped")

    def close(self) -> None:
        self._ready = False
        super().close()


def _messages(reply: Mapping[str, Any], process: HeavyCheckProcess) -> tuple[Message, ...]:
    listed = reply.get("messages") or []
    try:
        return tuple(message(m) for m in listed)
    except (TypeError, ValueError, AttributeError) as exc:
        process._violation(f"a malformed message in the reply ({exc})")
