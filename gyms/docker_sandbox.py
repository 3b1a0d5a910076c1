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
/tmp                       host /tmp, read-only                 `--tmpfs /tmp` capped at `Limits.file_mb`
memory                     RLIMIT_AS per command                RLIMIT_AS per command (same `prlimit`) and
                                                                `--memory` (= `--memory-swap`) per container
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
answer keys                masked (`hide_from_sandboxes`)       never mounted: the container sees its image
                                                                and the worker's work directories only
=========================  ===================================  ==========================================

Where an episode's files are
----------------------------
A running container cannot gain mounts, so each worker bind-mounts one private directory,
`/dev/shm/heavygym-docker-pid<PID>.<START>-XXXXXXXX` (mode 0711: it cannot be listed inside),
at the same path, and makes its episodes' work directories inside it. Paths therefore mean the
same on both sides (a gym passes host paths in its commands unchanged). This is safe because
the host reads back only through `gyms.hostfs` (no link the container planted is followed, no
FIFO blocks the host, reads are capped), exactly as under bwrap, where the same directory is
bound into the sandbox. As root, each work directory belongs to its own unprivileged uid with
mode 0700 and the commands run as that uid, so an episode cannot enter another's directory.
Without root every command runs as the caller's uid: an episode can read another episode's
directory of the same worker if it guesses its random name (the root cannot be listed).

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
* `Sandbox.run(shared=...)` (a writable compiler cache shared by episodes, Verilator's ccache):
  not mounted; such runs raise `SandboxError`. Icarus runs need none.
* CPU seconds and peak memory of a run are not measured: the host reaps only the `docker exec`
  client. `SandboxRun.cpu_s` reads the wall time (so a kernel SIGKILL at RLIMIT_CPU is still
  told from a crash), `peak_rss_mb` reads 0.
* An episode held open across a worker fault cannot continue on another worker: its files are
  in the dead worker's directory, which the next container does not mount (SandboxError).
* The kernel is shared with the host, as under bwrap: a kernel exploit escapes both.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Mapping, Sequence
from multiprocessing import util
from pathlib import Path

from gyms import hostfs
from gyms.sandbox import ENV_BACKEND, SandboxError, _owner_stamp, _process_start, _runs, remove_workdirs_of, shm_root

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
    if not ids:
        return 0
    docker("rm", "-f", "-v", *ids, check=False)
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
    return removed


def remove_containers_of(pid: int) -> int:
    """Remove the containers that process `pid` (a stopped gym worker) started; how many.
    Only where the docker backend is in use: nothing calls the daemon otherwise."""
    if os.environ.get(ENV_BACKEND) != "docker" or shutil.which("docker") is None:
        return 0
    prefix = f"{socket.gethostname()}/pid{pid}."
    return _remove([cid for cid, labels in _containers(WORKER_LABEL) if labels.get(WORKER_LABEL, "").startswith(prefix)])


# -- the container ------------------------------------------------------------------------------

_names = itertools.count()


class Container:
    """This process's container: started on first use, removed by `close()` (at exit too)."""

    def __init__(self, image: str, expose: Sequence[str] = ()) -> None:
        problem = daemon_problem()
        if problem is not None:
            raise SandboxError(problem)
        labels = image_labels(image)
        if labels is None:
            raise SandboxError(f"the docker image {image!r} is missing: build it with `harness images build GYM`")
        self.memory_mb = int(os.environ.get("HEAVYGYM_DOCKER_MEMORY_MB") or labels.get(MEMORY_LABEL) or MEMORY_MB)
        self.image = image
        self.expose = tuple(expose)
        self.owner_pid = os.getpid()
        self.root = Path(tempfile.mkdtemp(prefix=f"heavygym-docker-{_owner_stamp()}-", dir=shm_root()))
        os.chmod(self.root, 0o711)  # traversable, not listable, inside
        self.id: str | None = None
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
                "--entrypoint", "sleep", self.image, "infinity",
            ]  # fmt: skip
            done = docker(*argv, check=False)
            if done.returncode != 0:
                raise SandboxError(f"could not start a container of {self.image}: {done.stderr.strip()}")
            self.id = done.stdout.strip()
            return self.id

    def exec_argv(self, argv: Sequence[str], workdir_path: Path, user: str, env: Mapping[str, str],
                  interactive: bool) -> list[str]:  # fmt: skip
        if self.root not in workdir_path.parents:
            raise SandboxError(f"{workdir_path} is not in this worker's container (a work directory of another "
                               "worker: an episode held across a worker fault cannot go on under docker)")  # fmt: skip
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
        try:
            hostfs.remove_tree(self.root)
        except OSError:
            pass


_containers_made: dict[tuple[int, str, tuple[str, ...]], Container] = {}


def container_for(image: str, expose: Sequence[str] = ()) -> Container:
    """This process's container of `image` (one per image and exposed paths), made on first use."""
    key = (os.getpid(), image, tuple(expose))
    found = _containers_made.get(key)
    if found is None or found.closed:
        found = _containers_made[key] = Container(image, expose)
    return found
