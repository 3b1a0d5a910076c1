"""Known answers for replay and the conformance check: the reference, vetted mutants, a design
that does not compile and one that never finishes.

The last two say what they exercise (`Candidate.stage`, matched against the episode's
`info["stage"]`): the syntax error must be refused by the pre-check (where pyslang parses the
design); the hang must reach the simulation and be stopped there by the time limit.

A mutant is only offered as a known-bad answer if it was seen to fail. `vetted_mutants.json`
(written by `python -m gyms.verilog.answers.mutant_vetting --write`) lists, per task, mutants that failed with
reward <= 0.9 under every vetted seed at the task's default vector count; the vectors of a
longer run start with those of a shorter one, so they fail with more vectors too. Under any
other seed or a shorter run, each offered mutant is simulated once here first.
"""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

from gyms.base import Candidate, Outcome, Task
from gyms.verilog.answers.mutate import Mutant, mutants, never_finishing, without_first_semicolon
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.episode import Settings, VerilogEpisode
from gyms.verilog.spec import MODULE, DesignTask
from gyms.verilog.tasks import design_task, suite_of

VETTED = Path(__file__).with_name("vetted_mutants.json")  # the core suite's
VETTED_FILES = {"core": VETTED, "heavy": Path(__file__).with_name("vetted_mutants_heavy.json")}
MUTANTS_PER_TASK = 3


def answer(code: str) -> str:
    """Code as a model would answer it."""
    return f"Here is the design.\n\n```verilog\n{code.rstrip()}\n```\n"


@cache
def vetted(suite: str = "core") -> dict[str, Any]:
    return json.loads(VETTED_FILES[suite].read_text())


def task_mutants(design: DesignTask) -> list[Mutant]:
    return mutants(design.reference, design.clock, design.reset.name if design.reset else None)


def vetted_mutants(design: DesignTask) -> list[Mutant]:
    """The task's vetted mutants that still match the reference they were vetted on."""
    current = {m.label: m for m in task_mutants(design)}
    entries = vetted(suite_of(design.id))["tasks"].get(design.id, [])
    return [current[e["label"]] for e in entries if e["label"] in current and current[e["label"]].digest == e["digest"]]


def builtin_candidates(task: Task, rng: random.Random, settings: Settings) -> list[Candidate]:
    design = design_task(task.id)
    ports = [PortSpec(p.name, p.direction, p.width) for p in design.ports]
    pool = vetted_mutants(design)
    chosen = rng.sample(pool, min(MUTANTS_PER_TASK, len(pool)))
    if not _vetted_setting(design, settings):
        chosen = [m for m in chosen if _fails(task, m, settings)]
    return [
        Candidate(answer(design.reference), "pass", "reference"),
        *(Candidate(answer(m.text), "fail", m.label) for m in chosen),
        syntax_error(design.reference),
        hang(design.reference, MODULE, ports),
    ]


def loader_candidates(task: Task) -> list[Candidate]:
    """Benchmark tasks: their reference (renamed to the module asked for) and the two fixed bad ones."""
    if task.reference is None:
        return []
    found = [Candidate(answer(task.reference), "pass", "reference"), syntax_error(task.reference)]
    ports = task.metadata.get("ports")
    if ports:
        spec = [PortSpec(*p) for p in ports]
        if any(p.direction == "output" for p in spec):
            found.append(hang(task.reference, task.metadata["module"], spec))
    return found


def syntax_error(reference: str) -> Candidate:
    return Candidate(answer(without_first_semicolon(reference)), "fail", "syntax-error", stage="precheck")


def hang(reference: str, module: str, ports: list[PortSpec]) -> Candidate:
    return Candidate(answer(never_finishing(reference, module, ports)), "timeout", "never-finishes", stage="simulate")


def _vetted_setting(design: DesignTask, settings: Settings) -> bool:
    bench = settings.bench
    return bench.seed in vetted(suite_of(design.id))["seeds"] and (bench.vectors is None or bench.vectors >= design.vectors)


_checked: dict[tuple[str, str, Settings], bool] = {}


def _fails(task: Task, mutant: Mutant, settings: Settings) -> bool:
    """Simulate the mutant once under these settings (cached); True if it does not pass."""
    key = (task.id, mutant.label, settings)
    if key not in _checked:
        episode = VerilogEpisode(task, 1, settings)
        try:
            result = episode.step(answer(mutant.text))
        finally:
            episode.close()
        _checked[key] = result.outcome is Outcome.FAIL and not result.info.get("timed_out")
    return _checked[key]
