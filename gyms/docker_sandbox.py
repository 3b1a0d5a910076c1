"""The `docker` sandbox backend: one long-lived container per gym worker, one `docker exec` per command.

`Sandbox(backend="docker")` (or `HEAVYGYM_SANDBOX=docker`, which `--sandbox docker` sets) runs
each sandboxed command in a container of the gym's toolchain image (`gyms.images`) instead of
under bwrap on the host. A cold `docker run` costs 1.2-1.4 s on the project's machine and a
`docker exec` into a running container about 0.09 s, so each process that sandboxes (a gym
pool worker) starts ONE container on first use and execs every command into it.

The guarantees, side by side with bwrap (gyms/sandbox.py)
---------------------------------------------------------
=========================  ===================================  ==========================================
guarantee                  bwrap                                docker (this module)
=========================  ===================================  ==========================================
no network                 `--unshare-all` (new net namespace)  `--network none`
read-only root             `--ro-bind / /` (the host's root)    `--read-only` (the image's root: host files
                                                                are not there at all)
work directory             the episode's /dev/shm dir, bound    the worker's /dev/shm root (see below),
                                                                bound at the same path; file size capped
                                                                by RLIMIT_FSIZE in both
/tmp                       host /tmp, read-only                 `--tmpfs /tmp` capped at 64 MB; it and
                                                                /dev/mqueue emptied at each episode's start
                                                                (`Container.empty_tmp`)
memory                     RLIMIT_AS per command                RLIMIT_AS per command (same `prlimit`) and
                                                                `--memory` (= `--memory-swap`) per container,
                                                                the image's `heavygym.memory_mb` or 2 GB
processes                  RLIMIT_NPROC per uid                 RLIMIT_NPROC per uid and `--pids-limit`
CPU                        RLIMIT_CPU                           RLIMIT_CPU and `--cpus`
capabilities               `--cap-drop ALL`                     `--cap-drop ALL`
no new privileges          setpriv / bwrap's no_new_privs       `--security-opt no-new-privileges`
uid                        65534 (userns); as root a host uid   as root, the work directory's own host uid
                           of the work directory's own          (as bwrap); else the caller's uid (never 0
                                                                inside); the container's pid 1 is 65534
syscalls                   no filter (namespaces only)          Docker's default seccomp profile
wall timeout               kills the process group              kills the `docker exec` client, then every
                                                                process of the run's uid in the container
                                                                (`kill -KILL -1` as that uid); if that
                                                                fails, the container is removed
output caps                `Limits.output_bytes` per stream     the same code (`_collect`) on the exec's pipes
`cpu_s`, `peak_rss_mb`     rusage of the reaped process tree    the container's cgroup: everything in the
                                                                container during the run (see below)
answer keys                masked (`hide_from_sandboxes`)       never mounted: the container sees its image,
                                                                the worker's work directories and the
                                                                paths its sandbox exposes (a gym's checker
                                                                program, a user's library), read-only
=========================  ===================================  ==========================================

Where an episode's files are
----------------------------
A running container cannot gain mounts, so every container of a gym pool on a host bind-mounts
one directory of that pool, `/dev/shm/heavygym-docker-pid<PID>.<START>-XXXXXXXX` (`pool_dir`:
named after the pool's process; mode 0711: it cannot be listed inside), at the same path, and
the workers make their episodes' work directories inside it. An episode's next turn may
therefore run on any worker of the pool on that host, as under bwrap (a multi-turn episode's
second turn used to fail on another worker), and paths mean the same on both sides (a gym
passes host paths in its commands unchanged). This is safe because
the host reads back only through `gyms.hostfs` (no link the container planted is followed, no
FIFO blocks the host, reads are capped), exactly as under bwrap, where the same directory is
bound into the sandbox. As root, each work directory belongs to its own unprivileged uid with
mode 0700 and the commands run as that uid, so an episode cannot enter another's directory.
Without root every command runs as the caller's uid: an episode can read another episode's
directory of the same pool if it guesses its random name (the root cannot be listed).

Lifetime and labels
-------------------
The container runs `sleep infinity` under `docker-init` (`--init`), which reaps the orphans a
command leaves: without it their zombies would hold the `--pids-limit` until the container went.
Every container carries the label `heavygym=<pool identity>` (the gym pool's process, or the
process itself outside a pool) and `heavygym.worker=<worker identity>`, each an identity
`HOST/pid<PID>.<START>` (pid and start time, as work directory names: a reused pid does not
match). A worker removes its container when it ends (`close`, run by its finalizers); the pool
removes the container of a worker it stops (fault, timeout kill, close: `remove_containers_of`);
and the first container a process starts sweeps the containers of this host whose worker or
pool no longer runs (`sweep`), so a killed trainer's leftovers go at the next start.

What a run used
---------------
The host reaps only the `docker exec` client, so `Sandbox.run` reads the container's cgroup
instead: the kernel keeps it, and nothing in the container can write it (read-only cgroup mount,
no capabilities); no figure comes from a program inside. When the container starts, `docker
inspect` gives its pid 1, whose /proc/PID/cgroup names its cgroup in each hierarchy (cgroupfs or
systemd driver, cgroup v1 or v2: `cgroup_of`); the paths are kept until the container goes.
Around each run (`Meter`: two small reads and one write, ~0.1 ms, no docker call):

* `cpu_s`: the cgroup's cumulative CPU time (v1 `cpuacct.usage`, v2 `cpu.stat` usage_usec)
  after the exec client is reaped (after the kill inside, on a timeout), less that before the
  command started. RLIMIT_CPU's SIGKILL therefore reads as "cpu-limit" as under bwrap.
* `peak_rss_mb`: the memory cgroup's high-water mark (v1 `memory.max_usage_in_bytes`, v2
  `memory.peak`), reset to the current usage just before the command. It is memory charged to
  the container, not a resident size: anonymous memory, the page cache of the files read, the
  files in its /tmp and work directories (tmpfs), kernel memory; so it starts from what the
  container already holds (2-3 MB for `true` in the verilog image).
* Both figures are the whole container's during the run: the exec's start (runc, prlimit: about
  0.02 s of CPU) and anything else in it. A worker runs one command at a time, but a warm
  checker (gyms/warm.py: a long-lived Lean or math checker) may sit idle beside it: its CPU
  time meanwhile, and all of its memory, count in the run's figures.
* Not measured: where the cgroup cannot be read (a rootless daemon's or another host's: a
  remote DOCKER_HOST, Docker Desktop's VM, whose pids are not this host's), `cpu_measured` is
  False and `cpu_s` is the wall time (so RLIMIT_CPU's SIGKILL still reads as "cpu-limit"), and
  `peak_rss_mb` reads 0, which no measured run reads. The peak alone reads 0 where its reset is
  refused (not root; cgroup v2 before Linux 6.12, whose `memory.peak` cannot be reset): the
  unreset mark is the container's lifetime peak, not the run's.

Why the Docker CLI, not the Docker SDK for Python
-------------------------------------------------
`docker exec` as a child process gives the sandbox the same pipes, the same capped reads and the
same wall-clock kill as bwrap (one code path in `Sandbox.run`); the SDK's exec API streams a
multiplexed socket that would need its own reader, deadline and kill. The CLI is what most of
the field drives (OpenEnv's LocalDockerProvider, verifiers, SkyRL/Harbor), needs no Python
dependency to pin, and talks to any daemon the user's `docker` talks to (`DOCKER_HOST`,
contexts). Its cost, ~0.05 s of client start per exec, is within the measured 0.09 s.

What it does not cover (beyond bwrap's list in gyms/sandbox.py)
----------------------------------------------------------------
* `Sandbox.run(shared=...)` (a directory a trusted run writes for later runs: the verilog gym's
  warm-up fills Verilator's compiler cache): a running container cannot gain the mount, so such
  a run starts a container of its own that mounts those directories writable (as well as the
  pool's directory and the exposed paths), and removes it after the run: a second or more of
  start-up, paid once per cache. The other runs see such a directory only where the gym
  exposes it (read-only), as bwrap shows it on its read-only root.
* A run's CPU seconds and peak memory are the whole container's during the run, a warm
  checker's beside it included, and are not measured where its cgroup is out of reach ("What a
  run used" above).
* An episode's files are in its pool's directory on one host: its next turn runs on a worker of
  that host (`gyms.pool._Jobs`, as under bwrap), or not at all (SandboxError).
* The kernel is shared with the host, as under bwrap: a kernel exploit escapes both.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import util
from pathlib import Path

from gyms import hostfs
from gyms.sandbox import _OWNER_NAME, ENV_BACKEND, SandboxError, _process_start, _runs, remove_workdirs_of, shm_root

ENV_POOL = "HEAVYGYM_POOL"  # the pool's identity, set by a gym pool for its workers
LABEL = "heavygym"
WORKER_LABEL = "heavygym.worker"

# Per-container limits (each worker runs one command at a time; warm checkers add their own).
# Memory: the image's `heavygym.memory_mb` label (its recipe's `memory_mb`: a wasm Lean checker
# needs more than a Python checker), else this; HEAVYGYM_DOCKER_MEMORY_MB overrides both.
MEMORY_MB = 2048
MEMORY_LABEL = "heavygym.memory_mb"
PIDS = int(os.environ.get("HEAVYGYM_DOCKER_PIDS", "256"))
CPUS = os.environ.get("HEAVYGYM_DOCKER_CPUS", "1")
TMP_MB = 64
# What a command can write in its container outside its work directory (the root is read-only):
# emptied at each episode's start (`Container.empty_tmp`). /dev/mqueue: POSIX message queues,
# which the container's IPC namespace keeps from one exec to the next.
EPISODE_PATHS = ("/tmp", "/dev/mqueue")
_DOCKER_TIMEOUT_S = 60.0  # one docker CLI call that is not a sandboxed command


class DockerUnavailable(RuntimeError):
    """No docker client, no daemon, or no image: the message names the fix."""


def docker_binary() -> str:
    found = shutil.which("docker")
    if found is None:
        raise DockerUnavailable(
            "the docker sandbox needs the Docker CLI: install docker.io (HEAVYGYM_EXTRAS=docker scripts/setup.sh)"
        )
    return found


def docker(*args: str, timeout: float = _DOCKER_TIMEOUT_S, check: bool = True, **kw: object) -> subprocess.CompletedProcess[str]:
    """One docker CLI call (not a sandboxed command)."""
    try:
        done = subprocess.run([docker_binary(), *args], capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload]
    except subprocess.TimeoutExpired as exc:
        raise DockerUnavailable(f"`docker {args[0]}` did not answer in {timeout:.0f} s: is the daemon stuck?") from exc
    if check and done.returncode != 0:
        raise DockerUnavailable(f"`docker {' '.join(args[:2])}` failed: {done.stderr.strip() or done.returncode}")
    return done


def daemon_problem() -> str | None:
    """None when a daemon answers, else one line that says why not and what to do."""
    try:
        done = docker("version", "--format", "{{.Server.Version}}", timeout=20, check=False)
    except DockerUnavailable as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return (f"no Docker daemon answers at {where}: start one (sudo scripts/dockerd.sh start) or set DOCKER_HOST "
            f"to a running daemon ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'no reply'})")  # fmt: skip


def image_id(image: str) -> str | None:
    """The image's id (sha256:...), None if the daemon does not have it."""
    done = docker("image", "inspect", "--format", "{{.Id}}", image, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def image_labels(image: str) -> dict[str, str] | None:
    """The image's labels, None if the daemon does not have it."""
    done = docker("image", "inspect", "--format", "{{json .Config.Labels}}", image, check=False)
    return (json.loads(done.stdout) or {}) if done.returncode == 0 else None


def image_record(image: str) -> dict[str, object]:
    """What a run record keeps of the image: its name, id and registry digests (none for a
    locally imported image: then the id is the content's identity)."""
    done = docker("image", "inspect", image, check=False)
    if done.returncode != 0:
        return {"image": image, "id": None, "digests": []}
    info = json.loads(done.stdout)[0]
    return {"image": image, "id": info.get("Id"), "digests": info.get("RepoDigests") or []}


# -- identities -----------------------------------------------------------------------------------


def identity(pid: int | None = None) -> str:
    """`HOST/pid<PID>.<START>` of process `pid` (this one by default)."""
    pid = os.getpid() if pid is None else pid
    started = _process_start(pid)
    return f"{socket.gethostname()}/pid{pid}.{started[0] if started else 0}"


def _identity_runs(value: str) -> bool | None:
    """Whether the process named by an identity still runs; None if it is another host's."""
    host, _, rest = value.rpartition("/")
    if host != socket.gethostname() or not rest.startswith("pid"):
        return None
    try:
        pid, started = (int(x) for x in rest[3:].split("."))
    except ValueError:
        return None
    return _runs(pid, started)


def _containers(label_filter: str) -> list[tuple[str, dict[str, str]]]:
    done = docker("ps", "-a", "--no-trunc", "--filter", f"label={label_filter}", "--format", "{{.ID}}\t{{json .Labels}}",
                  check=False)  # fmt: skip
    found = []
    for line in done.stdout.splitlines():
        cid, _, labels = line.partition("\t")
        try:
            parsed = json.loads(labels)
        except ValueError:
            parsed = labels
        if isinstance(parsed, str):  # `docker ps` gives "k=v,k=v" on older clients
            parsed = dict(kv.partition("=")[::2] for kv in parsed.split(",") if kv)
        found.append((cid, parsed))
    return found


def _remove(ids: Sequence[str]) -> int:
    """Remove containers `ids`; return once they are gone. One whose removal another client began
    (the finalizer of a gym worker that the pool killed after 2 s, while its `docker rm` ran) is
    waited for: `docker rm` refuses it at once, while the container still exists."""
    if not ids:
        return 0
    deadline = time.monotonic() + _DOCKER_TIMEOUT_S
    while "already in progress" in docker("rm", "-f", "-v", *ids, check=False).stderr and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(ids)


def sweep() -> int:
    """Remove this host's heavygym containers whose worker or pool no longer runs, and the work
    directories of such a worker (a worker killed outright removes neither); how many containers."""
    dead = [(cid, labels.get(WORKER_LABEL, "")) for cid, labels in _containers(LABEL)
            if _identity_runs(labels.get(WORKER_LABEL, "")) is False or _identity_runs(labels.get(LABEL, "")) is False]  # fmt: skip
    removed = _remove([cid for cid, _ in dead])
    for _, worker in dead:
        if _identity_runs(worker) is False:  # its pid no longer runs the worker: its directories can go
            remove_workdirs_of(int(worker.rpartition("/pid")[2].split(".")[0]))
    _sweep_pool_dirs()
    return removed


def remove_containers_of(pid: int) -> int:
    """Remove the containers that process `pid` (a stopped gym worker) started; how many.
    Only where the docker backend is in use: nothing calls the daemon otherwise."""
    if os.environ.get(ENV_BACKEND) != "docker" or shutil.which("docker") is None:
        return 0
    prefix = f"{socket.gethostname()}/pid{pid}."
    return _remove([cid for cid, labels in _containers(WORKER_LABEL) if labels.get(WORKER_LABEL, "").startswith(prefix)])


# -- what a run used: the container's cgroup ---------------------------------------------------


@dataclass(frozen=True)
class Cgroup:
    """The host's paths to where the kernel accounts the container's CPU time and memory; None
    where this host cannot read them. Whether the peak can be reset is found by each run's
    `Meter`, which reads no peak where the reset is refused."""

    cpu: Path | None = None  # cgroup v1 cpuacct.usage (ns), or v2 cpu.stat (usage_usec)
    peak: Path | None = None  # cgroup v1 memory.max_usage_in_bytes, or v2 memory.peak


def _unescape(field: str) -> str:  # mountinfo writes space, tab, newline and backslash as \ooo
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def cgroup_of(cid: str, pid: int) -> Cgroup:
    """The cgroup files of container `cid`, whose pid 1 is host process `pid` (`docker inspect`'s
    State.Pid). /proc/PID/cgroup names its cgroup in each hierarchy whatever the daemon's cgroup
    driver (cgroupfs or systemd) and version; /proc/self/mountinfo says where each is mounted. The
    path must name the container's full id: a pid of another pid namespace or host (a remote
    DOCKER_HOST, Docker Desktop's VM) is not the container here, and a path outside this process's
    cgroup namespace ("/..") is not reachable; either reads as not measured."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return Cgroup()
    where: dict[str, str] = {}  # controller ("" for the v2 hierarchy) -> the cgroup's path in it
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            where[controller] = path
    mounts: dict[str, tuple[str, str]] = {}  # controller -> (the mount's root in the hierarchy, mount point)
    for line in mountinfo:
        fields = line.split()
        rest = fields[fields.index("-", 6) + 1 :]  # after the optional fields
        if rest[0] == "cgroup2":
            mounts.setdefault("", (_unescape(fields[3]), _unescape(fields[4])))
        elif rest[0] == "cgroup":
            for option in rest[2].split(","):
                mounts.setdefault(option, (_unescape(fields[3]), _unescape(fields[4])))

    def file(controller: str, name: str) -> Path | None:
        path, mount = where.get(controller), mounts.get(controller)
        if path is None or mount is None or cid not in path or "/.." in path:
            return None
        root, point = mount
        if root != "/":
            if not path.startswith(root.rstrip("/") + "/"):
                return None
            path = path[len(root.rstrip("/")) :]
        found = Path(point + path) / name
        return found if found.is_file() else None

    # v1 where the controller is mounted as v1 (v1 and hybrid hosts), else the v2 hierarchy.
    cpu = file("cpuacct", "cpuacct.usage") or file("", "cpu.stat")
    peak = file("memory", "memory.max_usage_in_bytes") or file("", "memory.peak")
    if cpu is not None and _cpu_ns(cpu) is None:
        cpu = None
    return Cgroup(cpu, peak)


def cgroups_of(ids: Sequence[str]) -> dict[str, Cgroup]:
    """The cgroups of running containers `ids` (full ids, or any `docker inspect` takes), by full id:
    one `docker inspect` for their pid 1s. A container without a readable cgroup maps to `Cgroup()`."""
    done = docker("inspect", "--format", "{{.Id}} {{.State.Pid}}", *ids, check=False)
    found = {}
    for line in done.stdout.splitlines():
        cid, _, pid = line.partition(" ")
        found[cid] = cgroup_of(cid, int(pid)) if pid.isdigit() and int(pid) > 0 else Cgroup()
    return found


def pool_cpu_s() -> float:
    """CPU seconds that the running containers of this process's pool have used so far (their
    cgroups'): what a gym's commands spent under docker, where they are not the pool's child
    processes. 0 where no cgroup can be read (the docker backend not in use included)."""
    ids = [cid for cid, labels in _containers(f"{LABEL}={identity()}")] if shutil.which("docker") else []
    if not ids:
        return 0.0
    return sum((_cpu_ns(c.cpu) or 0) if c.cpu is not None else 0 for c in cgroups_of(ids).values()) / 1e9


def _cpu_ns(path: Path) -> int | None:
    """The cgroup's cumulative CPU time in ns (children included), None if unreadable."""
    try:
        text = path.read_text()
        if path.name == "cpuacct.usage":
            return int(text)
        return 1000 * next(int(line.split()[1]) for line in text.splitlines() if line.startswith("usage_usec "))
    except (OSError, ValueError, StopIteration):
        return None


def _reset_peak(path: Path) -> int | None:
    """Reset the high-water mark to the current usage; an open descriptor to read it back through,
    None if refused (no write access; v2 before Linux 6.12, whose memory.peak is read-only). v2
    keeps the reset per descriptor (other readers are unaffected), hence one descriptor from the
    reset to the read; v1 resets the cgroup's one mark."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        os.write(fd, b"0\n")
        return fd
    except OSError:
        os.close(fd)
        return None


class Meter:
    """One run's reading of the container's cgroup: made just before the command starts (reads the
    CPU counter, resets the memory peak), `read()` once it has ended. Both files are the kernel's:
    nothing in the container can write them (read-only cgroup mount, no capabilities)."""

    def __init__(self, cgroup: Cgroup) -> None:
        self.cgroup = cgroup
        self.cpu_ns = None if cgroup.cpu is None else _cpu_ns(cgroup.cpu)
        self.peak_fd = None if cgroup.peak is None else _reset_peak(cgroup.peak)

    def read(self) -> tuple[float | None, float | None]:
        """(CPU seconds, peak memory in MB) of the container since the meter was made; None
        for a figure not measured."""
        cpu_s = peak_mb = None
        if self.cpu_ns is not None and self.cgroup.cpu is not None:
            now = _cpu_ns(self.cgroup.cpu)  # None once the container is gone (removed after a failed kill)
            cpu_s = None if now is None else (now - self.cpu_ns) / 1e9
        if self.peak_fd is not None:
            try:
                peak_mb = int(os.pread(self.peak_fd, 64, 0)) / 2**20
            except (OSError, ValueError):
                pass
        self.close()
        return cpu_s, peak_mb

    def close(self) -> None:
        fd, self.peak_fd = self.peak_fd, None
        if fd is not None:
            os.close(fd)

    __del__ = close  # a run that raised before `read()`


# -- the pool's directory ----------------------------------------------------------------------


def pool_dir(create: bool = True) -> Path:
    """The directory that every container of this pool on this host mounts, and its episodes'
    work directories live in (made on first use): an episode's next turn may run on another
    worker of the pool, whose container then finds its files. Named after the pool's process
    (`heavygym-docker-pid<PID>.<START>-<8 hex of the pool identity>`): the pool's process removes
    it at exit where it made it itself, and otherwise the first sweep after the pool's process
    has gone (`sweep`); mode 0711: traversable inside, not listable."""
    pool = os.environ.get(ENV_POOL) or identity()
    stamp = pool.rpartition("/")[2]
    path = shm_root() / f"heavygym-docker-{stamp}-{hashlib.sha256(pool.encode()).hexdigest()[:8]}"
    if not create:
        return path
    try:
        os.mkdir(path, 0o711)
        os.chmod(path, 0o711)  # whatever the umask
        if pool == identity():  # made by the pool's own process (not a worker): it removes it at exit
            atexit.register(_remove_at_exit, path)
    except FileExistsError:
        pass
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
        raise SandboxError(f"{path} is not this pool's directory (a link, or another user's): remove it")
    return path


def _remove_at_exit(path: Path) -> None:
    try:
        hostfs.remove_tree(path)
    except OSError:
        pass


def _sweep_pool_dirs() -> None:
    """Remove the directories of pools whose process no longer runs, with what is left in them."""
    for entry in os.scandir(shm_root()):
        owner = _OWNER_NAME.search(entry.name)
        if entry.name.startswith("heavygym-docker-") and owner and not _runs(int(owner[1]), int(owner[2])):
            try:
                hostfs.remove_tree(Path(entry.path))
            except OSError as exc:
                warnings.warn(f"could not remove the pool directory {entry.path}: {exc}", stacklevel=2)


# -- the container ------------------------------------------------------------------------------

def _empty_through_proc(pid: int) -> bool:
    """Remove what is in the container's `EPISODE_PATHS` from the host, through its pid 1's root;
    False where that cannot be done (not root; the container gone)."""
    try:
        for path in EPISODE_PATHS:
            top = Path(f"/proc/{pid}/root{path}")
            for name in os.listdir(top):
                hostfs.remove_tree(top / name)
    except OSError:
        return False
    return True


_names = itertools.count()


class Container:
    """This process's container: started on first use, removed by `close()` (at exit too)."""

    def __init__(self, image: str, expose: Sequence[str] = (), shared: Sequence[str] = ()) -> None:
        """`expose`: host paths mounted read-only at their own path; `shared`: mounted writable
        (a trusted run's compiler cache: `Sandbox.run(shared=...)` starts a container of its own)."""
        problem = daemon_problem()
        if problem is not None:
            raise SandboxError(problem)
        labels = image_labels(image)
        if labels is None:
            raise SandboxError(f"the docker image {image!r} is missing: build it with `harness images build GYM`")
        self.memory_mb = int(os.environ.get("HEAVYGYM_DOCKER_MEMORY_MB") or labels.get(MEMORY_LABEL) or MEMORY_MB)
        self.image = image
        self.shared = tuple(shared)
        self.expose = tuple(p for p in expose if p not in self.shared)  # one mount per path: writable wins
        self.owner_pid = os.getpid()
        self.root = pool_dir()
        self.id: str | None = None
        self.cgroup = Cgroup()  # the running container's, found at its start
        self.pid: int | None = None  # its pid 1 on this host, where its cgroup says it is the container's
        self.closed = False
        self._lock = threading.Lock()
        util.Finalize(self, self.close, exitpriority=10)

    def ensure(self) -> str:
        """The running container's id, started (or restarted) as needed."""
        with self._lock:
            if self.id is not None:
                return self.id
            sweep()
            pool = os.environ.get(ENV_POOL) or identity()
            root = str(self.root)
            argv = [
                "run", "-d", "--name", f"heavygym-{os.getpid()}-{next(_names)}-{os.urandom(3).hex()}",
                "--label", f"{LABEL}={pool}", "--label", f"{WORKER_LABEL}={identity()}",
                "--network", "none", "--read-only",
                "--tmpfs", f"/tmp:rw,nosuid,nodev,size={TMP_MB}m,mode=1777",
                "--memory", f"{self.memory_mb}m", "--memory-swap", f"{self.memory_mb}m",
                "--pids-limit", str(PIDS), "--cpus", str(CPUS),
                "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                "--user", "65534:65534", "--init", "--ipc", "none",  # --init: docker-init reaps orphans
                "-v", f"{root}:{root}:rw",
                *(arg for p in self.expose for arg in ("-v", f"{p}:{p}:ro")),
                *(arg for p in self.shared for arg in ("-v", f"{p}:{p}:rw")),
                "--entrypoint", "sleep", self.image, "infinity",
            ]  # fmt: skip
            done = docker(*argv, check=False)
            if done.returncode != 0:
                raise SandboxError(f"could not start a container of {self.image}: {done.stderr.strip()}")
            self.id = done.stdout.strip()
            found = docker("inspect", "--format", "{{.State.Pid}}", self.id, check=False).stdout.strip()
            pid = int(found) if found.isdigit() and int(found) > 0 else None
            self.cgroup = cgroup_of(self.id, pid) if pid else Cgroup()  # once per container
            # Its pid 1 here, where its cgroup shows the pid is the container's on this host.
            self.pid = pid if self.cgroup != Cgroup() else None
            return self.id

    def empty_tmp(self, user: str) -> None:
        """Empty the warm container's /tmp and /dev/mqueue (`EPISODE_PATHS`): a new episode starts
        (`Sandbox.workdir`) and must find nothing an earlier episode left there. Nothing a gym runs
        keeps anything there between commands (under bwrap /tmp is read-only; an episode's next
        turn may run in another worker's container), so emptying them at any episode's start is
        safe. Where this host sees the container (its pid 1 here, as root) the host removes what
        is there through /proc/PID/root, following no link (`hostfs`): no docker call, and nothing
        to do when they are empty. Otherwise one `docker exec` as `user` (the uid every command
        runs as without root) opens and removes what is there; no capability can be had inside
        (`docker exec --privileged` is refused under no-new-privileges). If they cannot be
        emptied (files of another uid; a process that outlived its episode keeps writing), the
        container is removed: the next command starts a fresh, empty one."""
        cid, pid = self.id, self.pid
        if cid is None:
            return  # no container yet: the next one starts empty
        if pid is not None and _empty_through_proc(pid):
            return
        script = ("find /tmp /dev/mqueue -mindepth 1 -type d -exec chmod u+rwx {} + 2>/dev/null; "
                  "find /tmp /dev/mqueue -mindepth 1 -delete")  # fmt: skip
        try:
            emptied = docker("exec", "-u", user, cid, "sh", "-c", script, timeout=20, check=False).returncode == 0
        except DockerUnavailable:
            emptied = False
        if not emptied:
            self.discard()

    def meter(self) -> Meter:
        """A meter of the running container's usage (`Sandbox.run`, just before a command)."""
        return Meter(self.cgroup)

    def exec_argv(self, argv: Sequence[str], workdir_path: Path, user: str, env: Mapping[str, str],
                  interactive: bool) -> list[str]:  # fmt: skip
        if self.root not in workdir_path.parents:
            raise SandboxError(f"{workdir_path} is not in this pool's directory {self.root} (an episode made by "
                               "another pool, or on another host, cannot go on in this container)")  # fmt: skip
        flags = [arg for k, v in env.items() for arg in ("-e", f"{k}={v}")]
        return [docker_binary(), "exec", *(["-i"] if interactive else []), "-u", user, "-w", str(workdir_path),
                *flags, self.ensure(), *argv]  # fmt: skip

    def kill_runs_of(self, user: str) -> None:
        """After a timeout: kill every process of `user` in the container; remove the container
        if that fails (the next command starts a fresh one)."""
        cid = self.id
        if cid is None:
            return
        try:
            done = docker("exec", "-u", user, cid, "sh", "-c", "kill -KILL -1", timeout=10, check=False)
            if done.returncode in (0, 1):  # 1: nothing left to kill
                return
        except Exception:
            pass
        self.discard()

    def running(self) -> bool:
        if self.id is None:
            return False
        done = docker("inspect", "--format", "{{.State.Running}}", self.id, check=False)
        return done.stdout.strip() == "true"

    def discard(self) -> None:
        """Remove the container (the next command starts another); the work directories stay."""
        with self._lock:
            cid, self.id = self.id, None
            self.cgroup, self.pid = Cgroup(), None
        if cid is not None:
            try:
                _remove([cid])
            except Exception as exc:
                warnings.warn(f"could not remove container {cid[:12]}: {exc}", stacklevel=2)

    def close(self) -> None:
        if self.closed or os.getpid() != self.owner_pid:  # never a parent's container from a fork
            return
        self.closed = True
        self.discard()
        # The pool's directory stays: other containers of the pool mount it (removing it, even
        # empty, would leave their mounts on a deleted directory). It goes when the pool's process
        # exits, or with the next sweep after a kill; the pool removes its workers' directories.


_containers_made: dict[tuple[int, str, tuple[str, ...]], Container] = {}


def container_for(image: str, expose: Sequence[str] = ()) -> Container:
    """This process's container of `image` (one per image and exposed paths), made on first use."""
    key = (os.getpid(), image, tuple(expose))
    found = _containers_made.get(key)
    if found is None or found.closed:
        found = _containers_made[key] = Container(image, expose)
    return found
