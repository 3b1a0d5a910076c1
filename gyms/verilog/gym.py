"""The Verilog gym: write a module to a spec; its simulated outputs are compared with a golden model on the host.

Options (strings from the command line are accepted), all optional:
  source           builtin (default), verilog-eval:/path/to/dataset, rtllm:/path/to/RTLLM or
                   hf-verilog:/path/to/a/saved/dataset (VerilogEval v2 rows)
  suite            which built-in tasks (source=builtin): core (default: 39 small designs, checks
                   of milliseconds) or heavy (gyms/verilog/tasks/heavy_*.py: designs of realistic
                   size, a pipelined RV32I core, UART, SHA-256, cache, ..., each checked over
                   >= 10^5 cycles: seconds of simulation per check)
  simulator        icarus (default) or verilator
  testbench        sv (default) or cocotb (built-in tasks only)
  vectors          vectors (clock cycles) per sequence; default: each task's own (core 64-600,
                   heavy >= 100 000)
  sequences        how many sequences, each starting with a reset (default 1)
  seed             seed of the generated vectors (default 0)
  tasks            comma-separated globs over task ids or names (e.g. fsm/*,adder8)
  max_turns        turns per episode (default 3)
  waves            true: also write a VCD waveform per turn (default false)
  keep_artifacts   true: keep work directories after close() (default false)
  compile_timeout_s, sim_timeout_s   per-step limits (defaults depend on the simulator; heavy
                   tasks get a simulation timeout each, from their measured cost per cycle, and
                   benchmark tasks one from their reference's time when it was vetted)
  ccache_dir       Verilator's compiler cache (default /var/tmp/heavygym-ccache; off to disable)

A benchmark (`source=`) is vetted when it loads (`datasets/vetting.py`): each task's reference
runs once under its own testbench on this simulator (cached); tasks whose own files fail are
left out of `tasks()` and listed by `excluded_tasks()` with the tool's message.
"""

from __future__ import annotations

import copy
import fnmatch
import random
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from gyms.base import Candidate, Gym, Task, ToolCheck
from gyms.options import Options
from gyms.verilog.answers.candidates import builtin_candidates, loader_candidates
from gyms.verilog.benches import TESTBENCHES, BenchOptions
from gyms.verilog.benches import trace as traces
from gyms.verilog.checks import toolchain
from gyms.verilog.checks.precheck import ELABORATE_WALL_S
from gyms.verilog.checks.simulators import SIMULATORS
from gyms.verilog.checks.toolchain import ToolMissing, package_version, tool_checks
from gyms.verilog.datasets import Loaded, load_source
from gyms.verilog.datasets.vetting import Vetting, vet_references
from gyms.verilog.episode import Settings, VerilogEpisode
from gyms.verilog.spec import MODULE
from gyms.verilog.tasks import SUITES, TASK_DIR, suite_tasks
from gyms.warm import WALL_PER_CPU

if TYPE_CHECKING:
    from gyms.attacks import AttackSuite

SPLITS = ("train",)
# Per-step allowances, measured on 2 cores (docs/gyms/verilog.md): generous, so that a correct
# design never times out on a loaded machine, yet a hung simulation ends within seconds. Each
# bench's simulation allowances are its `timing` (`benches/base.py`).
COMPILE_TIMEOUT_S = {"icarus": 10.0, "verilator": 30.0}
# Heavy tasks (10^5+ cycles at 5-110 us each on Icarus) get a timeout of their own instead of the
# gym-wide 0.5 ms per vector: that allowance would give every heavy task ~100 s, and a hung
# design (the replay policy's 2% of steps) would then cost 100 s per step. Their allowance is
# HEAVY_MARGIN times the reference's measured cost per cycle (`DesignTask.cycle_cost_us`). The
# costs were measured on a busy machine (load 2-4 on 2 cores, so already up to ~2x an idle
# run); this machine has been seen at load 10 (5 runnable processes per core, ~5x slower than
# idle), and a correct design may be slower than the reference (X propagation, behavioural
# loops). 12x keeps a correct design inside its limit on such a machine, while a hang still
# ends within 16-134 s.
HEAVY_MARGIN = 12.0
# Benchmark tasks (source=) get DATASET_MARGIN times their reference's simulation time, measured
# when the benchmark was vetted, for the reasons above: that measurement may come from an idle
# machine, this one has been seen at load 10 (~5x slower), and a correct design may be a few
# times slower than the reference. The floor covers the simulator's start-up on such a machine
# (the references of VerilogEval and RTLLM simulate in 0.01-0.1 s when idle), so a hung design
# costs 2 s there rather than the 10 s of the former fixed limit.
DATASET_MARGIN = 12.0
DATASET_SIM_FLOOR_S = 2.0
STEP_SLACK_S = 3.0  # extraction, the screen, writing files


def step_timeout(compile_timeout_s: float, sim_timeout_s: float) -> float:
    """The longest a step may take: the pre-check's, the build's and the simulation's wall-clock
    backstops (their limits are CPU time, `episode.cpu_limits`), and the slack."""
    return ELABORATE_WALL_S + (compile_timeout_s + sim_timeout_s) * WALL_PER_CPU + STEP_SLACK_S


