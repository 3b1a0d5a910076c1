"""The host touches nothing outside a work directory, whatever sandboxed code planted in it.

Real sandboxed code (bwrap, a sandbox uid of its own) plants links, FIFOs, sockets, hard links
and deep trees in a real work directory; the host then does what gyms do between turns, and
every file and directory outside the work directory keeps its mode, owner, size, mtime and
contents.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from gyms import hostfs
from gyms.sandbox import Limits, Sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a sandbox uid of its own needs a root host")

LIMIT = 4096


@pytest.fixture
def canary():
    """Host files and directories that links will point at: root's, and one world-writable file
    (the one file `fs.protected_hardlinks` would let the sandbox uid link)."""
    root = Path(tempfile.mkdtemp(prefix="heavygym-canary-", dir="/tmp"))
    root.chmod(0o755)
    (root / "dir").mkdir(mode=0o755)
    (root / "dir" / "inside.txt").write_text("inside\n")
    (root / "file.txt").write_text("canary\n")
    (root / "open.txt").write_text("world-writable\n")
    (root / "open.txt").chmod(0o666)
    try:
        yield root
    finally:
        shutil.rmtree(root)


def snapshot(canary: Path) -> dict[str, tuple]:
    """Mode, owner, size, mtime, link count and content digest of everything in the canary
    tree, and of /etc and its entries (contents: /etc/passwd only)."""
    seen = {}
    for path in [canary, *canary.rglob("*"), Path("/etc"), *Path("/etc").iterdir()]:
        st = path.lstat()
        regular = stat.S_ISREG(st.st_mode) and (path.is_relative_to(canary) or path == Path("/etc/passwd"))
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if regular else ""
        seen[str(path)] = (st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, st.st_nlink, digest)
    return seen


def plant(sandbox: Sandbox, workdir, canary: Path) -> str:
    """Run the attacker's shell in the sandbox; returns its output (the hard-link attempts)."""
    script = f"""
set -u
cd turn-1
ln -s {canary}/file.txt log.txt            # the host will write its log here
ln -s {canary}/dir notes                   # ... and a file below this
ln -s /etc/passwd out.txt                  # the host will read the answer's output here
ln -s /etc sub
mkfifo fifo                                # a read that would block forever
mkfifo fifo-log
echo real > real.txt
ln real.txt twin.txt                       # two names, one inode
head -c {LIMIT + 1} /dev/zero > big.bin
cd ..
ln -s {canary}/dir turn-2                  # in place of the next turn's directory
ln -s {canary} everything                  # for the clean-up to follow
ln -s {canary}/file.txt file-link
ln {canary}/open.txt hard-open && echo linked-open || echo no-hard-link-open
ln {canary}/file.txt hard-root && echo linked-root || echo no-hard-link-root
mkdir -p locked/inner && echo x > locked/inner/f && chmod 000 locked/inner locked
"""
    result = sandbox.run(["sh", "-c", script], workdir)
    assert result.returncode == 0, result.output
    deep = "import os\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\nos.symlink('/etc', 'etc')\n"
    nested = sandbox.run([sys.executable, "-c", deep], workdir, limits=Limits(wall_s=60))
    assert nested.returncode == 0, nested.output
    sock = "import socket; socket.socket(socket.AF_UNIX).bind('turn-1/sock')"
    assert sandbox.run([sys.executable, "-c", sock], workdir).returncode == 0
    return result.stdout


def finishes(fn, *args) -> object:
    """Run `fn` in a thread and return what it returned or raised; fail if it blocks (a FIFO)."""
    outcome: list = []

    def call() -> None:
        try:
            outcome.append(fn(*args))
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(timeout=30)  # a generous bound, only so that a hang fails instead of hanging the suite
    assert not thread.is_alive(), f"{fn.__name__}{args[1:]} blocked"
    return outcome[0]


