"""The host's file operations inside a sandbox-writable directory, none of which follows a link.

Code in the sandbox can plant symlinks, hard links, FIFOs and device nodes anywhere it may
write: in a turn directory, in the work directory, in place of a directory the host will make
next. The host (often root) must never write, chown, read or descend through such an entry,
or the answer decides what the host touches outside the sandbox. Every host access to a path
below a work directory therefore goes through this module:

* paths are walked one component at a time from a directory the host made itself, each one
  opened with `O_NOFOLLOW` (a link anywhere on the way is refused, never followed);
* files the host writes are created fresh (`O_CREAT | O_EXCL`), after removing whatever entry
  had the name (`unlinkat`, which removes a link rather than its target);
* files the host reads must be regular files, are opened without blocking (a FIFO cannot hang
  the host) and are read up to a cap;
* ownership changes use the opened descriptor (`fchown`), never a path.

`UnsafePath` is raised for anything the sandbox planted; callers treat it as the answer's
failure, since only the sandboxed code can have caused it.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class UnsafePath(Exception):
    """A sandbox-written entry is not what the host expects (a link, a device, too large...)."""


class TooLarge(UnsafePath):
    def __init__(self, name: str, limit: int) -> None:
        super().__init__(f"{name} is larger than {limit} bytes")
        self.limit = limit


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(relpath: str | os.PathLike[str]) -> list[str]:
    parts = Path(relpath).parts
    if not parts or Path(relpath).is_absolute() or any(p in ("..", ".", "") for p in parts):
        raise ValueError(f"{relpath!r} is not a plain relative path")
    return list(parts)


@contextmanager
def _open_dir(root: Path, parts: list[str]) -> Iterator[int]:
    """A descriptor of root/parts..., every component opened without following links."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise UnsafePath(f"{root} is not a directory the host can open safely: {exc.strerror}") from exc
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise UnsafePath(f"{part!r} under {root} is not a plain directory ({exc.strerror})") from exc
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _remove_entry(name: str, dir_fd: int) -> None:
    """Remove `name` in `dir_fd` whatever it is, without following it."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        # shutil.rmtree with dir_fd walks by descriptors and never follows links.
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def write_file(root: Path, relpath: str | os.PathLike[str], data: bytes | str, mode: int = 0o644) -> Path:
    """Create root/relpath afresh with `data`, replacing whatever entry had that name."""
    *dirs, name = _parts(relpath)
    payload = data.encode() if isinstance(data, str) else data
    with _open_dir(root, dirs) as dir_fd:
        _remove_entry(name, dir_fd)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                     dir_fd=dir_fd)  # fmt: skip
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
    return root.joinpath(relpath)


def make_dir(root: Path, relpath: str | os.PathLike[str], uid: int | None = None, mode: int = 0o755) -> Path:
    """Make root/relpath as a new, empty directory (replacing whatever had that name), owned by
    `uid` when given."""
    *dirs, name = _parts(relpath)
    with _open_dir(root, dirs) as dir_fd:
        _remove_entry(name, dir_fd)
        os.mkdir(name, mode, dir_fd=dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        try:
            if uid is not None:
                os.fchown(fd, uid, uid)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    return root.joinpath(relpath)


def read_file(root: Path, relpath: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the regular file root/relpath, or None if there is no such entry.

    Raises `UnsafePath` for a link, a FIFO, a device or a directory, and `TooLarge` beyond
    `limit` bytes (read no further than that).
    """
    *dirs, name = _parts(relpath)
    with _open_dir(root, dirs) as dir_fd:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP: a symlink
            raise UnsafePath(f"{name} is not a regular file ({exc.strerror})") from exc
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UnsafePath(f"{name} is not a regular file")
            data = f.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(name, limit)
    return data


def read_text(root: Path, relpath: str | os.PathLike[str], limit: int) -> str | None:
    data = read_file(root, relpath, limit)
    return None if data is None else data.decode(errors="replace")


def remove_tree(path: Path) -> None:
    """Remove a directory the host made, and everything the sandbox left in it, following no link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)  # descriptor-based on Linux: links are removed, not followed
    else:
        os.unlink(path)
