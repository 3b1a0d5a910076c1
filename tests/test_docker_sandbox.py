"""The docker sandbox backend on a real daemon (gyms/docker_sandbox.py): the verilog gym passes its
check in it, and each of bwrap's guarantees holds in the container (no network, read-only root,
memory and pids limits, the wall timeout, no leftover containers, no answer keys).

Docker is an optional extra; tests/dockerd.py says how these tests find a daemon and images.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from dockerd import REPO, daemon, gym_image  # noqa: F401  (daemon: a fixture)
from gyms import docker_sandbox
from gyms.sandbox import ENV_BACKEND, ENV_IMAGE, Limits, Sandbox, SandboxError


@pytest.fixture(scope="module")
def image(request) -> str:
    request.getfixturevalue("daemon")
    return gym_image("verilog")


@pytest.fixture(scope="module")
def shared_dir():
    """A directory as Verilator's compiler cache is: mode 1777, reachable by sandbox uids."""
    path = Path(tempfile.mkdtemp(prefix="heavygym-test-cache-", dir="/var/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path)


@pytest.fixture(scope="module")
def sandbox(image, shared_dir):
    box = Sandbox("docker", image=image, expose=[shared_dir])  # mounted read-only in its container
    yield box
    box.container.close()


@pytest.fixture
def workdir(sandbox):
    with sandbox.workdir() as wd:
        yield wd


def run(sandbox: Sandbox, workdir, script: str, **limits):
    return sandbox.run(["sh", "-c", script], workdir, limits=Limits(**limits) if limits else None)


def heavygym_containers() -> dict[str, dict[str, str]]:
    return {cid: labels for cid, labels in docker_sandbox._containers(docker_sandbox.LABEL)}


# -- the gym -------------------------------------------------------------------------------------


def harness(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; sys.argv[0] = 'harness'; from harness.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env}, timeout=600)  # fmt: skip


@pytest.mark.slow
def test_the_verilog_check_passes_on_docker(image):
    done = harness("gyms", "check", "verilog", "--sandbox", "docker", "--limit", "2", "--gym-workers", "1", "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] and report["violations"] == 0
    labels = {c["label"] for c in report["checks"]}
    assert {"reference", "never-finishes", "syntax-error"} <= labels  # a pass, a timeout and a fail ran


def test_a_step_runs_in_the_container(image, tmp_path):
    from gyms.registry import make

    gym = make("verilog")
    task = next(t for t in gym.tasks("train") if t.id == "verilog/combinational/mux4")
    answer = tmp_path / "answer.md"
    answer.write_text(next(c.action for c in gym.candidates(task, random.Random(0)) if c.label == "reference"))
    done = harness("gyms", "step", "verilog", "--task", "verilog/combinational/mux4", "--answer-file", str(answer),
                   "--sandbox", "docker", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    step = json.loads(done.stdout)["steps"][0]
    assert step["info"]["workdir"].startswith("/dev/shm/heavygym-docker-"), step["info"]  # a docker worker's directory
    assert step["outcome"] == "pass" and step["info"]["stage"] == "simulate", step  # it ran the simulator


def test_an_unusable_choice_is_one_error_line(image):
    unknown = harness("gyms", "check", "verilog", "--sandbox", "dockr", "--limit", "1")
    assert unknown.returncode == 2 and unknown.stderr.strip().startswith("error:") and "bwrap, docker, process" in unknown.stderr
    nowhere = harness("gyms", "check", "verilog", "--sandbox", "docker", "--limit", "1", DOCKER_HOST="unix:///nonexistent.sock")
    assert nowhere.returncode == 2 and len(nowhere.stderr.strip().splitlines()) == 1
    assert "start one" in nowhere.stderr and "DOCKER_HOST" in nowhere.stderr


# -- the guarantees ------------------------------------------------------------------------------


def test_no_network_inside(sandbox, workdir):
    done = run(sandbox, workdir, "ls /sys/class/net; cat /proc/net/route")
    assert done.ok, done.output
    interfaces = set(done.stdout.split()[: done.stdout.split().index("Iface")])
    assert interfaces == {"lo"}, done.stdout


def test_a_read_only_root_a_writable_workdir_and_tmp_and_no_root(sandbox, workdir):
    done = run(sandbox, workdir, "for p in /var/tmp/x /etc/x /usr/x /x; do touch $p 2>/dev/null && echo wrote $p; done; "
                                 "touch /tmp/ok && echo tmp; touch here && echo here; id -u")  # fmt: skip
    assert "wrote" not in done.stdout, done.output
    assert "tmp" in done.stdout and "here" in done.stdout, done.output
    assert done.stdout.split()[-1] != "0"
    status = run(sandbox, workdir, "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status")
    fields = dict(line.split(":\t") for line in status.stdout.splitlines())
    assert int(fields["CapEff"], 16) == 0 and fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2", fields


def test_a_shared_directory_is_writable_in_a_run_of_its_own_and_read_only_to_the_others(sandbox, workdir, shared_dir):
    """Verilator's compiler cache: the trusted warm-up writes it (`run(shared=...)`, a container of
    its own that mounts it writable, removed after the run), answers' builds read it where the
    sandbox exposes it (the worker's container mounts it read-only), as under bwrap."""
    def mine() -> set[str]:  # this process's containers
        return {cid for cid, labels in heavygym_containers().items()
                if labels[docker_sandbox.LABEL] == docker_sandbox.identity()}  # fmt: skip

    sandbox.container.ensure()
    before = mine()
    wrote = sandbox.run(["sh", "-c", f"echo warm > {shared_dir}/entry"], workdir, shared=[shared_dir])
    assert wrote.ok, wrote.output
    assert (shared_dir / "entry").read_text() == "warm\n"
    assert mine() == before, "the shared run's container outlived its run"
    read = run(sandbox, workdir, f"cat {shared_dir}/entry; echo poison > {shared_dir}/poison")
    assert read.stdout == "warm\n" and "Read-only file system" in read.stderr, read.output
    assert not (shared_dir / "poison").exists()


def test_the_pids_limit_stops_a_fork_bomb(sandbox, workdir):
    # RLIMIT_NPROC far above the container's --pids-limit (256): only the container's limit stops it.
    done = run(sandbox, workdir, "i=0; while [ $i -lt 2000 ]; do sleep 30 & i=$((i+1)); done; echo spawned $i",
               wall_s=20, processes=5000)  # fmt: skip
    assert "spawned 2000" not in done.stdout, done.output
    assert "fork" in done.stderr.lower() or done.killed is not None, done.output
    # The bomb's processes are gone, zombies included: a command can fork again.
    after = run(sandbox, workdir, "true | true && echo forked; ls -d /proc/[0-9]* | wc -l")
    assert after.stdout.split()[0] == "forked", after.output
    assert int(after.stdout.split()[1]) < 10, after.stdout


def test_memory_limits_stop_an_allocation(sandbox, workdir):
    # tail keeps a line without a newline in memory: 3 GB of zeros is a 3 GB allocation.
    allocate = "head -c 3000m /dev/zero | tail >/dev/null; echo status $?"
    by_rlimit = run(sandbox, workdir, allocate, memory_mb=256, wall_s=30)
    assert by_rlimit.stdout.strip() == "status 1" and "memory exhausted" in by_rlimit.stderr, by_rlimit.output
    # No RLIMIT_AS: the container's --memory (2 GB by default) stops it: the kernel's OOM kill.
    by_cgroup = run(sandbox, workdir, allocate, memory_mb=None, wall_s=60)
    assert by_cgroup.stdout.strip() == "status 137", by_cgroup.output
    assert run(sandbox, workdir, "true | true && echo alive").stdout.strip() == "alive"


def test_the_wall_timeout_kills_a_spinning_answer_inside(sandbox, workdir):
    done = run(sandbox, workdir, "while :; do :; done # spinner-marker", wall_s=1.5, cpu_s=100)
    assert done.killed == "timeout" and not done.ok
    time.sleep(0.2)
    left = run(sandbox, workdir, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
    assert "spinner-marker" not in left.stdout, left.stdout


def test_output_is_capped(sandbox, workdir):
    done = run(sandbox, workdir, "head -c 1000000 /dev/zero | tr '\\0' x")
    assert done.truncated and len(done.stdout) < 100_000


def test_answer_keys_are_not_in_the_container(sandbox, workdir):
    from gyms.registry import make

    keys = [str(k) for k in make("verilog").answer_keys() if Path(k).exists()]
    assert keys, "the verilog gym's answer keys exist on the host"
    secret = Path("/tmp") / f"heavygym-secret-{os.getpid()}"
    secret.write_text("the answer")
    try:
        # The project's own files, not its directory: an image may stage the host's virtual
        # environment at its path, inside the project (the verilog image does, for cocotb).
        project = [str(REPO / "gyms"), str(REPO / "tests")]
        done = run(sandbox, workdir, " ".join(f"ls -d '{p}' 2>/dev/null;" for p in [*keys, str(secret), *project]))
    finally:
        secret.unlink()
    assert done.stdout.strip() == "", done.stdout


def test_a_command_outside_the_workers_directory_is_refused(sandbox):
    from gyms.sandbox import Workdir

    with Workdir("heavygym-elsewhere-") as elsewhere:
        with pytest.raises(SandboxError, match="not in this pool's directory"):
            sandbox.run(["true"], elsewhere)


# -- no container outlives its pool ------------------------------------------------------------


def test_a_killed_worker_leaves_no_container(image, monkeypatch):
    from gyms.base import Outcome
    from gyms.pool import GymPool
    from gyms.registry import make

    monkeypatch.setenv(ENV_BACKEND, "docker")
    monkeypatch.setenv(ENV_IMAGE, image)
    gym = make("verilog")
    task = gym.tasks("train")[0]
    reference = next(c for c in gym.candidates(task, random.Random(0)) if c.label == "reference")
    me = docker_sandbox.identity()
    with GymPool(1, step_timeout_s=60, answer_keys=gym.answer_keys()) as pool:
        assert pool.step(gym.open(task), reference.action).result.outcome is Outcome.PASS
        mine = {cid: labels for cid, labels in heavygym_containers().items()  # the worker's, not this process's
                if labels[docker_sandbox.LABEL] == me and labels[docker_sandbox.WORKER_LABEL] != me}  # fmt: skip
        assert len(mine) == 1, heavygym_containers()
        worker = next(iter(mine.values()))[docker_sandbox.WORKER_LABEL]
        pid = int(worker.rpartition("/pid")[2].split(".")[0])
        os.kill(pid, signal.SIGKILL)
        pool.step(gym.open(task), reference.action)  # finds the worker dead and replaces it
        assert not [cid for cid, labels in heavygym_containers().items()
                    if labels[docker_sandbox.WORKER_LABEL] == worker]  # fmt: skip
    assert not [cid for cid, labels in heavygym_containers().items()
                if labels[docker_sandbox.LABEL] == me and labels[docker_sandbox.WORKER_LABEL] != me]  # fmt: skip


def test_a_multi_turn_episode_goes_on_in_another_workers_container(image, monkeypatch):
    """An episode's work directory is in its pool's directory, which every worker's container
    mounts: its second turn runs after the worker of its first was killed (it used to be an
    infrastructure error whenever the turn landed on another worker)."""
    from gyms.base import Outcome
    from gyms.pool import GymPool
    from gyms.registry import make

    monkeypatch.setenv(ENV_BACKEND, "docker")
    monkeypatch.setenv(ENV_IMAGE, image)
    gym = make("verilog", max_turns=3)
    task = next(t for t in gym.tasks("train") if t.id == "verilog/combinational/mux4")
    candidates = {c.label: c.action for c in gym.candidates(task, random.Random(0))}
    me = docker_sandbox.identity()
    with GymPool(1, step_timeout_s=60, answer_keys=gym.answer_keys()) as pool:
        first = pool.step(gym.open(task), candidates["mutant:off-by-one#0"])  # simulated: the container starts
        assert first.result.outcome is Outcome.FAIL and not first.result.done, first.result
        worker = next(labels[docker_sandbox.WORKER_LABEL] for labels in heavygym_containers().values()
                      if labels[docker_sandbox.LABEL] == me and labels[docker_sandbox.WORKER_LABEL] != me)  # fmt: skip
        os.kill(int(worker.rpartition("/pid")[2].split(".")[0]), signal.SIGKILL)
        pool.step(gym.open(task), candidates["reference"]).episode.close()  # finds the worker dead, replaces it
        second = pool.step(first.episode, candidates["reference"])  # on the replacement worker
        assert second.result.outcome is Outcome.PASS, second.result.observation[-500:]
        second.episode.close()
    assert not os.listdir(docker_sandbox.pool_dir(create=False))  # every episode's directory went with the pool


def test_start_up_sweeps_the_containers_of_a_killed_pool(image):
    script = textwrap.dedent(f"""
        import os, sys, time
        from gyms.sandbox import Sandbox
        box = Sandbox("docker", image={image!r})
        with box.workdir() as wd:
            box.run(["true"], wd)
        print(box.container.id, flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    try:
        cid = proc.stdout.readline().strip()
        assert cid in heavygym_containers()
    finally:
        proc.kill()  # like a trainer killed outright: no finalizer runs
        proc.wait()
    assert cid in heavygym_containers(), "the killed process could not remove its container"
    left = [p for p in os.listdir("/dev/shm") if p.startswith(f"heavygym-docker-pid{proc.pid}.")]
    assert left, "the killed process left its work directory"
    assert docker_sandbox.sweep() >= 1
    assert cid not in heavygym_containers()
    assert not [p for p in os.listdir("/dev/shm") if p.startswith(f"heavygym-docker-pid{proc.pid}.")]


def test_the_run_record_names_the_backend_and_the_image(image, monkeypatch):
    from harness import sandboxes

    monkeypatch.setenv(ENV_BACKEND, "bwrap")  # restored after the test
    monkeypatch.setenv(ENV_IMAGE, "")
    assert sandboxes.record() == {"backend": "bwrap"}
    sandboxes.choose("docker", "verilog")
    recorded = sandboxes.record()
    assert recorded["backend"] == "docker" and recorded["image"] == image
    assert recorded["id"] == docker_sandbox.image_id(image) and recorded["id"].startswith("sha256:")


def test_the_verilog_attacks_fail_on_docker(image, monkeypatch):
    """The verilog gym's attacks on the built-in tasks (gyms/verilog/attacks.py), through a GymPool whose
    worker runs them in its container: each a fail, verdicts unaffected after, nothing left behind."""
    from attacks import assert_suite_holds

    from gyms.verilog.gym import VerilogGym

    monkeypatch.setenv(ENV_BACKEND, "docker")
    monkeypatch.setenv(ENV_IMAGE, image)
    gym = VerilogGym(tasks="adder8", sim_timeout_s=2)
    hacks, _ = gym.attack_suites()
    assert_suite_holds(gym, hacks)
    # The worker's container went with the pool; only this process's own may stay (removed at its
    # exit). Other test processes' containers (another module beside this one) are not this pool's.
    me = docker_sandbox.identity()
    left = {cid: labels for cid, labels in heavygym_containers().items()
            if labels[docker_sandbox.LABEL] == me and labels[docker_sandbox.WORKER_LABEL] != me}  # fmt: skip
    assert not left, left


@pytest.mark.skipif(os.geteuid() != 0, reason="work directories of uids of their own need a root host")
def test_an_episode_cannot_enter_another_episodes_directory(sandbox):
    with sandbox.workdir() as mine, sandbox.workdir() as other:
        from gyms import hostfs

        hostfs.write_file(other.path, "design.sv", "the other episode's answer")
        done = run(sandbox, mine, f"cat '{other.path}/design.sv'; ls '{other.path}'; ls '{sandbox.container.root}'")
        assert "answer" not in done.stdout and "design.sv" not in done.stdout, done.output
        assert "Permission denied" in done.stderr, done.output


# -- what a run used: the container's cgroup ----------------------------------------------------

# dash's loop of builtins: all its CPU time is the shell's own, which `times` then prints.
SPIN = "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done"


def reported_cpu_s(times_output: str) -> float:
    """The sum of dash's `times` lines ("0m1.23s 0m0.01s"): the command's own CPU time."""
    total = 0.0
    for field in times_output.split():
        minutes, _, seconds = field.rstrip("s").partition("m")
        total += 60 * int(minutes) + float(seconds)
    return total


@pytest.mark.parametrize("way", ["host", "docker exec"])
def test_each_episode_starts_with_an_empty_tmp_in_the_warm_container(sandbox, way, monkeypatch):
    """What one episode leaves in the warm container's /tmp (a file, a hidden one, a directory of
    mode 0 with a file in it) and /dev/mqueue (a queue) is gone when the next episode starts:
    emptied by the host through the container's /proc/PID/root (as root here), or, where the host
    cannot see it, by a `docker exec`, or else by replacing the container."""
    with sandbox.workdir() as first:
        left = run(sandbox, first, "echo secret > /tmp/left; echo x > /tmp/.hidden; mkdir -p /tmp/d/e; "
                                   "echo y > /tmp/d/e/f; chmod 0 /tmp/d; : > /dev/mqueue/q; echo $HOME $TMPDIR; "
                                   "ls -A /tmp /dev/mqueue")  # fmt: skip
        assert left.ok and left.stdout.split()[2:] == ["/dev/mqueue:", "q", "/tmp:", ".hidden", "d", "left"], left.output
        assert left.stdout.split()[:2] == [str(first.path)] * 2  # HOME and TMPDIR: the episode's own directory
        container = sandbox.container.id
        if way == "docker exec":
            monkeypatch.setattr(docker_sandbox, "_empty_through_proc", lambda pid: False)  # as where the host cannot
    with sandbox.workdir() as second:
        seen = run(sandbox, second, "ls -A /tmp /dev/mqueue .; echo end")
        assert seen.ok and seen.stdout.split() == [".:", "/dev/mqueue:", "/tmp:", "end"], seen.output
        if way == "host":
            assert sandbox.container.id == container, "the warm container was replaced, not emptied"
        assert not first.path.exists()


def test_an_empty_tmp_costs_no_docker_call(sandbox, workdir, monkeypatch):
    assert run(sandbox, workdir, "ls -A /tmp").stdout == ""
    if sandbox.container.pid is None:
        pytest.skip("this host cannot see the container's /tmp (its cgroup is out of reach)")
    calls = []
    monkeypatch.setattr(docker_sandbox, "docker", lambda *args, **kw: calls.append(args))
    sandbox.container.empty_tmp("65534:65534")
    assert calls == []


def test_cpu_seconds_are_the_containers(sandbox, workdir):
    spin = run(sandbox, workdir, f"{SPIN}; times", wall_s=60)
    assert spin.ok and spin.cpu_measured, spin
    own = reported_cpu_s(spin.stdout)
    # The cgroup's figure is the command's own CPU time plus the exec's start (runc, prlimit, sh).
    assert spin.cpu_s >= 0.5 and own - 0.05 <= spin.cpu_s <= own + 0.3, (spin.cpu_s, own, spin.wall_s)
    sleep = run(sandbox, workdir, "sleep 1")
    assert sleep.ok and sleep.cpu_measured and sleep.wall_s >= 1 and sleep.cpu_s < 0.3, sleep


def test_peak_memory_is_the_runs_not_the_containers(sandbox, workdir):
    # tail keeps a line without a newline in memory: 200 MB of zeros, touched.
    big = run(sandbox, workdir, "head -c 200m /dev/zero | tail >/dev/null", wall_s=60)
    assert big.ok and big.peak_rss_mb >= 150, big
    tiny = run(sandbox, workdir, "true")  # the high-water mark was reset before it
    assert tiny.ok and 0 < tiny.peak_rss_mb < 50, tiny


def test_a_cpu_limit_kill_reads_as_such(sandbox, workdir):
    done = run(sandbox, workdir, "while :; do :; done", cpu_s=1, wall_s=20)
    assert done.returncode == -signal.SIGKILL and done.wall_s < 15, done  # RLIMIT_CPU's kill, not the timeout
    assert done.killed == "cpu-limit", done  # `_limit_hit`: a SIGKILL after half the limit's CPU time
    assert done.cpu_measured and 0.5 <= done.cpu_s < 3, done


def test_without_the_cgroup_the_figures_read_as_not_measured(sandbox, workdir):
    sandbox.container.ensure()
    found = sandbox.container.cgroup
    assert found.cpu is not None and sandbox.container.id in str(found.cpu), found  # this host can read it
    sandbox.container.cgroup = docker_sandbox.Cgroup()  # as where the daemon's cgroups are out of reach
    try:
        blind = run(sandbox, workdir, SPIN, wall_s=60)
    finally:
        sandbox.container.cgroup = found
    assert blind.ok and not blind.cpu_measured and blind.cpu_s == blind.wall_s and blind.peak_rss_mb == 0, blind
    # A restarted container's cgroup is found afresh.
    sandbox.container.discard()
    again = run(sandbox, workdir, "true")
    assert again.cpu_measured and again.peak_rss_mb > 0, again
    assert sandbox.container.cgroup != found and sandbox.container.id in str(sandbox.container.cgroup.cpu)
