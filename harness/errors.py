"""The one line a harness command prints for an error: what failed, the path or value, the fix.

Exit codes: 0 done; 1 a check ran and failed (`harness gyms check`); 2 the command could not do
its work (this module's line says why); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from gyms.base import Gym
from gyms.docker_sandbox import DockerUnavailable
from gyms.images import ImageError
from gyms.pool import GymPoolBroken
from gyms.registry import GymLoadError, UnknownGymError, UnknownGymOptionError, make
from trainer.buffer import PipelineFailure

FAILED = 2
INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C
SHOW_TRACEBACK = "HEAVYGYM_TRACEBACK"  # set to 1 to see where an unexpected error came from

_FIXES = {
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file: pass a directory",
    errno.EISDIR: "it is a directory: pass a file",
    errno.EEXIST: "remove it or pass another path",
    errno.EACCES: "fix its permissions or pass another path",
    errno.EPERM: "fix its permissions or pass another path",
    errno.EROFS: "pass a path on a writable file system",
    errno.ENOSPC: "free space on that disk or pass a path on another one",
    errno.EDQUOT: "free space within the quota or pass a path on another disk",
}


class DatasetError(Exception):
    """A gym's tasks could not be loaded with the given options (a missing or corrupt file)."""

    def __init__(self, gym: str, options: dict[str, Any], cause: Exception) -> None:
        given = ", ".join(f"{k}={v}" for k, v in options.items())
        detail = os_error_line(cause) if isinstance(cause, OSError) else str(cause)
        fix = "; fix the file or the --gym-option" if options else ""  # a file the user named
        super().__init__(f"gym {gym} ({given or 'default options'}): its tasks could not be loaded: "
                         f"{detail.rstrip('.')}{fix}")  # fmt: skip


class MissingExtra(Exception):
    """A command needs an optional extra that is not installed; the message names the install."""


def dataset_errors() -> tuple[type[Exception], ...]:
    """What loading a dataset raises for a bad file: I/O, parse and format errors."""
    found: tuple[type[Exception], ...] = (OSError, ValueError, LookupError, UnicodeError)
    try:
        import pyarrow

        found += (pyarrow.ArrowException,)  # a corrupt parquet file, whatever its subclass
    except ImportError:
        pass
    return found


def os_error_line(exc: OSError) -> str:
    """`PATH: what happened; the fix`, or the error's own text where it names no file (a gym's
    FileNotFoundError that already says which file and what to pass)."""
    if exc.filename is None:
        return str(exc)
    path = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
    what = exc.strerror or (os.strerror(exc.errno) if exc.errno else type(exc).__name__)
    fix = _FIXES.get(exc.errno or 0)
    return f"{path}: {what}" + (f"; {fix}" if fix else "")


def error_line(exc: Exception) -> str:
    """The one line for `exc`. Errors that name their value and fix are shown as they are; any
    other exception is a bug, said so, with the way to see its traceback."""
    if isinstance(exc, OSError):
        line = os_error_line(exc)
    elif isinstance(exc, (DatasetError, GymLoadError, UnknownGymError, UnknownGymOptionError, GymPoolBroken,
                          MissingExtra, PipelineFailure, ValueError, ImageError, DockerUnavailable)):  # fmt: skip
        line = str(exc)
    else:
        line = (f"unexpected {type(exc).__name__}: {exc} (a bug: please report it with the command; "
                f"{SHOW_TRACEBACK}=1 shows the traceback)")  # fmt: skip
    return " ".join(line.split())  # one line, whatever the message held


class BenchmarkInterrupted(Exception):
    """Ctrl-C during a run. The modes that finished are kept in `run_dir`, with a summary that
    says the run was interrupted; a run in which no mode finished leaves nothing (run_dir None)."""

    def __init__(self, mode: str, run_dir: Path | None) -> None:
        kept = f"the finished modes are kept in {run_dir}" if run_dir else "no mode had finished: nothing was written"
        super().__init__(f"interrupted during the {mode} mode; {kept}")
        self.mode = mode
        self.run_dir = run_dir


def start_gym(name: str, options: dict[str, str], split: str = "train", sandbox: str | None = None) -> Gym:
    """The gym with its tasks loaded, so a missing or corrupt dataset fails here, at start-up,
    as a DatasetError naming the options, before any pool or run directory exists. `sandbox`:
    --sandbox, checked and made the default of every sandbox from here on (harness/sandboxes.py)."""
    from harness import sandboxes

    gym = make(name, **options)
    sandboxes.choose(sandbox, name)
    try:
        gym.tasks(split)
    except dataset_errors() as exc:
        raise DatasetError(gym.name, options, exc) from exc
    return gym
