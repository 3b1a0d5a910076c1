"""The rumoca runner: compiles and simulates Modelica models; runs inside the sandbox.

Run as `python -I gyms/modelica/runner.py` (a warm checker: it prints `{"ready": true}`, then
answers each request line with one reply line, until `{"exit": true}` or the end of its input)
or with `--once` (reads one request from
stdin, prints its reply, exits). A request:

    {"id": "3f2a...", "source": "model A ... end A;", "filename": "answer.mo", "model": "A",
     "roots": ["/lib/path"], "stop_time": 1.0, "intervals": 100, "variables": ["x"],
     "parameters": ["k"], "overrides": {"k": 2.0}}

`roots` are library directories; the libraries the source names are loaded with it.
`parameters` are reported back (null where not a plain number), `overrides` are simulated with.

A reply always has the request's `id` and a `status`: `ok` (with `time`, `values`, `missing`,
`parameters`, `names`), or `compile-error`, `unbalanced`, `simulation-error`, `crash` (with
`message`, and `diagnostics` for compile errors). Bad models never end the process. Replies
go to a private duplicate of stdout; file descriptor 1 itself is pointed at stderr, so nothing
the compiler or solver prints can pose as a reply.

It imports nothing from the project (stdlib and rumoca only). Every request gets a fresh
`rumoca.Session`: a session remembers the classes of earlier sources, so one answer could
otherwise shadow the library for the next.

There is no time limit in here: rumoca's own (`max_wall_seconds`) counts wall time, which a busy
machine would eat into. The host limits the CPU time this process spends on each request, with a
wall-clock backstop, and kills it past either (gyms/warm.py, gyms/modelica/rumoca_backend.py).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

import rumoca

# rumoca 0.10.2 checks each step against its own interpolant and, at some tolerances, rejects
# a correct run of a sampled model ("... the disagreement exceeds ..."). One retry at other
# tolerances tells that apart from a solution that really runs away (which fails again).
_SELF_CHECK = "disagreement exceeds"
_RETRY_TOLERANCES = (1e-7, 1e-9)
# Enough names for a helpful "did you mean" in the feedback; the rest are not needed.
_MAX_NAMES = 200


def handle(request: dict[str, Any]) -> dict[str, Any]:
    try:
        reply = _simulate(request)
    except BaseException as exc:  # a Rust panic surfaces as a BaseException, never as a crash
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        reply = {"status": "crash", "message": f"{type(exc).__name__}: {exc}"}
    return {"id": request.get("id"), **reply}


def _simulate(request: dict[str, Any]) -> dict[str, Any]:
    source, model_name, filename = request["source"], request["model"], request["filename"]
    session = rumoca.Session()
    _load_libraries(session, tuple(request.get("roots", ())), source)
    try:
        model = session.loads(source, model=model_name, filename=filename)
    except rumoca.RumocaError as exc:
        message = str(exc)
        status = "unbalanced" if "unbalanced model" in message else "compile-error"
        return {"status": status, "message": message, "diagnostics": _diagnostics(source, model_name, filename)}
    parameters = {
        name: _plain_number(model.parameters[name].value)
        for name in request.get("parameters", [])
        if name in model.parameters
    }
    try:
        result = _run(model, request)
    except rumoca.SimulationError as exc:
        if _SELF_CHECK not in str(exc):
            return _failed(exc)
        try:
            result = _run(model, request, *_RETRY_TOLERANCES)
        except rumoca.SimulationError:
            return _failed(exc)
    stop_time = float(request["stop_time"])
    if float(result.time[-1]) < stop_time * (1 - 1e-9):  # terminate(), or a solver that gave up
        why = f" ({result.termination})" if result.termination else ""
        message = f"the simulation stopped at t={float(result.time[-1]):g}, before the stop time {stop_time:g}{why}"
        return {"status": "simulation-error", "message": message}
    values = {name: result[name].tolist() for name in request["variables"] if name in result}
    for name, series in values.items():
        if not all(math.isfinite(v) for v in series):
            return {"status": "simulation-error", "message": f"non-finite (inf or nan) values computed for `{name}`"}
    return {
        "status": "ok",
        "time": result.time.tolist(),
        "values": values,
        "missing": [name for name in request["variables"] if name not in result],
        "parameters": parameters,
        "names": list(result.names)[:_MAX_NAMES],
    }


def _plain_number(value: Any) -> float | None:
    """A parameter's value if it is a finite number (JSON has no nan or inf), else None."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _run(model: Any, request: dict[str, Any], rtol: float | None = None, atol: float | None = None) -> Any:
    """Simulate with the solver's default tolerances (about 1e-6, far below the checks' 1e-3) unless given."""
    stop_time = float(request["stop_time"])
    config = rumoca.SimConfig(rtol=rtol, atol=atol)
    return model.simulate(
        t=(0.0, stop_time),
        dt=stop_time / int(request["intervals"]),
        config=config,
        params=request.get("overrides") or None,
    )