def test_what_the_host_does_changes_nothing_outside_the_workdir(canary):
    sandbox = Sandbox("bwrap")
    workdir = sandbox.workdir(prefix="heavygym-hostfs-test-")
    root = workdir.path
    try:
        hostfs.make_dir(root, "turn-1", uid=workdir.uid)
        before = snapshot(canary)
        said = plant(sandbox, workdir, canary)
        # Mounts stop hard links to anything outside the work directory, even a world-writable file.
        assert "no-hard-link-open" in said and "no-hard-link-root" in said, said

        # What gyms do between turns, each call bounded so that a blocking one fails the test.
        done = {
            "log": finishes(hostfs.write_file, root, "turn-1/log.txt", "the host's log\n"),
            "fifo-log": finishes(hostfs.write_file, root, "turn-1/fifo-log", "log\n"),
            "notes": finishes(hostfs.write_file, root, "turn-1/notes/x", "x"),
            "turn-2": finishes(hostfs.make_dir, root, "turn-2", workdir.uid),
            **{planted: finishes(hostfs.read_text, root, f"turn-1/{planted}", LIMIT)
               for planted in ["out.txt", "sub/passwd", "fifo", "twin.txt", "sock", "big.bin", "missing"]},
            "no-such-dir": finishes(hostfs.read_text, root, "no-such-dir/missing", LIMIT),
            "removed-link": finishes(hostfs.remove, root, "file-link"),
            "removed-through-link": finishes(hostfs.remove, root, "everything/file.txt"),
        }  # fmt: skip
        assert snapshot(canary) == before
        assert done["log"] == root / "turn-1/log.txt" and done["fifo-log"] == root / "turn-1/fifo-log"
        assert done["turn-2"] == root / "turn-2"
        refused = ["notes", "out.txt", "sub/passwd", "fifo", "twin.txt", "sock", "removed-through-link"]
        assert {name: type(done[name]) for name in refused} == dict.fromkeys(refused, hostfs.UnsafePath)
        assert isinstance(done["big.bin"], hostfs.TooLarge)
        assert done["missing"] is None and done["no-such-dir"] is None
        assert done["removed-link"] is None and not os.path.lexists(root / "file-link")

        # What the host made is what it asked for, not the links' targets.
        log = (root / "turn-1/log.txt").lstat()
        assert stat.S_ISREG(log.st_mode) and stat.S_IMODE(log.st_mode) == 0o644 and log.st_uid == 0
        assert (root / "turn-1/log.txt").read_text() == "the host's log\n"
        turn2 = (root / "turn-2").lstat()
        assert stat.S_ISDIR(turn2.st_mode) and turn2.st_uid == workdir.uid and os.listdir(root / "turn-2") == []
        # The sandbox can use what the host made for it.
        use = sandbox.run(["sh", "-c", "cat turn-1/log.txt && echo built > turn-2/out"], workdir)
        assert use.ok and use.stdout == "the host's log\n", use.output
        assert hostfs.read_text(root, "turn-2/out", LIMIT) == "built\n"

        workdir.cleanup()
        assert not root.exists()
        assert snapshot(canary) == before
    finally:
        workdir.cleanup()


def test_a_read_returns_a_regular_file_of_one_name(canary):
    sandbox = Sandbox("bwrap")
    with sandbox.workdir(prefix="heavygym-hostfs-test-") as workdir:
        assert sandbox.run(["sh", "-c", "echo 'the answer' > out.txt"], workdir).ok
        assert hostfs.read_text(workdir.path, "out.txt", LIMIT) == "the answer\n"
        with pytest.raises(ValueError, match="plain relative path"):
            hostfs.read_text(workdir.path, "../out.txt", LIMIT)
        with pytest.raises(ValueError, match="plain relative path"):
            hostfs.write_file(workdir.path, "/etc/passwd", "x")


