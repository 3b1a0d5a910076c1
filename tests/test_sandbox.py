"""Adversarial tests of the sandbox: one property each, under bwrap (the default backend)."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from gyms import sandbox as sandbox_module
from gyms.sandbox import Limits, Sandbox, SandboxError, hide_from_sandboxes, kill_uid

PY = sys.executable


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox("bwrap")  # raises, never skips, where bwrap cannot run


@pytest.fixture
def workdir(sandbox: Sandbox):
    with sandbox.workdir() as wd:
        yield wd


def python(code: str) -> list[str]:
    return [PY, "-c", code]


def processes_with(token: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if token in Path(entry.path, "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_runs_a_command_in_its_workdir(sandbox, workdir):
    result = sandbox.run(python("import os; open('out.txt', 'w').write('hi'); print(os.getcwd())"), workdir)
    assert result.ok, result.output
    assert result.stdout.strip() == str(workdir.path)
    assert (workdir.path / "out.txt").read_text() == "hi"
    assert result.cpu_s > 0 and result.peak_rss_mb > 0


def test_no_network_not_even_the_hosts_loopback(sandbox, workdir):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.5)
    port = server.getsockname()[1]
    code = f"""
import socket
for addr in [("127.0.0.1", {port}), ("1.1.1.1", 53)]:
    try:
        socket.create_connection(addr, timeout=1)
        print("CONNECTED", addr)
    except OSError as exc:
        print("blocked", addr, exc)
"""
    result = sandbox.run(python(code), workdir)
    assert "CONNECTED" not in result.stdout and result.stdout.count("blocked") == 2, result.output
    with pytest.raises(socket.timeout):
        server.accept()
    server.close()


def test_no_write_outside_the_workdir(sandbox, workdir, tmp_path):
    outside = [Path.cwd() / f"escape-{uuid.uuid4().hex}", Path("/tmp") / f"escape-{uuid.uuid4().hex}",
               Path("/dev/shm") / f"escape-{uuid.uuid4().hex}", tmp_path / "escape"]  # fmt: skip
    code = "import sys\nfor p in sys.argv[1:]:\n    try: open(p, 'w').write('x')\n    except OSError as e: print(e)"
    result = sandbox.run([PY, "-c", code, *map(str, outside)], workdir)
    assert result.returncode == 0, result.output
    assert not any(p.exists() for p in outside)


def test_other_workdirs_are_hidden(sandbox, workdir):
    with sandbox.workdir() as other:
        (other.path / "secret").write_text("s")
        result = sandbox.run(["ls", str(other.path)], workdir)
    assert "secret" not in result.stdout
    assert result.returncode != 0


def test_fork_bomb_is_contained(sandbox, workdir):
    code = """
import os, time
n = 0
try:
    while n < 10000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as exc:
    print("stopped after", n, exc.errno)
"""
    limits = Limits(processes=32, wall_s=20)
    result = sandbox.run(python(code), workdir, limits=limits)
    assert "stopped after" in result.stdout, result.output
    assert int(result.stdout.split()[2]) < limits.processes
    assert result.wall_s < 15  # the children's sleep did not hold the run


def test_memory_hog_is_stopped(sandbox, workdir):
    result = sandbox.run(python("x = bytearray(4 * 2**30); print('allocated')"), workdir,
                         limits=Limits(memory_mb=512))  # fmt: skip
    assert result.returncode != 0
    assert "allocated" not in result.stdout
    assert "MemoryError" in result.stderr


def test_output_flood_is_capped(sandbox, workdir):
    cap = 4096
    result = sandbox.run(python("import sys\nfor _ in range(200000): sys.stdout.write('flood ' * 10 + '\\n')\nprint('END')"),
                         workdir, limits=Limits(output_bytes=cap))  # fmt: skip
    assert result.truncated
    assert len(result.stdout) < cap + 200  # head + tail + the marker line
    assert "bytes of output dropped" in result.stdout
    assert result.stdout.rstrip().endswith("END")  # the tail is kept


def test_infinite_loop_is_killed_at_the_wall_timeout(sandbox, workdir):
    result = sandbox.run(["sh", "-c", "while :; do sleep 0.01; done"], workdir, limits=Limits(wall_s=1))
    assert result.killed == "timeout"
    assert 1 <= result.wall_s < 4


def test_cpu_limit(sandbox, workdir):
    result = sandbox.run(python("while True: pass"), workdir, limits=Limits(cpu_s=1, wall_s=10))
    assert result.killed == "cpu-limit"  # not "timeout": the 10 s wall limit never fired


def test_file_size_limit(sandbox, workdir):
    # Python ignores SIGXFSZ and sees EFBIG; a shell is killed by the signal.
    written = sandbox.run(python("open('big', 'wb').write(b'0' * 20 * 2**20)"), workdir, limits=Limits(file_mb=1))
    assert written.returncode != 0 and "File too large" in written.stderr
    assert (workdir.path / "big").stat().st_size <= 2**20
    shell = sandbox.run(["sh", "-c", "head -c 20000000 /dev/zero > big2"], workdir, limits=Limits(file_mb=1))
    assert shell.killed == "file-size-limit"


def test_no_process_left_behind(sandbox, workdir):
    token = f"heavygym-leftover-{uuid.uuid4().hex}"
    code = f"""
