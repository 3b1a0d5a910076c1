"""The Lean gym: prove a fixed theorem statement; Lean 4 checks the proof.

Options (strings from the command line are accepted), all optional:
  source           core (default: the built-in tasks), a miniF2F .jsonl file (DeepSeek-Prover's),
                   or a directory of .lean files (a miniF2F-lean4 checkout); tasks that import
                   Mathlib need backend=native: on wasm they are left out and listed by
                   `harness gyms list`, and a source with no other task is refused
  suite            which built-in tasks (source=core): core (default: quick checks) or heavy
                   (tasks/heavy.lean: checks that cost real kernel work, ~0.5-3 s each)
  backend          wasm (default: the patched npm Lean under node) or native
  checker          warm (default: a pool of checker processes) or cold (a lean process per check)
  checkers         warm checkers per gym worker process (default 1; ~1.6 GB each on wasm)
  check_timeout_s  the CPU time one proof may take to check (default 20 on wasm, 60 native);
                   wall time 3 times as long backs it up (gyms.warm.WALL_PER_CPU)
  max_turns        turns per episode (default 3); failed turns return Lean's errors
  wasm_dir, node   where the wasm Lean is installed (default: $HEAVYGYM_LEAN_WASM or
                   /opt/heavygym/lean-wasm), and the node binary
  repl, project, lean   native backend: the REPL binary, a Lean project (for Mathlib: its
                   LEAN_PATH comes from `lake env`), the lean binary (checker=cold)
"""

from __future__ import annotations

import random
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from gyms.base import Candidate, Gym, Task, ToolCheck
from gyms.lean.episode import LeanEpisode, Settings
from gyms.lean.tasks import CORE_FILE, SUITES, LeanTask, check_split, directory_tasks, minif2f_tasks, suite_tasks
from gyms.options import Options
from gyms.warm import WALL_PER_CPU

BACKENDS = ("wasm", "native")
CHECKER_KINDS = ("warm", "cold")
CHECK_TIMEOUT_S = {"wasm": 20.0, "native": 60.0}
# wasm: a cold check starts the checker (which loads Lean's elaborator) for one proof.
COLD_START_S = {"wasm": 120.0, "native": 180.0}
# Offer the non-terminating candidate on one task in this many: each one costs a check
# timeout plus a checker restart.
LOOP_EVERY = 10
# A proof that runs far past any check timeout: `decide` over 2^24 Boolean cases.
LOOP_PROOF = """by
  have h : ∀ a b c d e f g h i j k l m n o p q r s t u v w x : Bool,
      (a && b && c && d && e && f && g && h && i && j && k && l && m && n && o && p && q && r && s && t && u && v
        && w && x) = (x && w && v && u && t && s && r && q && p && o && n && m && l && k && j && i && h && g && f
        && e && d && c && b && a) := by decide
  exact absurd h (by decide)"""


NEEDS_MATHLIB = (
    "the wasm Lean has core Lean only, no Mathlib: use backend=native with repl=/path/to/repl and "
    "project=/path/to/a/Lean/project/with/Mathlib"
)
_OPTIONS = Options("lean")


if TYPE_CHECKING:
    from gyms.attacks import AttackSuite