def _failed(exc: Exception) -> dict[str, Any]:
    return {"status": "simulation-error", "message": str(exc)}


def _load_libraries(session: Any, roots: tuple[str, ...], source: str) -> None:
    """Load the libraries the source names (`HeavyLib.`, `import Modelica...`) into the session.

    The files are loaded as sources rather than as rumoca source roots: rumoca fingerprints a
    source root together with the interpreter's executable, which the sandbox may not let it
    stat. Loading a package file raises (it holds no model to compile), but its classes stay
    registered in the session, which is all the answer needs.
    """
    for name, files in _library_files(roots).items():
        if re.search(rf"(?<![\w.]){re.escape(name)}\b", source):
            for path, text in files:
                try:
                    session.loads(text, filename=path)
                except rumoca.RumocaError:
                    pass


@functools.cache
def _library_files(roots: tuple[str, ...]) -> dict[str, list[tuple[str, str]]]:
    """Top-level libraries of the roots (`Name/package.mo` trees, `Name.mo` files) and their sources."""
    found: dict[str, list[tuple[str, str]]] = {}
    for root in map(Path, roots):
        for entry in sorted(root.iterdir()):
            name = entry.name.split(" ")[0].removesuffix(".mo")  # "Modelica 4.0.0" is Modelica
            if name in found:
                continue  # the first root wins, as with MODELICAPATH
            if entry.is_dir() and (entry / "package.mo").is_file():
                files = sorted(entry.rglob("*.mo"))
            elif entry.suffix == ".mo" and entry.is_file():
                files = [entry]
            else:
                continue
            found[name] = [(str(f), f.read_text(errors="replace")) for f in files]
    return found


def _diagnostics(source: str, model_name: str, filename: str) -> list[dict[str, Any]]:
    """Located messages for a failed compile (the exception text often lacks the line)."""
    try:
        found = rumoca.validate_source(source, model=model_name, filename=filename)
    except rumoca.RumocaError:
        return []
    return [{"level": d.level, "message": d.message} for d in found if d.level == "error"]


def _reply_channel() -> Any:
    """A private duplicate of stdout for replies; fd 1 (and sys.stdout) then lead to stderr."""
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def main(argv: list[str]) -> None:
    replies = _reply_channel()
    if "--once" in argv:
        print(json.dumps(handle(json.loads(sys.stdin.read()))), file=replies, flush=True)
        return
    print(json.dumps({"ready": True}), file=replies, flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            reply: dict[str, Any] = {"status": "crash", "message": f"unreadable request: {exc}"}
        else:
            if request.get("exit"):  # the host's shutdown: exit, so the sandbox reaps this process
                print(json.dumps({"status": "exiting"}), file=replies, flush=True)
                return
            reply = handle(request)
        print(json.dumps(reply), file=replies, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
