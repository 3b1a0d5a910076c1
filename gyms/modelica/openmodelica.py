"""The OpenModelica backend: `omc` runs a generated .mos script in the sandbox.

Used where `omc` is on PATH or OPENMODELICAHOME is set. Each call writes the source and a
script into the episode's work directory, runs `omc run.mos` there (omc translates the model
to C, builds and runs the simulation executable) and reads the CSV result file it leaves.
The call's limit is CPU time, `BackendConfig.call_cpu_s`, as an rlimit of every process of the
run (omc, the C compiler, the simulation executable: the rlimit counts each process on its own),
with a wall-clock backstop WALL_PER_CPU times as long. omc's own limit on the simulation,
`-alarm`, counts wall time, so it gets the backstop of the simulation's budget: on a busy
machine it must not stop a correct simulation.

omc compiles the answer to C and runs it, so the work directory is the answer's to fill:
the host writes and reads it only through `gyms.hostfs` (no link followed, reads capped),
parses the CSV strictly, and simulates references in a fresh work directory of their own.
Answers that ask for external code are refused before omc runs (`screen`).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from gyms import hostfs
from gyms.base import ToolCheck
from gyms.modelica.simulation import MAX_POINTS, SOURCE_NAME, BackendConfig, BackendFault, SimRequest, Simulation
from gyms.modelica.library import library_names
from gyms.sandbox import Limits, Sandbox, SandboxError, Workdir
from gyms.warm import WALL_PER_CPU

INSTALL_HINT = "install OpenModelica (https://openmodelica.org) so that `omc` is on PATH, or set OPENMODELICAHOME"
SCRIPT_NAME = "run.mos"
# omc's garbage collector reserves address space generously: a tight limit stops it from starting.
MEMORY_MB = 8192
_PARAM_MARK = "@heavygym-param "
# omc's default solver tolerance, like rumoca's: far below the checks' 1e-3.
TOLERANCE = 1e-6
# The largest result file the host reads: a dense trajectory of a few variables is ~1 MB.
RESULT_LIMIT = 64 * 2**20
# Words that reach C code or the host through omc (external functions, the MSL's System,
# Files and Streams, resources). Refused anywhere in the answer, comments included: a
# screen that parsed Modelica itself could disagree with omc about what is a comment.
_REFUSED = re.compile(r"(?<!\w)(external|ExternalObject|Utilities|ModelicaServices|loadResource|Include|Library)(?!\w)")


def screen(source: str) -> str | None:
    """Why the answer is refused before omc compiles it, or None."""
    found = _REFUSED.search(source)
    if found is None:
        return None
    return (f"`{found.group(1)}` is not allowed in answers (not even in a comment): these tasks need no "
            "external functions, files or system calls")  # fmt: skip


def find_omc() -> str | None:
    """The omc executable: on PATH, else under $OPENMODELICAHOME/bin."""
    found = shutil.which("omc")
    if found:
        return found
    home = os.environ.get("OPENMODELICAHOME")
    if home and os.access(Path(home, "bin", "omc"), os.X_OK):
        return str(Path(home, "bin", "omc"))
    return None


def omc_tool() -> ToolCheck:
    omc = find_omc()
    if omc is None:
        return ToolCheck("omc", False, install_hint=INSTALL_HINT)
    try:
        probe = subprocess.run([omc, "--version"], capture_output=True, text=True, timeout=30)
        return ToolCheck("omc", probe.returncode == 0, probe.stdout.strip(), INSTALL_HINT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ToolCheck("omc", False, install_hint=f"{omc} does not run ({exc}); {INSTALL_HINT}")


def used_libraries(source: str, available: Mapping[str, str]) -> list[str]:
    """The libraries the source refers to (`Name.` or `import Name`), in a stable order."""
    return [name for name in sorted(available) if re.search(rf"(?<![\w.]){re.escape(name)}\s*[.;]", source)]


def mos_script(request: SimRequest, config: BackendConfig) -> str:
    """The .mos script that loads the libraries and the answer, simulates, and reports parameters."""
    libraries = used_libraries(request.source, library_names(config.roots))
    flags = [f"-alarm={math.ceil(config.sim_timeout_s * WALL_PER_CPU)}"]
    if request.overrides:
        flags.append("-override=" + ",".join(f"{name}={value!r}" for name, value in request.overrides))
    variable_filter = "|".join(["time", *(_ere_escape(v) for v in request.variables)])
    lines = [
        f"setModelicaPath({_mos_string(os.pathsep.join(config.roots))});",
        *(f"loadModel({name}); getErrorString();" for name in libraries),
        f"loadFile({_mos_string(SOURCE_NAME)}); getErrorString();",
        f"simulate({request.model}, startTime=0.0, stopTime={request.stop_time!r}, "
        f"numberOfIntervals={request.intervals}, tolerance={TOLERANCE!r}, outputFormat=\"csv\", "
        f"variableFilter={_mos_string(variable_filter)}, simflags={_mos_string(' '.join(flags))});",
        "getErrorString();",
        *(
            f"print({_mos_string(_PARAM_MARK + name + '=')} + getParameterValue({request.model}, "
            f"{_mos_string(name)}) + \"\\n\");"
            for name in request.parameters
        ),
    ]
    return "\n".join(lines) + "\n"


def result_file(request: SimRequest) -> str:
    return f"{request.model}_res.csv"


def read_result(csv_text: str | None, output: str, request: SimRequest, seconds: float) -> Simulation:
    """A Simulation from omc's output and the CSV result file (None when it wrote none)."""
    parameters = _parameters(output, request.parameters)
    messages = _messages(output)
    if csv_text is None:
        return Simulation(_failure_status(output), messages, seconds=seconds)
    try:
        header, rows = _parse_csv(csv_text)
    except ValueError as exc:
        return Simulation("simulation-error", f"the result file is not a valid trajectory: {exc}", seconds=seconds)
    if not rows or header[:1] != ["time"]:
        return Simulation(_failure_status(output), messages or "the simulation wrote no results", seconds=seconds)
    columns = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    times = columns.pop("time")
    if times[0] != 0.0 or any(b < a for a, b in zip(times, times[1:])) or times[-1] > request.stop_time * (1 + 1e-9):
        return Simulation("simulation-error", "the result file's time axis is not 0 to the stop time", seconds=seconds)
    if times[-1] < request.stop_time * (1 - 1e-9):
        status = "timeout" if "alarm" in output.lower() else "simulation-error"
        return Simulation(status, messages or f"the simulation stopped at t={times[-1]:g} s", seconds=seconds)
    values = {name: columns[name] for name in request.variables if name in columns}
    for name, series in values.items():
        if not all(math.isfinite(v) for v in series):
            return Simulation("simulation-error", f"non-finite (inf or nan) values computed for `{name}`", seconds=seconds)
    return Simulation(
        "ok",
        time=np.asarray(times),
        values={name: np.asarray(series) for name, series in values.items()},
        missing=tuple(name for name in request.variables if name not in columns),
        parameters=parameters,
        names=tuple(columns),
        seconds=seconds,
    )


