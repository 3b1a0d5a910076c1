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
MAX_LISTED = 12  # failing outputs named in the summary line
MISMATCH_HEADING = "First mismatches:"
_ALPHABET = frozenset("01xz")
_KNOWN = str.maketrans("xz", "00")  # the 0/1 bits, x and z as 0
_UNKNOWN = str.maketrans("01xz", "0011")  # 1 where a bit is x or z


@dataclass(frozen=True)
class Score:
    passed: int
    total: int
    mismatches: tuple[str, ...]  # feedback lines on what failed, for the model
    heading: str = MISMATCH_HEADING  # what those lines are, as the model reads it

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


def as_text(data: bytes | None) -> str | NoVerdict:
    """The recorded outputs as text: NoVerdict where there are none, or they are not plain ASCII."""
    if data is None:
        return NoVerdict("the testbench wrote no outputs", started=False)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return NoVerdict("the recorded outputs are not plain text", started=True)


def parse(data: bytes | None, count: int, widths: Sequence[int]) -> list[list[str]] | NoVerdict:
    """`count` lines of fields of `widths`, lower-case binary; NoVerdict for anything else."""
    text = as_text(data)
    if isinstance(text, NoVerdict):
        return text
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


# One mismatch: (sample, output index, expected value, recorded value), the values as shown.
Mismatch = tuple[int, int, str, str]
Describe = Callable[[int, str, str, str], list[str]]  # (sample, output name, want, got) -> lines


def compare(
    rows: Sequence[Sequence[str]],
    names: Sequence[str],
    widths: Sequence[int],
    expected: Callable[[int], Sequence[tuple[int, int]]],
    describe: Describe,
    moved: Callable[[int, int], bool] | None = None,
) -> Score:
    """One check per sample and output with any care bit; `expected(i)` gives (value, care) per
    output, `describe(i, name, want, got)` the feedback lines of a mismatch. `moved(i, k)`: output
    k changed while sample i required it to hold its value, which fails the check whatever the value."""
    passed = total = 0
    counts = [0] * len(names)
    found: list[Mismatch] = []  # each output's first mismatch, and the first MAX_SHOWN of all
    for i, row in enumerate(rows):
        for k, (value, care) in enumerate(expected(i)):
            if not care:
                continue
            total += 1
            if matches(row[k], value, care) and not (moved is not None and moved(i, k)):
                passed += 1
                continue
            counts[k] += 1
            if counts[k] == 1 or len(found) < MAX_SHOWN:
                found.append((i, k, f"{widths[k]}'h{value & care:x}", shown(widths[k], row[k])))
    return Score(passed, total, feedback(names, counts, found, describe))


def feedback(names: Sequence[str], counts: Sequence[int], found: Sequence[Mismatch], describe: Describe) -> tuple[str, ...]:
    """What the model reads about a failed comparison: which outputs mismatch and how often, then
    the first mismatch of each of them (earliest first), then later ones, MAX_SHOWN in all.

    Each failing output is named before any output is shown twice, so a fault in the last of
    seven outputs is not hidden behind five mismatches of the first. `found` is in sample order
    and holds each failing output's first mismatch and the first MAX_SHOWN of all (it may hold
    more: only those are used)."""
    failing = [f"{names[k]} ({n} {'sample' if n == 1 else 'samples'})" for k, n in enumerate(counts) if n]
    if not failing:
        return ()
    firsts: dict[int, Mismatch] = {}
    for m in found:
        firsts.setdefault(m[1], m)
    first_ones = list(firsts.values())[:MAX_SHOWN]
    later = [m for m in found[:MAX_SHOWN] if firsts[m[1]] is not m][: MAX_SHOWN - len(first_ones)]
    lines = [f"Outputs that mismatch: {', '.join(failing[:MAX_LISTED])}{', ...' if len(failing) > MAX_LISTED else ''}"]
    for i, k, want, got in first_ones + later:
        lines += describe(i, names[k], want, got)
    return tuple(lines)
