"""The OpenModelica backend: `omc` runs a generated .mos script in the sandbox.

Used where `omc` is on PATH or OPENMODELICAHOME is set. Each call writes the source and a
script into the episode's work directory, runs `omc run.mos` there (omc translates the model
to C, builds and runs the simulation executable) and reads the CSV result file it leaves.
The simulation executable gets `-alarm` so a model that never finishes stops by itself;
the sandbox's wall timeout is the backstop.
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
from pathlib import Path

from gyms.base import ToolCheck
from gyms.modelica.backend import SOURCE_NAME, BackendConfig, BackendFault, SimRequest, Simulation
from gyms.modelica.library import library_names
from gyms.sandbox import Limits, Sandbox, SandboxError, Workdir

INSTALL_HINT = "install OpenModelica (https://openmodelica.org) so that `omc` is on PATH, or set OPENMODELICAHOME"
SCRIPT_NAME = "run.mos"
# omc's garbage collector reserves address space generously: a tight limit stops it from starting.
MEMORY_MB = 8192
_PARAM_MARK = "@heavygym-param "
# omc's default solver tolerance, like rumoca's: far below the checks' 1e-3.
TOLERANCE = 1e-6


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
    flags = [f"-alarm={math.ceil(config.sim_timeout_s)}"]
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
    reader = csv.reader(io.StringIO(csv_text))
    header = next(reader, [])
    rows = [[float(cell) for cell in row] for row in reader if row]
    if not rows or header[:1] != ["time"]:
        return Simulation(_failure_status(output), messages or "the simulation wrote no results", seconds=seconds)
    columns = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    times = columns.pop("time")
    if times[-1] < request.stop_time * (1 - 1e-9):
        status = "timeout" if "alarm" in output.lower() else "simulation-error"
        return Simulation(status, messages or f"the simulation stopped at t={times[-1]:g} s", seconds=seconds)
    values = {name: columns[name] for name in request.variables if name in columns}
    for name, series in values.items():
        if not all(math.isfinite(v) for v in series):
            return Simulation("simulation-error", f"non-finite (inf or nan) values computed for `{name}`", seconds=seconds)
    return Simulation(
        "ok",
        time=times,
        values=values,
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
        result_path = workdir.path / result_file(request)
        result_path.unlink(missing_ok=True)  # a stale result must never pass for this one
        (workdir.path / SOURCE_NAME).write_text(request.source)
        (workdir.path / SCRIPT_NAME).write_text(mos_script(request, self.config))
        timeout = self.config.call_timeout_s
        limits = Limits(
            wall_s=timeout, cpu_s=math.ceil(timeout) * 4, memory_mb=MEMORY_MB, file_mb=512, processes=256
        )  # the C compiler runs several processes, in parallel
        started = time.monotonic()
        try:
            run = self._sandbox.run([self.omc, SCRIPT_NAME], workdir, limits=limits)
        except SandboxError as exc:
            raise BackendFault(f"the sandbox could not start omc: {exc}") from exc
        seconds = time.monotonic() - started
        if run.killed in ("timeout", "cpu-limit"):
            return Simulation("timeout", f"omc did not finish within {timeout:g} s", seconds=seconds)
        output = run.output.replace(str(workdir.path) + os.sep, "")
        csv_text = result_path.read_text() if result_path.is_file() else None
        return read_result(csv_text, output, request, seconds)

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


def _messages(output: str) -> str:
    """omc's errors and the simulation's messages, without the script's echo."""
    keep = [
        ln.strip().strip('"')
        for ln in output.splitlines()
        if re.search(r"Error|error|assert|Warning: .*(equation|variable)|alarm|messages = ", ln)
    ]
    return "\n".join(dict.fromkeys(k for k in keep if k))


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
