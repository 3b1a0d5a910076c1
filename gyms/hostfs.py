"""The host's file operations inside a sandbox-writable directory, none of which follows a link.

Code in the sandbox can plant symlinks, hard links, FIFOs and sockets anywhere it may write:
in a turn directory, in the work directory, in place of a directory the host will make next.
The host (often root) must never write, chown, read or descend through such an entry, or the
answer decides what the host touches outside the sandbox. Every host access to a path below a
work directory therefore goes through this module:

* paths are walked one component at a time from a directory the host made itself, each one
  opened with `O_NOFOLLOW | O_DIRECTORY` (a link anywhere on the way is refused, never
  followed, and a FIFO in place of a directory cannot block the open);
* files and directories the host makes are created fresh (`O_CREAT | O_EXCL`, `mkdir`), after
  removing whatever entry had the name (`unlinkat`, which removes a link, not its target);
  their mode and owner are then set on the opened descriptor (`fchmod`, `fchown`), never
  through a path, and the mode is exact whatever the umask;
* files the host reads must be regular files with one name (a hard link may share its inode
  with a file elsewhere), are opened without blocking (a FIFO cannot hang the host) and are
  read up to a cap;
* trees are removed by descriptor, with bounded depth and open files (a sandbox can nest
  directories thousands deep), and without following anything.

Entries can change between two system calls while a sandboxed process still runs in the
directory (a warm checker does); every step above refuses the changed entry rather than
following it. `UnsafePath` is raised for anything the sandbox planted; callers treat it as the
answer's failure, since only the sandboxed code can have caused it.

What the kernel already rules out, so nothing here handles it: a sandbox cannot make device
nodes (no CAP_MKNOD), and cannot hard-link a file outside its work directory (bwrap binds the
work directory as a mount of its own, and link(2) refuses to cross mounts; without bwrap,
`fs.protected_hardlinks` refuses links to files the sandbox uid can neither read nor write).
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class UnsafePath(Exception):
    """A sandbox-written entry is not what the host expects (a link, a FIFO, too large...)."""


class TooLarge(UnsafePath):
    def __init__(self, name: str, limit: int) -> None:
        super().__init__(f"{name} is larger than {limit} bytes")
        self.limit = limit


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_scratch_names = itertools.count()


def _parts(relpath: str | os.PathLike[str]) -> list[str]:
    parts = Path(relpath).parts
    if not parts or Path(relpath).is_absolute() or any(p in ("..", ".", "") for p in parts):
        raise ValueError(f"{relpath!r} is not a plain relative path")
    return list(parts)


def _open_subdir(name: str | os.PathLike[str], dir_fd: int | None = None) -> int:
    """Open a directory without following a link; raises OSError (ELOOP, ENOTDIR...) otherwise.

    A directory its owner made unreadable (mode 000) is made readable first: the host then is
    its owner (user-namespace sandboxes map to the host user), and must still remove it.
    """
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        path_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.chmod(f"/proc/self/fd/{path_fd}", 0o700)  # the directory itself: O_PATH followed nothing
        finally:
            os.close(path_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


@contextmanager
def _open_dir(root: Path, parts: list[str]) -> Iterator[int]:
    """A descriptor of root/parts..., every component opened without following links."""
    try:
        fd = _open_subdir(root)
    except OSError as exc:
        raise UnsafePath(f"{root} is not a directory the host can open safely: {exc.strerror}") from exc
    try:
        for part in parts:
            try:
                nxt = _open_subdir(part, fd)
            except FileNotFoundError:
                raise  # a missing directory is no attack: each caller says what it means
            except OSError as exc:
                raise UnsafePath(f"{part!r} under {root} is not a plain directory ({exc.strerror})") from exc
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _empty(fd: int) -> None:
    """Remove everything inside the directory open as `fd`, following no link.

    Depth and open descriptors stay bounded: the subdirectories of each child are moved up into
    `fd` itself (rename does not follow links either) and emptied in a later pass.
    """
    previous: list[str] = []
    while names := sorted(os.listdir(fd)):
        if names == previous:  # nothing could be removed: something keeps it (a live sandbox)
            raise OSError(errno.ENOTEMPTY, "entries keep coming back", ", ".join(names[:3]))
        previous = names
        for name in names:
            try:
                child = _open_subdir(name, fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    if exc.errno == errno.ENOENT:
                        continue  # moved or removed meanwhile
                    raise
                try:
                    os.unlink(name, dir_fd=fd)  # not a directory (or a link to one): the name goes
                except (FileNotFoundError, IsADirectoryError):
                    pass  # gone, or a directory again: the next pass sees it
                continue
            try:
                _make_writable(child)
                for inner in os.listdir(child):
                    try:
                        os.unlink(inner, dir_fd=child)
                    except IsADirectoryError:
                        if os.geteuid() != 0:  # moving a directory rewrites its "..": it must be writable
                            sub = _open_subdir(inner, child)
                            try:
                                _make_writable(sub)
                            finally:
                                os.close(sub)
                        _move_up(inner, child, fd)
                    except FileNotFoundError:
                        pass
            finally:
                os.close(child)
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY):  # gone, or refilled: next pass
                    raise


def _make_writable(fd: int) -> None:
    """Give the owner full access to the directory `fd`: root needs none, but a host user must
    be able to empty a directory the sandbox made read-only."""
    if os.geteuid() != 0 and stat.S_IMODE(os.fstat(fd).st_mode) & 0o700 != 0o700:
        os.fchmod(fd, 0o700)


def _move_up(name: str, src_fd: int, dst_fd: int) -> None:
    """Move directory `name` from `src_fd` into `dst_fd` under a name no entry there has."""
    while True:
        try:
            os.rename(name, f".heavygym-removing-{next(_scratch_names)}", src_dir_fd=src_fd, dst_dir_fd=dst_fd)
            return
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.ENOTDIR):
                continue  # that scratch name is taken by something else: try the next
            if exc.errno == errno.ENOENT:
                return
            raise


def _remove_entry(name: str, dir_fd: int) -> None:
    """Remove `name` in `dir_fd` whatever it is, without following it."""
    try:
        os.unlink(name, dir_fd=dir_fd)  # a file, a link (not its target), a FIFO, a socket
        return
    except FileNotFoundError:
        return
    except IsADirectoryError:
        pass
    try:
        child = _open_subdir(name, dir_fd)
    except FileNotFoundError:
        return
    try:
        _make_writable(child)
        _empty(child)
    finally:
        os.close(child)
    os.rmdir(name, dir_fd=dir_fd)


def _refused(name: str, exc: OSError) -> UnsafePath:
    # EEXIST, ELOOP, ENOENT: the sandbox changed the entries while the host replaced one
    return UnsafePath(f"the host could not replace {name!r} safely ({exc.strerror})")


def write_file(root: Path, relpath: str | os.PathLike[str], data: bytes | str, mode: int = 0o644) -> Path:
    """Create root/relpath afresh with `data`, replacing whatever entry had that name."""
    *dirs, name = _parts(relpath)
    payload = data.encode() if isinstance(data, str) else data
    try:
        with _open_dir(root, dirs) as dir_fd:
            _remove_entry(name, dir_fd)
            fd = os.open(name, _CREATE_FLAGS, 0o600, dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(fd, mode)
                f.write(payload)
    except UnsafePath:
        raise
    except OSError as exc:  # EEXIST: the sandbox put an entry back between removal and creation
        raise _refused(str(relpath), exc) from exc
    return root.joinpath(relpath)


def make_dir(root: Path, relpath: str | os.PathLike[str], uid: int | None = None, mode: int = 0o755) -> Path:
    """Make root/relpath as a new, empty directory (replacing whatever had that name), owned by
    `uid` when given."""
    *dirs, name = _parts(relpath)
    try:
        with _open_dir(root, dirs) as dir_fd:
            _remove_entry(name, dir_fd)
            os.mkdir(name, 0o700, dir_fd=dir_fd)
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)  # ELOOP if swapped for a link meanwhile
            try:
                if uid is not None:
                    os.fchown(fd, uid, uid)
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
    except UnsafePath:
        raise
    except OSError as exc:
        raise _refused(str(relpath), exc) from exc
    return root.joinpath(relpath)


def read_file(root: Path, relpath: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the regular file root/relpath, or None if there is no such entry.

    Raises `UnsafePath` for a link, a FIFO, a socket, a directory or a file with several
    names, and `TooLarge` beyond `limit` bytes (read no further than that).
    """
    *dirs, name = _parts(relpath)
    try:
        with _open_dir(root, dirs) as dir_fd:
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                return None
            except OSError as exc:  # ELOOP: a symlink; ENXIO: a socket
                raise UnsafePath(f"{name} is not a regular file ({exc.strerror})") from exc
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    raise UnsafePath(f"{name} is not a regular file")
                if st.st_nlink != 1:
                    raise UnsafePath(f"{name} has {st.st_nlink} names (hard links); the host reads only files with one")
                data = f.read(limit + 1)
    except FileNotFoundError:  # a directory on the way does not exist
        return None
    if len(data) > limit:
        raise TooLarge(name, limit)
    return data


def read_text(root: Path, relpath: str | os.PathLike[str], limit: int) -> str | None:
    data = read_file(root, relpath, limit)
    return None if data is None else data.decode(errors="replace")


def remove(root: Path, relpath: str | os.PathLike[str]) -> None:
    """Remove the entry root/relpath, whatever the sandbox made of it (a tree is removed whole;
    a link goes, its target stays); nothing happens if it does not exist."""
    *dirs, name = _parts(relpath)
    try:
        with _open_dir(root, dirs) as dir_fd:
            _remove_entry(name, dir_fd)
    except FileNotFoundError:  # a directory on the way does not exist
        return
    except UnsafePath:
        raise
    except OSError as exc:
        raise _refused(str(relpath), exc) from exc


def remove_tree(path: Path) -> None:
    """Remove `path` (a directory the host made: its parent is not sandbox-writable) and
    everything the sandbox left in it, following no link. Below a work directory use `remove`.
    Kill the sandbox's processes first: a live one may keep adding files."""
    parent, name = os.path.split(os.path.abspath(path))
    parent_fd = os.open(parent, _DIR_FLAGS)
    try:
        _remove_entry(name, parent_fd)
    finally:
        os.close(parent_fd)