class LeanGym(Gym):
    name = "lean"
    version = "0.1.0"

    def __init__(
        self,
        source: str = "core",
        suite: str = "core",
        backend: str = "wasm",
        checker: str = "warm",
        checkers: int | str = 1,
        check_timeout_s: float | str | None = None,
        max_turns: int | str = 3,
        wasm_dir: str | None = None,
        node: str = "node",
        repl: str | None = None,
        project: str | None = None,
        lean: str | None = None,
    ) -> None:
        self.source = str(source)
        self.suite = _OPTIONS.choice("suite", suite, tuple(SUITES))
        if self.suite != "core" and self.source != "core":
            raise ValueError(
                f"lean gym option suite={self.suite!r} selects built-in tasks, but source={self.source!r} "
                "loads tasks from a file: use source=core with it, or leave suite out"
            )
        backend = _OPTIONS.choice("backend", backend, BACKENDS)
        timeout = CHECK_TIMEOUT_S[backend]
        if check_timeout_s not in (None, ""):
            timeout = _OPTIONS.seconds("check_timeout_s", check_timeout_s)
        self.settings = Settings(
            backend=backend,
            checker=_OPTIONS.choice("checker", checker, CHECKER_KINDS),
            checkers=_OPTIONS.whole("checkers", checkers, 1),
            check_timeout_s=timeout,
            cold_start_s=COLD_START_S[backend],
            wasm_dir=wasm_dir or None,
            node=node,
            repl=repl or None,
            project=project or None,
            lean=lean or None,
        )
        self.max_turns = _OPTIONS.whole("max_turns", max_turns, 1)
        if self._tasks and all(self._unusable(t) for t in self._tasks):  # refused now, not at the first step
            raise ValueError(f"lean gym source {self.source!r}: {NEEDS_MATHLIB}")
        # The longest step: a check at its wall-clock backstop, plus starting a checker (after a
        # crash or a timeout) or a cold lean.
        start = (
            self.settings.make_backend().start_timeout_s if self.settings.checker == "warm" else self.settings.cold_start_s
        )
        self.step_timeout_s = self.settings.check_timeout_s * WALL_PER_CPU + start

    @cached_property
    def _tasks(self) -> list[LeanTask]:
        if self.source == "core":
            return suite_tasks(self.suite)
        path = Path(self.source)
        if path.is_dir():
            return directory_tasks(path)
        if path.is_file():
            return minif2f_tasks(path)
        raise FileNotFoundError(
            f"lean gym source {self.source!r}: use core, a .jsonl file or a directory of .lean files"
        )

    def tasks(self, split: str = "train") -> list[Task]:
        check_split(split)
        return [t.to_task() for t in self._tasks if t.split == split and not self._unusable(t)]

    def excluded_tasks(self) -> dict[str, str]:
        return {t.id: f"needs Mathlib: {NEEDS_MATHLIB}" for t in self._tasks if self._unusable(t)}

    def _unusable(self, task: LeanTask) -> bool:
        """A task whose header imports Mathlib (or any module beyond core Lean) cannot be checked on the wasm Lean."""
        return task.requires_mathlib and self.settings.backend == "wasm"

    def open(self, task: Task) -> LeanEpisode:
        if "statement" not in task.metadata:
            raise ValueError(f"task {task.id!r} has no metadata['statement']; make Lean tasks with LeanGym.tasks()")
        if task.metadata.get("requires_mathlib") and self.settings.backend == "wasm":
            raise ValueError(f"task {task.id!r} needs Mathlib (its header imports more than core Lean): {NEEDS_MATHLIB}")
        return LeanEpisode(task, self.max_turns, self.settings)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        meta = task.metadata
        statement, name = meta["statement"], meta["name"]
        found = []
        if task.reference is not None:
            found += [
                Candidate(f"```lean\n{task.reference}\n```", "pass", "reference"),
                Candidate(f"```lean\n{statement} := {task.reference}\n```", "pass", "restated"),
            ]
        found += [Candidate(proof, "fail", "wrong") for proof in meta.get("wrong", [])]
        found += [
            Candidate("by\n  sorry", "fail", "sorry"),
            Candidate("by\n  native_decide", "fail", "native-decide"),
            Candidate(f"theorem {name} : True := trivial", "fail", "changed-statement"),
            Candidate(f"axiom cheat : False\n\n{statement} := cheat.elim", "fail", "axiom"),
        ]
        index = next((i for i, t in enumerate(self._tasks) if t.id == task.id), 0)
        if index % LOOP_EVERY == 0:
            found.append(Candidate(LOOP_PROOF, "timeout", "loop"))
        return found

    def answer_keys(self) -> list[Path]:
        """The built-in tasks' reference proofs, and a dataset's file or folder."""
        return [CORE_FILE.parent] + ([] if self.source == "core" else [Path(self.source).resolve()])

    def attack_suites(self) -> list[AttackSuite]:
        from gyms.lean.attacks import suites  # built when asked for: the answers are the suite's own

        return suites(self)

    def tools(self) -> list[ToolCheck]:
        return self.settings.make_backend().tools()

    def describe(self) -> dict[str, str]:
        described = super().describe()
        described.update(backend=self.settings.backend, checker=self.settings.checker, source=self.source, suite=self.suite)
        return described
