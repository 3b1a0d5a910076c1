"""Find the proof in a model's answer.

The gym fixes the statement and asks for the proof only. An answer is Lean code (the last
fenced code block if there is one, else the whole answer) that is either
* a proof: a term or a `by` block (a leading `:=` is dropped), or
* the whole theorem, restated: its statement must then match the task's exactly (up to
  whitespace), and only what follows its `:=` is kept. Anything before the restated
  theorem is refused: helper lemmas belong inside the proof (`have`), where they cannot
  change what the statement means.

The reply is read as `gyms/answer_text.py` makes every gym read it: normalised once (no
byte-order mark, LF line ends), without its `<think>` reasoning, with fences found by its one
scanner. The screen and the checker both get the proof cut from that text, so they always see
the same characters.

Everything here runs in linear time: the answer is untrusted and may be degenerate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gyms.answer_text import fenced_blocks, normalise, without_think
from gyms.lean.lexer import code_only

# Longer than any proof a model should write; Lean would spend long seconds on such text.
MAX_PROOF_CHARS = 20_000
# Fences whose code is Lean: tagged lean or lean4, or untagged.
_LEAN_TAGS = {"", "lean", "lean4"}
_DECL = re.compile(r"\b(?:theorem|lemma)\s+(?P<name>[^\s:({\[]+)")


@dataclass(frozen=True)
class Proof:
    text: str


@dataclass(frozen=True)
class Refusal:
    reason: str


def extract_proof(answer: str, statement: str, name: str) -> Proof | Refusal:
    """The proof of theorem `name` (whose statement is `statement`, up to `:=`) in `answer`."""
    answer = without_think(normalise(answer))
    block = last_block(answer)
    code = (answer if block is None else block).strip()
    if not code:
        return Refusal("No proof found. Reply with the proof in a ```lean code block.")
    declaration = _restated(code, name)
    if declaration is not None:
        start, end = declaration
        if code_only(code[:start]).strip():
            return Refusal(
                "Only the proof of the theorem is checked: put helper lemmas inside it with `have`, "
                "not before the theorem."
            )
        if _normal(code[start:end]) != _normal(statement):
            return Refusal(
                "The theorem's statement was changed. Prove it exactly as stated; reply with the proof only."
            )
        code = code[end:]
    code = code.strip()
    if len(code) > MAX_PROOF_CHARS:
        return Refusal(f"The proof is {len(code)} characters long; keep it under {MAX_PROOF_CHARS}.")
    if code.startswith(":="):
        code = code[2:].strip()
    if not code_only(code).strip():
        return Refusal("The proof is empty. Reply with a term or a `by` block that proves the theorem.")
    return Proof(code)


def last_block(answer: str) -> str | None:
    """The body of the last closed fenced block tagged lean, lean4 or nothing."""
    bodies = [block.body for block in fenced_blocks(answer) if block.closed and block.tag in _LEAN_TAGS]
    return bodies[-1] if bodies else None


def _restated(code: str, name: str) -> tuple[int, int] | None:
    """(start, end) of a restated `theorem name ... :=` header in `code`, `end` after `:=`."""
    bare = code_only(code)
    for match in _DECL.finditer(bare):
        if match["name"] != name:
            continue
        assign = _top_level_assign(bare, match.end())
        return (match.start(), assign + 2) if assign >= 0 else (match.start(), len(code))
    return None


def _top_level_assign(code: str, start: int) -> int:
    depth = 0
    for i in range(start, len(code) - 1):
        char = code[i]
        if char in "([{⟨":
            depth += 1
        elif char in ")]}⟩":
            depth -= 1
        elif depth == 0 and code.startswith(":=", i):
            return i
    return -1


def _normal(text: str) -> str:
    text = re.sub(r"\s+", " ", code_only(text)).strip()
    text = text.removeprefix("lemma ").removesuffix(":=").strip()
    return text.removeprefix("theorem ").strip()
