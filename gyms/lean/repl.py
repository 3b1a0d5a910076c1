"""One sandboxed checker process that speaks the REPL protocol (`gyms.lean.protocol`): the
native backend's `repl` binary.

The REPL elaborates whole commands and pairs replies with requests by order; it cannot parse
the proof alone, so with this backend the gym's text screen (`gyms.lean.acceptance.screen`)
is what keeps commands out of a proof. See docs/gyms/lean.md.

A `gyms.warm.SandboxedPipe` with the REPL's framing: an answer is a JSON object that may span
lines, ended by a blank line, and there is no `{"ready": true}` greeting: starting a checker
means sending it the session's header and waiting for the environment that comes back. A
request that gets no answer in time kills the process (`WarmTimeout`); a dead or garbled one
raises `WarmCrash`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gyms.lean.heavycheck import LeanPipe
from gyms.lean.protocol import Checked, ProofJob, ProtocolError, Reply, axioms_from_messages, decode, encode
from gyms.warm import WALL_PER_CPU, WarmCrash, WarmTimeout


class ReplProcess(LeanPipe):
    """A checker process with its session header loaded."""

    def __init__(self, argv: Sequence[str], header: str, **options: Any) -> None:
        super().__init__(argv, header, **options)
        self.base_env: int | None = None  # the environment of the session header

    @property
    def alive(self) -> bool:
        return self.running and self.base_env is not None

    def start(self) -> None:
        """Start a fresh process and load the session header (raises WarmCrash)."""
        self._launch()
        self.checks = 0
        try:
            reply = decode(self._exchange(encode({"cmd": self.header}), self.start_timeout_s))
        except WarmTimeout as exc:
            raise WarmCrash(f"{self.name} checker did not load its header within {self.start_timeout_s:.0f} s") from exc
        except ProtocolError as exc:
            self._crashed(f"loading the header failed: {exc}")
        errors = [m.render() for m in reply.messages if m.severity == "error"]
        if errors or reply.env is None:
            self._crashed("the session header does not elaborate:\n" + "\n".join(errors))
        self.base_env = reply.env

    def command(self, text: str, cpu_s: float) -> Reply:
        """Elaborate `text` in the header's environment within `cpu_s` of CPU time (raises
        ProtocolError if refused)."""
        if not self.alive:
            self._crashed("the process is not running")
        return decode(self.request({"cmd": text, "env": self.base_env}, cpu_s))

    def check(self, job: ProofJob, cpu_s: float) -> Checked:
        """Elaborate the theorem and ask `#print axioms` for what it depends on."""
        reply = self.command(f"{job.text()}\n\n#print axioms {job.name}\n", cpu_s)
        printed, messages = axioms_from_messages(reply.messages, job.name)
        return Checked(tuple(messages), None if printed is None else tuple(printed), True, 0.0)

    def request(self, payload: Mapping[str, Any], cpu_s: float) -> dict[str, Any]:
        """One raw request to the running process, within `cpu_s` of CPU time (WALL_PER_CPU times
        as long in wall time)."""
        if self._proc is None:
            raise WarmCrash(f"{self.name} checker is not running")
        answer = self._exchange(encode(payload), cpu_s * WALL_PER_CPU, cpu_s)
        self.checks += 1
        return answer

    def close(self) -> None:
        self.base_env = None
        super().close()

    def _take_reply(self) -> dict[str, Any] | None:
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            answer = _json_in(block)
            if answer is not None:
                return answer
        return None


def _json_in(block: bytes) -> dict[str, Any] | None:
    """The JSON object in one blank-line-delimited block, skipping lines of other output
    before it (some REPL builds print progress lines to stdout)."""
    lines = block.decode(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("{"):
            try:
                found = json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
            if isinstance(found, dict):
                return found
    return None
