"""The checker protocols, as JSON.

* `heavycheck` (the wasm checker, `programs/HeavyCheck.lean`): a `ProofJob` goes to the checker
  as data; the checker parses the proof with Lean's parser and refuses anything but one term
  before it elaborates the theorem. Every request carries a fresh random id, and exactly one
  reply with that id must come back: anything else is a `ProtocolViolation`.
* `repl` (the native backend): the command mode of the Lean community REPL, below.

A REPL request is a JSON object followed by a blank line: `{"cmd": "<Lean text>"}` starts a session
(the text's header imports), `{"cmd": "...", "env": N}` elaborates more text in environment
N. The answer is a JSON object (possibly spread over lines) followed by a blank line:
`{"env": M, "messages": [{"severity", "pos": {"line", "column"}, "endPos", "data"}]}`, or
`{"message": "..."}` when the request could not be served. Lines are 1-based, columns 0-based
(as Lean prints them). `lean --json FILE` prints the same message objects, one per line.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gyms.warm import WarmCrash

_SEVERITIES = {"error": "error", "warning": "warning", "info": "info", "information": "info", "trace": "info"}
# The output of `#print axioms NAME` (Lean 4).
_DEPENDS = re.compile(r"^'(?P<name>[^']+)' depends on axioms: \[(?P<axioms>.*)\]\s*$", re.DOTALL)
_NO_AXIOMS = re.compile(r"^'(?P<name>[^']+)' does not depend on any axioms\s*$")


class ProtocolError(RuntimeError):
    """The checker refused the request (it could not serve it)."""


class ProtocolViolation(WarmCrash):
    """The reply channel carried something other than the one reply to the request: a wrong
    or missing id, a second reply, unreadable bytes. Only the checked text can have caused
    it, so the check fails and the checker process is replaced."""


@dataclass(frozen=True)
class ProofJob:
    """One check: `before` (the task's `open`s and options) and `statement` are the gym's;
    `proof` is the model's, and is checked as the body of `<statement> :=`."""

    before: str
    statement: str
    name: str
    proof: str

    @property
    def prefix(self) -> str:
        """The text the checker puts before the proof; positions count lines from its start."""
        return f"{self.before}{self.statement} :=\n"

    def text(self) -> str:
        return self.prefix + self.proof


def new_id() -> str:
    """A request id that nothing inside the checker can guess."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class Message:
    severity: str  # "error", "warning" or "info"
    line: int
    column: int
    data: str
    end_line: int | None = None
    end_column: int | None = None

    def shifted(self, lines: int) -> Message:
        """The message with its lines moved up by `lines` (text was prepended to the user's)."""
        end = None if self.end_line is None else self.end_line - lines
        return Message(self.severity, self.line - lines, self.column, self.data, end, self.end_column)

    def render(self) -> str:
        return f"{self.line}:{self.column}: {self.severity}: {self.data.strip()}"


@dataclass(frozen=True)
class Axiom:
    name: str
    imported: bool | None = None  # None: the checker does not say (`#print axioms`)


@dataclass(frozen=True)
class Checked:
    """What a checker reports about one proof (both backends, warm and cold)."""

    messages: tuple[Message, ...]
    axioms: tuple[Axiom, ...] | None  # None: the checker could not list them
    axioms_required: bool  # whether `axioms is None` means the theorem was never declared
    seconds: float
    peak_rss_mb: float | None = None  # cold checks: the lean process's peak memory
    refused: str | None = None  # the checker refused the proof's syntax before elaborating it: why
    refused_at: tuple[int, int] | None = None  # (line, column) of what it refused, in the checked text
    cpu_s: float | None = None  # CPU time the checker's processes spent on the check


@dataclass(frozen=True)
class Reply:
    env: int | None
    messages: tuple[Message, ...]


def encode(payload: Mapping[str, Any]) -> bytes:
    """One request: compact JSON (no blank line inside) and the blank line that ends it."""
    return json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def decode(obj: Mapping[str, Any]) -> Reply:
    if "message" in obj and "env" not in obj:
        raise ProtocolError(f"the checker refused the request: {obj['message']}")
    env = obj.get("env")
    return Reply(env if isinstance(env, int) else None, tuple(message(m) for m in obj.get("messages") or ()))


def message(obj: Mapping[str, Any]) -> Message:
    pos = obj.get("pos") or {}
    end = obj.get("endPos") or {}
    return Message(
        severity=_SEVERITIES.get(str(obj.get("severity")), "info"),
        line=int(pos.get("line", 0)),
        column=int(pos.get("column", 0)),
        data=str(obj.get("data", "")),
        end_line=end.get("line"),
        end_column=end.get("column"),
    )


def json_lines(text: str) -> list[Message]:
    """The messages of `lean --json FILE`: one JSON object per line, other lines ignored."""
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                found.append(message(json.loads(line)))
            except (ValueError, TypeError):
                continue
    return found


def axioms_from_messages(messages: Iterable[Message], name: str) -> tuple[list[Axiom] | None, list[Message]]:
    """Split the answer of `#print axioms name` from the other messages.

    Returns (axioms, rest); axioms is None when no such answer is among the messages. Several
    answers are merged: the proof can log an info message of the same shape (`trace "..."`),
    before or after the real one, and a forged "does not depend on any axioms" must not hide
    what the real answer lists; a forged answer can only add names, which fails the proof.
    """
    axioms: list[Axiom] | None = None
    rest = []
    for m in messages:
        depends = _DEPENDS.match(m.data.strip()) if m.severity == "info" else None
        none = _NO_AXIOMS.match(m.data.strip()) if m.severity == "info" else None
        if depends and depends["name"] == name:
            # A name that holds a comma or a newline (`«a, b»`, `«cheat\n»`) splits into pieces
            # that are no standard axiom's name, so it is refused, never read as a standard one.
            found = [Axiom(a.strip()) for a in depends["axioms"].split(",") if a.strip()]
            axioms = list(dict.fromkeys([*(axioms or []), *found]))
        elif none and none["name"] == name:
            axioms = axioms or []
        else:
            rest.append(m)
    return axioms, rest
