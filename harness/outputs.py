"""Writing the harness's outputs: refuse an unusable output directory before the work starts,
and name the file in every write error (a full disk's error names none)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Every command's default results root: this machine's runs/, cards/ and leaderboard. It is
# git-ignored, so an ad-hoc run never touches what is published.
RESULTS = Path("results-local")
# The published results, tracked in git: the runs scripts/publish-results.sh measured (it passes
# --results results) and their leaderboard. Commands that look a run or a card up read it after
# their own root, so a fresh clone plans and re-simulates from the published runs.
PUBLISHED = Path("results")



def lookup_roots(results_root: Path) -> list[Path]:
    """Where a run id or a gym's card is looked up: `results_root`, then the published results."""
    same = results_root.resolve() == PUBLISHED.resolve()
    return [results_root] if same or not PUBLISHED.is_dir() else [results_root, PUBLISHED]


def gym_file_name(gym: str, options: dict[str, str]) -> str:
    """One JSON file per gym and its options (a card, an attack figure): NAME-KEY=VALUE....json."""
    suffix = "".join(f"-{k}={v}" for k, v in sorted(options.items()))
    return f"{gym}{suffix}.json".replace("/", "_")


MB = 2**20
RUN_NEEDS_BYTES = 32 * MB  # a run record with its report and figures, with room to spare


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """Re-raise an OSError from writing `path` with `path` as its file name."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise


def write_text(path: Path, text: str) -> None:
    with naming(path):
        path.write_text(text)


def write_bytes(path: Path, data: bytes) -> None:
    with naming(path):
        path.write_bytes(data)


def check_writable(directory: Path, need_bytes: int, fix: str | None = None) -> None:
    """Raise OSError unless files can be written under `directory` (made later, if missing):
    its nearest existing ancestor is a directory, takes a file, and has `need_bytes` free.
    Leaves nothing behind. `fix`: how the command takes another directory, said when this one
    cannot be written ("pass --results DIR, a writable directory")."""
    existing = next((p for p in (directory, *directory.parents) if p.exists()), Path.cwd())
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(existing))
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".heavygym-probe-")
        os.close(fd)
        os.unlink(probe)
        free = shutil.disk_usage(existing).free
    except OSError as exc:  # named by the directory the user gave, not by the probe's name
        made = next((p for p in (directory, *directory.parents) if p.parent == existing and p != existing), None)
        # The directory to be made is the user's; its existing parent (/proc) alone would not say which.
        what = f"cannot create {made}: {existing} refuses new files" if made else f"cannot write in {existing}"
        error = OSError(f"{what} ({exc.strerror}); {fix or 'pass a writable directory'}")  # names its paths itself
        error.errno = exc.errno
        raise error from None
    if free < need_bytes:
        raise OSError(errno.ENOSPC, f"only {free / MB:.1f} MB free, {need_bytes / MB:.0f} MB needed", str(existing))


_ABSOLUTE_PATH = re.compile(r"(?<![\w.~/-])/(?!/)(?:[^\s/:,;'\"]+/)*([^\s/:,;'\"]+)")


def without_paths(value: Any) -> Any:
    """`value` (nested dicts, lists, strings) with every absolute path cut to its last part, as
    `…/name`: what a run publishes must not name the directories of the machine that ran it
    (a dataset given as `source=verilog-eval:/data/VerilogEval` is recorded as
    `verilog-eval:…/VerilogEval`)."""
    if isinstance(value, str):
        return _ABSOLUTE_PATH.sub(lambda m: f"…/{m.group(1)}", value)
    if isinstance(value, dict):
        return {k: without_paths(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_paths(v) for v in value]
    return value