import subprocess, time
children = [subprocess.Popen(["sh", "-c", "sleep 300; : {token}"]),
            subprocess.Popen(["sh", "-c", "sleep 300; : {token}"], start_new_session=True)]
time.sleep(0.3)
print("running:", sum(c.poll() is None for c in children))
"""
    result = sandbox.run(python(code), workdir, limits=Limits(wall_s=5))
    assert "running: 2" in result.stdout, result.output
    assert processes_with(token) == []


def test_no_process_left_behind_after_a_timeout(sandbox, workdir):
    token = f"heavygym-leftover-{uuid.uuid4().hex}"
    code = f"import subprocess, time\nsubprocess.Popen(['sh', '-c', 'sleep 300; : {token}'])\ntime.sleep(300)"
    result = sandbox.run(python(code), workdir, limits=Limits(wall_s=1))
    assert result.killed == "timeout"
    assert processes_with(token) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a sandbox uid of its own needs a root host")
def test_root_host_runs_programs_under_an_unprivileged_uid(sandbox, workdir):
    result = sandbox.run(python("import os; print(os.getuid(), os.geteuid())"), workdir)
    uid, euid = map(int, result.stdout.split())
    assert uid == euid == workdir.uid and uid != 0
    assert kill_uid(uid) == 0


def test_process_backend_keeps_limits_and_timeouts():
    sandbox = Sandbox("process")
    with sandbox.workdir() as wd:
        assert wd.uid is None
        looped = sandbox.run(["sh", "-c", "while :; do :; done"], wd, limits=Limits(wall_s=1))
        flooded = sandbox.run(["sh", "-c", "yes | head -c 1000000"], wd, limits=Limits(output_bytes=1000))
    assert looped.killed == "timeout"
    assert flooded.truncated and len(flooded.stdout) < 1200


def test_unknown_backend_is_a_clear_error(monkeypatch):
    with pytest.raises(ValueError, match="unknown sandbox backend 'vm'; use bwrap, docker, process"):
        Sandbox("vm")
    monkeypatch.setenv("HEAVYGYM_SANDBOX", "vm")  # what --sandbox and use_backend set
    with pytest.raises(ValueError, match="unknown sandbox backend 'vm'"):
        Sandbox()


def test_docker_without_an_image_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("HEAVYGYM_SANDBOX_IMAGE", raising=False)
    with pytest.raises(SandboxError, match="harness images build"):
        Sandbox("docker")


def test_shared_directory_is_writable_inside(sandbox, workdir):
    # Not under pytest's tmp_path: its parents are private (mode 700) to the sandbox uid.
    cache = Path(tempfile.mkdtemp(prefix="heavygym-test-cache-"))
    cache.chmod(0o1777)
    try:
        result = sandbox.run(["sh", "-c", f"echo cached > {cache}/entry"], workdir, shared=[cache])
        assert result.ok, result.output
        assert (cache / "entry").read_text() == "cached\n"
    finally:
        shutil.rmtree(cache)


def test_sandboxed_python_is_the_hosts_interpreter(sandbox, workdir):
    # Private ancestors of the interpreter (such as /root) must not push Python onto another stdlib.
    result = sandbox.run(python("import os, sys; print(sys.prefix, os.__file__)"), workdir)
    assert result.ok, result.output
    assert result.stdout.split() == [sys.prefix, os.__file__]


def test_hidden_paths_never_enter_the_sandbox(sandbox, workdir, tmp_path):
    """Answer keys kept on the host (a dataset's references, a gym's task files) read as absent."""
    keys = Path(tempfile.mkdtemp(prefix="heavygym-keys-", dir="/tmp"))
    try:
        keys.chmod(0o755)
        (keys / "expected.hex").write_text("SECRET-A\n")
        reference = keys / "ref.sv"
        reference.write_text("SECRET-B\n")
        for path in keys.iterdir():
            path.chmod(0o644)
        show = ["sh", "-c", f"cat {keys}/expected.hex {reference}; ls -A {keys}; touch {keys}/planted"]
        assert "SECRET-A" in sandbox.run(show, workdir).stdout  # readable unless hidden
        one = Sandbox(hide=[reference]).run(show, workdir)
        assert "SECRET-A" in one.stdout and "SECRET-B" not in one.output
        hide_from_sandboxes(keys)
        try:
            everywhere = Sandbox().run(show, workdir)
        finally:
            sandbox_module._hidden.discard(str(keys))
        assert "SECRET" not in everywhere.output and "expected.hex" not in everywhere.stdout
        assert not (keys / "planted").exists()
    finally:
        shutil.rmtree(keys)