class OpenModelicaBackend:
    needs_workdir = True

    def __init__(self, config: BackendConfig) -> None:
        omc = find_omc()
        if omc is None:
            raise BackendFault(f"OpenModelica's omc was not found: {INSTALL_HINT}")
        self.omc = omc
        self.config = config
        self._sandbox = Sandbox(expose=self.config.roots)  # users' libraries, wherever they live

    def simulate(self, request: SimRequest, workdir: Workdir | None) -> Simulation:
        if workdir is None:
            raise BackendFault("the OpenModelica backend needs the episode's work directory")
        refused = screen(request.source)
        if refused is not None:
            return Simulation("compile-error", refused)
        return self._run(request, workdir)

    def simulate_reference(self, request: SimRequest) -> Simulation:
        with self._sandbox.workdir(prefix="heavygym-modelica-ref-") as workdir:
            return self._run(request, workdir)

    def _run(self, request: SimRequest, workdir: Workdir) -> Simulation:
        root = workdir.path
        hostfs.remove_tree(root / result_file(request))  # a stale result must never pass for this one
        hostfs.write_file(root, SOURCE_NAME, request.source)
        hostfs.write_file(root, SCRIPT_NAME, mos_script(request, self.config))
        cpu, wall = math.ceil(self.config.call_cpu_s), self.config.call_wall_s
        # processes: the C compiler runs several, in parallel
        limits = Limits(wall_s=wall, cpu_s=cpu, memory_mb=MEMORY_MB, file_mb=512, processes=256)
        started = time.monotonic()
        try:
            run = self._sandbox.run([self.omc, SCRIPT_NAME], workdir, limits=limits)
        except SandboxError as exc:
            raise BackendFault(f"the sandbox could not start omc: {exc}") from exc
        seconds = time.monotonic() - started
        if run.killed in ("timeout", "cpu-limit"):
            why = f"omc did not finish within {cpu} s of CPU time (or {wall:g} s of wall time)"
            return Simulation("timeout", why, seconds=seconds, cpu_s=run.cpu_s)
        output = run.output.replace(str(root) + os.sep, "")
        try:
            csv_text = hostfs.read_text(root, result_file(request), RESULT_LIMIT)
        except hostfs.UnsafePath as exc:
            return Simulation("simulation-error", f"the result file was refused: {exc}", seconds=seconds)
        return replace(read_result(csv_text, output, request, seconds), cpu_s=run.cpu_s)

    def close(self) -> None:
        """Nothing runs between calls."""


