"""The outputs a sandboxed testbench recorded, read back on the host and compared there.

Every testbench form writes one line per sample to `outputs.txt` in its turn directory: the
design's outputs in port order, each in binary (`%b`, so x and z stay visible), separated by
one space. The file is the only thing the host takes from the simulation, so it is read
through `gyms.hostfs` (no links followed, size capped at exactly what the line count allows)
and parsed strictly in linear time: the exact number of lines, each of the exact width and
alphabet. Anything else is no verdict, never a partial one. The expected values live only
here, on the host: nothing in the sandbox can print or forge a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

OUTPUTS = "outputs.txt"
MAX_SHOWN = 5  # mismatches shown to the model; the rest are only counted
_ALPHABET = frozenset("01xz")
_KNOWN = str.maketrans("xz", "00")  # the 0/1 bits, x and z as 0
_UNKNOWN = str.maketrans("01xz", "0011")  # 1 where a bit is x or z


@dataclass(frozen=True)
class Score:
    passed: int
    total: int
    mismatches: tuple[str, ...]  # the first few, for the model

    @property
    def reward(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total


@dataclass(frozen=True)
class NoVerdict:
    """The recorded outputs are missing, short or malformed; `reason` says how, in one line."""

    reason: str
    started: bool  # whether the testbench got as far as creating its output file


def line_bytes(widths: Sequence[int]) -> int:
    return sum(widths) + len(widths)  # the separators and the newline


def parse(data: bytes | None, count: int, widths: Sequence[int]) -> list[list[str]] | NoVerdict:
    """`count` lines of fields of `widths`, lower-case binary; NoVerdict for anything else."""
    if data is None:
        return NoVerdict("the testbench wrote no outputs", started=False)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return NoVerdict("the recorded outputs are not plain text", started=True)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < count:
        return NoVerdict(f"the simulation ended after {len(lines)} of {count} samples", started=True)
    if len(lines) > count or not text.endswith("\n"):
        return NoVerdict(f"the testbench recorded {len(lines)} samples, expected {count}", started=True)
    rows = []
    for number, line in enumerate(lines):
        fields = line.split(" ")
        if len(fields) != len(widths) or any(len(f) != w for f, w in zip(fields, widths)):
            return NoVerdict(f"recorded sample {number} is malformed", started=True)
        if not _ALPHABET.issuperset(line.replace(" ", "")):
            return NoVerdict(f"recorded sample {number} holds characters other than 0, 1, x and z", started=True)
        rows.append(fields)
    return rows


def matches(bits: str, expected: int, care: int) -> bool:
    """`bits` (MSB first, may hold x/z) equals `expected` on every bit set in `care`."""
    if bits.isdigit():  # only 0 and 1: the common case, one int conversion
        return (int(bits, 2) ^ expected) & care == 0
    known = int(bits.translate(_KNOWN), 2)
    unknown = int(bits.translate(_UNKNOWN), 2)
    return unknown & care == 0 and (known ^ expected) & care == 0


def shown(width: int, bits: str) -> str:
    """A recorded value as the model reads it: hex when fully known, else binary."""
    if bits.isdigit():
        return f"{width}'h{int(bits, 2):x}"
    return f"{width}'b{bits}"


def compare(
    rows: Sequence[Sequence[str]],
    names: Sequence[str],
    widths: Sequence[int],
    expected: Callable[[int], Sequence[tuple[int, int]]],
    describe: Callable[[int, str, str, str], list[str]],
) -> Score:
    """One check per sample and output with any care bit; `expected(i)` gives (value, care) per
    output, `describe(i, name, want, got)` the feedback lines of a mismatch."""
    passed = total = 0
    lines: list[str] = []
    for i, row in enumerate(rows):
        for k, (value, care) in enumerate(expected(i)):
            if not care:
                continue
            total += 1
            if matches(row[k], value, care):
                passed += 1
            elif len(lines) < 2 * MAX_SHOWN:
                want = f"{widths[k]}'h{value & care:x}"
                lines += describe(i, names[k], want, shown(widths[k], row[k]))
    return Score(passed, total, tuple(lines))
