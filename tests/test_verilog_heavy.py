"""The Verilog gym's heavy suite (`-o suite=heavy`, gyms/verilog/tasks/heavy_*.py): the option,
the tasks' shape, their references against the golden models (on short runs: a full check costs
seconds per task), their vetted mutants, the per-task timeouts, the cached host-side work, the
whole-file scoring, and the conformance check on one task through the installed command.

The full-length checks (10^5+ cycles per task) are measured, not tested: docs/gyms/verilog.md."""

from __future__ import annotations

import json
import random

import pytest
from conftest import harness, needs_icarus

from gyms.base import Outcome
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer, task_mutants, vetted, vetted_mutants
from gyms.verilog.answers.mutant_vetting import SCREEN_VECTORS
from gyms.verilog.benches import BenchOptions, testbench
from gyms.verilog.benches.builtin import BuiltinBench
from gyms.verilog.benches.vectors import make_vectors
from gyms.verilog.checks.precheck import PortSpec, precheck
from gyms.verilog.gym import HEAVY_MARGIN
from gyms.verilog.spec import CATEGORIES, MODULE
from gyms.verilog.tasks import builtin_tasks, suite_tasks

HEAVY = suite_tasks("heavy")
SHORT = 2000  # cycles per check in these tests; the suite's own default is >= 100 000


def test_the_suite_option_selects_the_heavy_tasks() -> None:
    gym = VerilogGym(suite="heavy")
    ids = [t.id for t in gym.tasks()]
    assert len(ids) >= 12 and ids == list(HEAVY)
    assert all(i.startswith("verilog/heavy/") for i in ids)
    assert gym.describe()["suite"] == "heavy"
    assert [t.id for t in VerilogGym().tasks()] == list(builtin_tasks())  # the default is still core
    assert not set(HEAVY) & set(builtin_tasks())
    assert "heavy" in CATEGORIES and {t.category for t in HEAVY.values()} == {"heavy"}
    assert [t.id for t in VerilogGym(suite="heavy", tasks="heavy/sha256*").tasks()] == ["verilog/heavy/sha256_core"]


def test_an_unknown_suite_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"verilog gym option suite='bogus': use one of core, heavy"):
        VerilogGym(suite="bogus")
    with pytest.raises(ValueError, match=r"suite='bogus': use one of core, heavy"):
        suite_tasks("bogus")
    with pytest.raises(ValueError, match="source=builtin"):
        VerilogGym(source="rtllm:/nonexistent", suite="heavy")


def test_heavy_tasks_are_sized_like_real_verification() -> None:
    for design in HEAVY.values():
        assert design.vectors >= 100_000, design.name
        assert design.stimulus is not None and design.clock is not None and design.reset is not None
        assert design.cycle_cost_us is not None and design.cycle_cost_us > 0
        assert len(design.spec) > 600 and design.interface() in design.prompt()
        ports = [PortSpec(p.name, p.direction, p.width) for p in design.ports]
        assert precheck(design.reference, MODULE, ports).ok, design.id


def test_each_heavy_task_has_its_own_simulation_timeout() -> None:
    gym = VerilogGym(suite="heavy")
    timeouts = dict(gym.settings.sim_timeouts)
    assert set(timeouts) == set(HEAVY)
    for task_id, design in HEAVY.items():
        assert timeouts[task_id] >= HEAVY_MARGIN * design.cycle_cost_us * 1e-6 * design.vectors
    assert gym.sim_timeout_s == max(timeouts.values())  # the step timeout covers the longest
    assert gym.step_timeout_s > gym.sim_timeout_s
    fewer = VerilogGym(suite="heavy", vectors=SHORT)
    assert max(dict(fewer.settings.sim_timeouts).values()) < 5
    fixed = VerilogGym(suite="heavy", sim_timeout_s=7)  # an explicit limit applies to every task
    assert fixed.sim_timeout_s == 7 and fixed.settings.sim_timeouts == ()
    assert VerilogGym().settings.sim_timeouts == ()


def test_vectors_and_the_stimulus_file_are_computed_once_per_task() -> None:
    design = HEAVY["verilog/heavy/muldiv32"]
    options = BenchOptions(SHORT, 1, 0, False, "icarus", "sv")
    first, second = BuiltinBench(design, options), BuiltinBench(design, options)
    assert first.vectors is second.vectors  # the golden model ran once for both
    assert BuiltinBench(design, BenchOptions(SHORT, 1, 1, False, "icarus", "sv")).vectors is not first.vectors
    assert first.vectors == make_vectors(design, 0, SHORT, 1)