_OPTIONS = Options("verilog")


class VerilogGym(Gym):
    name = "verilog"
    version = "0.1.0"

    def __init__(
        self,
        source: str = "builtin",
        suite: str = "core",
        simulator: str = "icarus",
        testbench: str = "sv",
        vectors: int | str | None = None,
        sequences: int | str = 1,
        seed: int | str = 0,
        tasks: str = "*",
        max_turns: int | str = 3,
        waves: bool | str = False,
        keep_artifacts: bool | str = False,
        compile_timeout_s: float | str | None = None,
        sim_timeout_s: float | str | None = None,
        ccache_dir: str | None = None,
    ) -> None:
        self.source = str(source)
        self.suite = _OPTIONS.choice("suite", suite, SUITES)
        if self.suite != "core" and self.source != "builtin":
            raise ValueError(
                f"verilog gym option suite={self.suite!r} selects built-in tasks, but source={self.source!r} "
                "loads tasks from a benchmark: use source=builtin with it, or leave suite out"
            )
        self.simulator = _OPTIONS.choice("simulator", simulator, SIMULATORS)
        self.testbench = _OPTIONS.choice("testbench", testbench, tuple(TESTBENCHES))
        self._bench = TESTBENCHES[self.testbench]  # the built-in tasks' bench (class)
        if self._bench.builtin_only and self.source != "builtin":
            raise ValueError(f"testbench={self.testbench} works with the built-in tasks only (source=builtin)")
        self.vectors = None if vectors in (None, "") else _OPTIONS.whole("vectors", vectors, 1)
        self.sequences = _OPTIONS.whole("sequences", sequences, 1)
        self.seed = _OPTIONS.whole("seed", seed, 0)
        self.patterns = [p.strip() for p in str(tasks).split(",") if p.strip()]
        self.max_turns = _OPTIONS.whole("max_turns", max_turns, 1)
        self.waves = _OPTIONS.flag("waves", waves)
        self.keep_artifacts = _OPTIONS.flag("keep_artifacts", keep_artifacts)
        self.ccache_dir = ccache_dir
        if self.simulator == "verilator":
            try:
                toolchain.ccache_dir(ccache_dir)  # an unusable cache is a set-up error, found now
            except toolchain.ToolMissing as exc:
                raise ValueError(f"verilog gym option ccache_dir: {exc}") from exc
        self.compile_timeout_s = COMPILE_TIMEOUT_S[self.simulator]
        if compile_timeout_s not in (None, ""):
            self.compile_timeout_s = _OPTIONS.seconds("compile_timeout_s", compile_timeout_s)
        self.sim_timeouts = self._task_sim_timeouts()
        self.sim_timeout_s = self._default_sim_timeout()
        if sim_timeout_s not in (None, ""):
            self.sim_timeout_s = _OPTIONS.seconds("sim_timeout_s", sim_timeout_s)
            self.sim_timeouts = {}
        self.step_timeout_s = step_timeout(self.compile_timeout_s, self.sim_timeout_s)
        if not self.tasks():
            excluded = self.excluded_tasks()
            if excluded:
                task_id, reason = next(iter(excluded.items()))
                raise ValueError(f"source={self.source!r}: every task selected by tasks={tasks!r} is excluded "
                                 f"({len(excluded)}), e.g. {task_id}: {reason.splitlines()[0]}")  # fmt: skip
            raise ValueError(f"no task matches tasks={tasks!r}; `harness gyms list verilog --tasks` prints the ids "
                             "(with the other -o options)")  # fmt: skip

    @property
    def settings(self) -> Settings:
        return Settings(
            bench=BenchOptions(self.vectors, self.sequences, self.seed, self.waves, self.simulator, self.testbench),
            compile_timeout_s=self.compile_timeout_s,
            sim_timeout_s=self.sim_timeout_s,
            sim_timeouts=tuple(sorted(self.sim_timeouts.items())),
            reference_sim_s=tuple(sorted(self._reference_sim_s().items())),
            keep_artifacts=self.keep_artifacts,
            ccache_dir=self.ccache_dir,
        )

    def tasks(self, split: str = "train") -> list[Task]:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; the verilog gym has the split 'train' (filter with tasks=...)")
        excluded = self.excluded_tasks()
        return [t for t in self._loaded.tasks if self._selected(t.id) and t.id not in excluded]

    def excluded_tasks(self) -> dict[str, str]:
        """Selected benchmark tasks left out: folders the loader could not read, and tasks whose
        own files fail on this simulator (with the tool's message)."""
        found = {task_id: why for task_id, why in self._loaded.unloadable.items() if self._selected(task_id)}
        found.update({task_id: v.message for task_id, v in self._vetting.items() if not v.ok})
        return found

    @cached_property
    def _loaded(self) -> Loaded:
        if self.source == "builtin":
            return Loaded([
                Task(t.id, t.prompt(), reference=t.reference,
                     metadata={"kind": "builtin", "category": t.category, "difficulty": t.difficulty,
                               "module": MODULE})
                for t in suite_tasks(self.suite).values()
            ])  # fmt: skip
        return load_source(self.source)

    @cached_property
    def _vetting(self) -> dict[str, Vetting]:
        """The selected benchmark tasks' references, vetted on this simulator (built-in tasks: none)."""
        if self.source == "builtin":
            return {}
        selected = [t for t in self._loaded.tasks if self._selected(t.id)]
        try:
            return vet_references(selected, self.simulator, self.compile_timeout_s, self.ccache_dir)
        except ToolMissing as exc:
            raise ValueError(f"source={self.source!r}: its references cannot be vetted: {exc}") from exc

    def _selected(self, task_id: str) -> bool:
        short = task_id.split("/", 1)[-1]
        name = task_id.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(x, p) for p in self.patterns for x in (task_id, short, name))

    def open(self, task: Task) -> VerilogEpisode:
        if "kind" not in task.metadata:
            raise ValueError(f"task {task.id!r} is not a Verilog gym task; make tasks with VerilogGym.tasks()")
        # An excluded task's steps end as errors that name the dataset's fault, never as the model's fail.
        fault = self.excluded_tasks().get(task.id)
        return VerilogEpisode(task, self.max_turns, self.settings, dataset_fault=fault)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        if task.metadata.get("kind") == "builtin":
            return builtin_candidates(task, rng, self.settings)
        return loader_candidates(task)

    def with_short_time_limits(self) -> VerilogGym:
        short = copy.copy(self)  # the tasks, loaded and vetted once, are shared
        short.sim_timeout_s = self._bench.timing.short_s
        short.sim_timeouts = {}
        short.step_timeout_s = step_timeout(self.compile_timeout_s, short.sim_timeout_s)
        return short

    def answer_keys(self) -> list[Path]:
        """The built-in golden models, a benchmark's folder (its references) and the recorded
        reference traces; a bench copies into a sandbox only what one run needs."""
        keys = [TASK_DIR, traces.cache_dir()]
        if self.source != "builtin":
            keys.append(Path(self.source.partition(":")[2]).expanduser().resolve())
        return keys

    def attack_suites(self) -> list[AttackSuite]:
        from gyms.verilog.attacks import suites  # built when asked for: the answers are the suite's own

        return suites(self)

    def tools(self) -> list[ToolCheck]:
        return tool_checks(self.simulator, self._bench.package)

    def describe(self) -> dict[str, str]:
        described = super().describe()
        described.update(simulator=self.simulator, testbench=self.testbench, source=self.source)
        if self.source == "builtin":
            described["suite"] = self.suite
        else:
            described["excluded"] = str(len(self.excluded_tasks()))
        # Where the verdict comes from (docs/gyms/verilog.md): outputs compared on the host, or
        # text printed inside the sandbox (forgeable by a design that escaped the screen).
        forgeable = {"builtin": "no", "verilog-eval": "only problems whose trace cannot be recorded"}
        described["forgeable"] = forgeable.get(self.source.partition(":")[0], "yes")
        package = self._bench.package
        if package is not None:
            described[package] = package_version(package) or "missing"
        return described

    def _default_sim_timeout(self) -> float:
        if self.source != "builtin":
            return max(self.sim_timeouts.values(), default=DATASET_SIM_FLOOR_S)  # the step timeout covers the longest
        # The longest task of the suite (not of the `tasks=` selection: the limit does not
        # depend on which tasks a run picks).
        tasks = suite_tasks(self.suite).values()
        if all(t.cycle_cost_us is not None for t in tasks):
            return max(self.sim_timeouts.values())  # the step timeout covers the longest
        longest = max((self.vectors or t.vectors) * self.sequences for t in tasks)
        timing = self._bench.timing
        return timing.base_s + longest * timing.per_vector_s

    def _task_sim_timeouts(self) -> dict[str, float]:
        """The simulation timeout of each task with a measured cost: the heavy suite's (per cycle)
        and vetted benchmark tasks' (their reference's run)."""
        if self.source != "builtin":
            return {task_id: max(DATASET_SIM_FLOOR_S, round(DATASET_MARGIN * seconds, 1))
                    for task_id, seconds in self._reference_sim_s().items()}  # fmt: skip
        found = {}
        timing = self._bench.timing
        for t in suite_tasks(self.suite).values():
            if t.cycle_cost_us is None:
                continue
            per_vector = HEAVY_MARGIN * t.cycle_cost_us * 1e-6 + timing.own_per_vector_s  # the bench's own, on top
            count = (self.vectors or t.vectors) * self.sequences
            found[t.id] = round(timing.base_s + count * per_vector, 1)
        return found

    def _reference_sim_s(self) -> dict[str, float]:
        """The reference's simulation time of each usable benchmark task, as measured when vetted."""
        return {task_id: v.sim_s for task_id, v in self._vetting.items() if v.ok}