def _parameters(output: str, names: Sequence[str]) -> dict[str, float | None]:
    found: dict[str, float | None] = {}
    for line in output.splitlines():
        if line.startswith(_PARAM_MARK):
            name, _, value = line[len(_PARAM_MARK) :].partition("=")
            try:
                found[name] = float(value.strip())
            except ValueError:  # an expression, not a plain number
                found[name] = None
    return {name: found[name] for name in names if name in found}


def _parse_csv(text: str) -> tuple[list[str], list[list[float]]]:
    """omc's CSV: a header, then rows of numbers as wide as the header (ValueError else)."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])
    rows = []
    for row in reader:
        if not row:
            continue
        values = [float(cell) for cell in row]
        if len(values) != len(header):
            raise ValueError(f"row {len(rows) + 2} does not have {len(header)} numbers")
        rows.append(values)
        if len(rows) > MAX_POINTS:
            raise ValueError(f"more than {MAX_POINTS} rows")
    return header, rows


def _messages(output: str) -> str:
    """omc's errors and the simulation's messages, without the script's echo."""
    keep = [ln.strip().strip('"') for ln in output.splitlines() if _worth_keeping(ln)]
    return "\n".join(dict.fromkeys(k for k in keep if k))


_MESSAGE_WORDS = re.compile(r"Error|error|assert|alarm|messages = ")


def _worth_keeping(line: str) -> bool:
    # Plain searches only: omc echoes the answer's text, which must not make this slow.
    if _MESSAGE_WORDS.search(line):
        return True
    warning = line.find("Warning: ")
    return warning >= 0 and ("equation" in line[warning:] or "variable" in line[warning:])


def _failure_status(output: str) -> str:
    text = output.lower()
    if "too many equations" in text or "too few equations" in text or "-determined" in text:
        return "unbalanced"
    if "alarm" in text:
        return "timeout"
    if "simulation execution failed" in text or "assert" in text:
        return "simulation-error"
    return "compile-error"


def _mos_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ere_escape(name: str) -> str:
    """A variable name as a POSIX extended regular expression matching only itself."""
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", name)