def _recorded(design, vectors, rng: random.Random, flips: float, xz: bool) -> bytes:
    widths = [p.width for p in design.outputs]
    lines = []
    for word in vectors.expected:
        row = [format(v, f"0{w}b") for v, w in zip(testbench._fields(word, widths), widths)]
        if rng.random() < flips:
            k = rng.randrange(len(row))
            j = rng.randrange(widths[k])
            bit = rng.choice("xz") if xz else "10"[int(row[k][j])]
            row[k] = row[k][:j] + bit + row[k][j + 1 :]
        lines.append(" ".join([*row, "0" * len(widths)]))  # no output moved inside its window
    return ("\n".join(lines) + "\n").encode()


def test_whole_file_scoring_agrees_with_line_by_line_scoring() -> None:
    rng = random.Random(7)
    designs = [*HEAVY.values(), *(builtin_tasks()[i] for i in ("verilog/memory/sync_fifo8", "verilog/bus/apb_registers"))]
    for design in designs:
        vectors = make_vectors(design, 0, 400, 2)
        widths = [p.width for p in design.outputs]
        for flips, xz in ((0.0, False), (0.002, False), (0.3, False), (1.0, False), (0.05, True)):
            data = _recorded(design, vectors, rng, flips, xz)
            assert testbench.score(design, vectors, data) == testbench._line_score(design, vectors, widths, data)
        good = _recorded(design, vectors, rng, 0.0, False)
        for bad in (good[:-1], good + b"0\n", good.replace(b" ", b"  ", 1), good.upper(), None):
            assert testbench.score(design, vectors, bad) == testbench._line_score(design, vectors, widths, bad)


def test_the_vetted_mutants_match_the_heavy_references() -> None:
    recorded = vetted("heavy")
    assert set(recorded["tasks"]) == set(HEAVY), "run: python -m gyms.verilog.answers.mutant_vetting --suite heavy --write"
    for task_id, design in HEAVY.items():
        entries = recorded["tasks"][task_id]
        current = {m.label: m.digest for m in task_mutants(design)}
        assert entries, f"{task_id}: no mutant was vetted"
        for entry in entries:
            assert current.get(entry["label"]) == entry["digest"], f"{task_id}: rerun the vetting"
            assert max(entry["rewards"]) <= recorded["max_reward"]
        assert len(vetted_mutants(design)) == len(entries)


@needs_icarus
def test_every_heavy_reference_passes_and_a_vetted_mutant_fails() -> None:
    """On short runs: SCREEN_VECTORS cycles with seed 0 is the screen every vetted mutant failed."""
    gym = VerilogGym(suite="heavy", vectors=SCREEN_VECTORS)
    for task in gym.tasks():
        design = HEAVY[task.id]
        with gym.open(task) as episode:
            result = episode.step(answer(design.reference))
        assert result.outcome is Outcome.PASS, (task.id, result.observation)
        assert result.info["checks_total"] >= SCREEN_VECTORS
        mutant = vetted_mutants(design)[0]
        with gym.open(task) as episode:
            result = episode.step(answer(mutant.text))
        assert result.outcome is Outcome.FAIL and result.reward <= 0.9, (task.id, mutant.label)
        assert "MISMATCH cycle" in result.observation


@needs_icarus
def test_a_heavy_reference_passes_its_full_length_check() -> None:
    """One task at its full default length (200 000 cycles), the cheapest of the suite."""
    gym = VerilogGym(suite="heavy", tasks="muldiv32")
    task = gym.tasks()[0]
    with gym.open(task) as episode:
        result = episode.step(answer(HEAVY[task.id].reference))
    assert result.outcome is Outcome.PASS, result.observation
    assert result.info["checks_total"] == 3 * HEAVY[task.id].vectors


@needs_icarus
def test_harness_gyms_check_verilog_heavy() -> None:
    """The conformance check of one heavy task (all its candidates, the hang included), on short
    runs, through the installed command."""
    done = harness(
        "gyms", "check", "verilog", "-o", "suite=heavy", "-o", f"vectors={SCREEN_VECTORS}", "-o", "tasks=xtea*",
        "--gym-workers", "2", "--json", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] and report["tasks"] == 1
    labels = {c["label"] for c in report["checks"]}
    assert {"reference", "syntax-error", "never-finishes"} <= labels
    assert any(label.startswith("mutant:") for label in labels)