def test_a_file_the_host_writes_has_the_asked_mode_whatever_the_umask(canary):
    sandbox = Sandbox("bwrap")
    old = os.umask(0o077)
    try:
        with sandbox.workdir(prefix="heavygym-hostfs-test-") as workdir:
            hostfs.write_file(workdir.path, "design.sv", "module m; endmodule\n")
            hostfs.make_dir(workdir.path, "build", uid=workdir.uid)
            # The sandbox uid must read the source and write into the build directory.
            result = sandbox.run(["sh", "-c", "cat design.sv > build/copy"], workdir)
            assert result.ok, result.output
    finally:
        os.umask(old)


SWAPPER = """
import os, sys
target_dir, target_file = sys.argv[1], sys.argv[2]

def gone(name):  # whatever is there, the host may be replacing it at the same moment
    try:
        os.unlink(name)
    except IsADirectoryError:
        try:
            for entry in os.listdir(name):
                os.unlink(os.path.join(name, entry))
            os.rmdir(name)
        except OSError:
            pass
    except OSError:
        pass

os.mkdir("turn-1")
print("swapping", flush=True)
while True:
    for name, target in (("turn-2", target_dir), ("turn-1/log", target_file)):
        gone(name)
        try:
            os.symlink(target, name)
        except OSError:
            pass
        gone(name)
        try:
            os.mkdir(name) if name == "turn-2" else open(name, "w").close()
        except OSError:
            pass
"""


def test_entries_swapped_while_the_host_works_are_refused_never_followed(canary):
    """A sandboxed process keeps swapping the entries the host uses for links to the canary
    (a warm checker runs beside the host like this); every host call succeeds inside the work
    directory or refuses, and nothing outside changes."""
    sandbox = Sandbox("bwrap")
    workdir = sandbox.workdir(prefix="heavygym-hostfs-test-")
    before = snapshot(canary)
    swapper = sandbox.popen([sys.executable, "-c", SWAPPER, str(canary / "dir"), str(canary / "file.txt")],
                            workdir, limits=Limits(cpu_s=120))  # fmt: skip
    try:
        assert swapper.stdout.readline() == b"swapping\n"
        outcomes = []
        for _ in range(2000):
            for call, args in [
                (hostfs.make_dir, ("turn-2", workdir.uid)),
                (hostfs.write_file, ("turn-2/log", "log")),
                (hostfs.write_file, ("turn-1/log", "log")),
                (hostfs.read_text, ("turn-1/log", LIMIT)),
            ]:
                try:
                    call(workdir.path, *args)
                    outcomes.append("done")
                except hostfs.UnsafePath:
                    outcomes.append("refused")
        assert swapper.poll() is None, "the swapper stopped early"
    finally:
        swapper.kill()
        swapper.wait()
        workdir.cleanup()
    assert snapshot(canary) == before
    assert not workdir.path.exists()
    assert "done" in outcomes  # the host did work while the entries moved


def test_a_host_user_removes_a_tree_its_sandbox_made_unreadable():
    """Without root (a user-namespace sandbox maps to the host user) the remover itself must
    restore access to what the sandbox locked; it runs here as the sandbox uid, a non-root user."""
    code = """
import os
from pathlib import Path
from gyms import hostfs
os.makedirs("tree/a/b")
os.makedirs("tree/c")
Path("tree/a/b/f").write_text("x")
os.chmod("tree/a/b", 0)
os.chmod("tree/a", 0o500)
os.chmod("tree/c", 0)
os.chmod("tree", 0o500)
hostfs.remove_tree(Path("tree").absolute())
print("left:", os.path.lexists("tree"))
"""
    sandbox = Sandbox("bwrap")
    project = Path(__file__).resolve().parent.parent
    with sandbox.workdir(prefix="heavygym-hostfs-test-") as workdir:
        result = sandbox.run([sys.executable, "-c", code], workdir, env={"PYTHONPATH": str(project)})
    assert result.stdout == "left: False\n", result.output
