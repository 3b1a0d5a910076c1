"""The Modelica gym: write a model from a spec; it is compiled, simulated and matched to a reference."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import TYPE_CHECKING

from gyms.base import Candidate, Gym, Task, ToolCheck
from gyms.modelica import mutations
from gyms.modelica.backend import tool_checks
from gyms.modelica.catalog import SPLITS, SUITES, TASK_DIR, TaskSpec, suite_catalog
from gyms.modelica.episode import ModelicaEpisode
from gyms.modelica.library import LIBRARY_ROOT, library_names
from gyms.modelica.simulation import BACKENDS, BackendConfig
from gyms.options import Options

if TYPE_CHECKING:
    from gyms.attacks import AttackSuite

# A step simulates at most three models: the reference, the answer, the reference with the
# answer's tuned parameters. Each has its own call budget, and may run to its wall-clock backstop.
_CALLS_PER_STEP = 3
# The simulation budget (CPU time) per suite when `sim_timeout_s` is not given. Heavy references
# take 0.3-2 s of CPU: 20 s leaves room for models ten times that size.
DEFAULT_SIM_TIMEOUT_S = {"core": 3.0, "heavy": 20.0}


_OPTIONS = Options("modelica")


class ModelicaGym(Gym):
    """Options (strings from the command line are accepted):

    - `backend`: "rumoca" (default; compiler and solver in the pip wheel) or "openmodelica"
      (needs `omc` on PATH or OPENMODELICAHOME).
    - `library_root`: extra library directories (os.pathsep-separated), e.g. the MSL's; the
      sandbox binds them read-only, wherever they live.
    - `suite`: "core" (default: the tasks in gyms/modelica/tasks/, 5-50 ms per check) or
      "heavy" (gyms/modelica/tasks/heavy/: discretised rods, plates and lines, oscillator
      arrays, stiff kinetics and banks of switching components, 50-400 states or many events,
      ids `heavy/<name>`; a check costs real simulation work, ~0.5-2 s).
    - `max_turns` (default 3), `sim_timeout_s` (the simulation's own budget in CPU time, which a
      busy machine does not eat into; default 3 for core, 20 for heavy; a call may take 2 s of
      CPU more for compiling, 90 s with OpenModelica, and 3 times that in wall time), `warm`
      (rumoca: one long-lived runner per worker, default true).
    """

    name = "modelica"
    version = "0.1.0"

    def __init__(
        self,
        backend: str = "rumoca",
        library_root: str | None = None,
        max_turns: int | str = 3,
        sim_timeout_s: float | str | None = None,
        warm: bool | str = True,
        suite: str = "core",
    ) -> None:
        self.suite = _OPTIONS.choice("suite", suite, tuple(SUITES))
        if sim_timeout_s in (None, ""):
            sim_timeout_s = DEFAULT_SIM_TIMEOUT_S[self.suite]
        self.max_turns = _OPTIONS.whole("max_turns", max_turns, 1)
        self.config = BackendConfig(
            kind=_OPTIONS.choice("backend", backend, BACKENDS),
            roots=(str(LIBRARY_ROOT), *_library_roots(library_root)),
            sim_timeout_s=_OPTIONS.seconds("sim_timeout_s", sim_timeout_s),
            warm=_OPTIONS.flag("warm", warm),
        )
        self.step_timeout_s = _CALLS_PER_STEP * self.config.call_wall_s
        self._specs = {spec.id: spec for spec in suite_catalog(self.suite)}

    def tasks(self, split: str = "train") -> list[Task]:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; the modelica gym has {', '.join(SPLITS)}")
        return [spec.task() for spec in self._specs.values() if spec.split == split]

    def open(self, task: Task) -> ModelicaEpisode:
        if task.reference is None or "model" not in task.metadata:
            raise ValueError(f"task {task.id!r} is not a Modelica task; take tasks from ModelicaGym.tasks()")
        return ModelicaEpisode(task, self.max_turns, self.config)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        spec: TaskSpec | None = self._specs.get(task.id)
        return mutations.candidates(spec) if spec is not None else super().candidates(task, rng)

    def answer_keys(self) -> list[Path]:
        """Both suites' reference models."""
        return [TASK_DIR]

    def attack_suites(self) -> list[AttackSuite]:
        from gyms.modelica.attacks import suites  # the suite's answers are built when asked for

        return suites(self)

    def tools(self) -> list[ToolCheck]:
        return tool_checks(self.config.kind)

    def describe(self) -> dict[str, str]:
        described = super().describe()
        described.update(
            backend=self.config.kind, library_roots=os.pathsep.join(self.config.roots), suite=self.suite
        )
        return described


def _library_roots(option: str | None) -> list[str]:
    roots = [p for p in (option or "").split(os.pathsep) if p]
    for root in roots:
        path = Path(root)
        if not path.is_dir():
            raise ValueError(f"library_root {root!r} is not a directory")
        if not library_names([root]):
            raise ValueError(
                f"library_root {root!r} holds no Modelica library: give the directory that contains "
                "NAME/package.mo (or NAME.mo), not the library's own directory"
            )
    return [str(Path(r).resolve()) for r in roots]
