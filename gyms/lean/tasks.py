"""Lean tasks: the built-in core-Lean theorems (suites `core` and `heavy`), and loaders for
miniF2F's published forms: DeepSeek-Prover's JSONL and the miniF2F-lean4 Lake project (or any
directory of .lean files).

A `LeanTask` holds the fixed part of a task (header and statement) and what the gym needs to
check an answer; `to_task` turns it into the `Task` the trainer sees. A task whose header
imports more than core Lean (Mathlib, a project's modules) needs the `native` backend with a
Lean project that has those modules (`requires_mathlib`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gyms.base import Task
from gyms.lean.lexer import code_only

CORE_FILE = Path(__file__).with_name("tasks") / "core.lean"
# The heavy suite: theorems whose check costs real kernel and elaborator work (`-o suite=heavy`).
HEAVY_FILE = CORE_FILE.with_name("heavy.lean")
SUITES = {"core": CORE_FILE, "heavy": HEAVY_FILE}
SPLITS = ("train", "test")
# miniF2F's splits: its `valid` problems are the ones a run may train on, `test` is held out.
DATASET_SPLITS = {"train": "train", "valid": "train", "validation": "train", "test": "test"}
# One built-in task in five (by position in the file) is held out for `test`.
_TEST_EVERY = 5
_CORE_TASK = re.compile(
    r"/--(?P<doc>.*?)-/\s*\n(?P<notes>(?:--[^\n]*\n)*)(?P<statement>theorem\s+(?P<name>\S+).*?):=(?P<proof>.*?)(?=\n/--|\Z)",
    re.DOTALL,
)
_WRONG = re.compile(r"^-- wrong:\s*(.+)$", re.MULTILINE)
_THEOREM = re.compile(r"^[ \t]*(?:theorem|lemma)\s+(?P<name>[^\s:({\[]+)", re.MULTILINE)
# How a task's statement may end: `:=`, `:= by` (DeepSeek-Prover), `:= by sorry` (miniF2F-lean4),
# `:= sorry`; then only whitespace (comments are blanked before this is matched).
_ENDING = re.compile(r":=\s*(?:by(?:\s+sorry)?|sorry)?\s*\Z")
ENDINGS = "`:=`, `:= by`, `:= by sorry` or `:= sorry`"
_CORE_MODULES = ("Init", "Std", "Lean")  # what the wasm Lean ships
# Never task files: Lake's configuration, and the packages Lake checks out (all of Mathlib).
_LAKE_FILE = "lakefile.lean"
_LAKE_PACKAGES = "lake-packages"  # older Lake; later ones use `.lake/`


@dataclass(frozen=True)
class LeanTask:
    id: str
    name: str  # the theorem's name
    statement: str  # `theorem name ...`, up to (not including) `:=`
    header: str = ""  # imports, options and `open`s written before the statement
    reference: str | None = None  # a proof (what follows `:=`)
    wrong: tuple[str, ...] = ()  # proofs known to fail
    description: str = ""
    split: str = "train"
    source: str = "core"
    requires_mathlib: bool = False

    def to_task(self) -> Task:
        return Task(
            id=self.id,
            prompt=prompt(self),
            reference=self.reference,
            metadata={
                "name": self.name,
                "statement": self.statement,
                "header": self.header,
                "wrong": list(self.wrong),
                "source": self.source,
                "requires_mathlib": self.requires_mathlib,
            },
            split=self.split,
        )


def prompt(task: LeanTask) -> str:
    library = "Lean 4 with Mathlib" if task.requires_mathlib else "Lean 4 (core library only: no Mathlib)"
    about = f"{task.description}\n\n" if task.description else ""
    return (
        f"{about}Prove this theorem in {library}:\n\n```lean\n{task.header}{task.statement} := by\n  sorry\n```\n\n"
        "Reply with the proof that replaces `by sorry` (a `by` tactic block or a term) in a ```lean code block. "
        "Do not change the statement."
    )


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(
            f"unknown split {split!r}; the lean gym has splits {', '.join(SPLITS)} "
            "(miniF2F's valid problems are in train)"
        )


def core_tasks(path: Path = CORE_FILE, suite: str = "core") -> list[LeanTask]:
    """The tasks of a file in core.lean's format; ids are `<suite>/<theorem name>`."""
    tasks = []
    for index, match in enumerate(_CORE_TASK.finditer(path.read_text())):
        tasks.append(
            LeanTask(
                id=f"{suite}/{match['name']}",
                name=match["name"],
                statement=match["statement"].strip(),
                reference=match["proof"].strip(),
                wrong=tuple(w.strip() for w in _WRONG.findall(match["notes"])),
                description=" ".join(match["doc"].split()),
                split="test" if index % _TEST_EVERY == _TEST_EVERY - 1 else "train",
                source=suite,
            )
        )
    return tasks


def suite_tasks(suite: str) -> list[LeanTask]:
    """A built-in suite: `core` (quick checks) or `heavy` (checks that cost real work)."""
    if suite not in SUITES:
        raise ValueError(f"lean gym option suite={suite!r}: use one of {', '.join(SUITES)}")
    return core_tasks(SUITES[suite], suite)


def minif2f_tasks(path: Path) -> list[LeanTask]:
    """DeepSeek-Prover's miniF2F JSONL: one object per line with `name`, `split` (valid, test),
    `formal_statement` (one theorem with an accepted ending), `header` (imports, options,
    `open`s) and optionally `informal_prefix` (a doc comment: the task's description)."""
    tasks = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
            name, split, statement = str(row["name"]), str(row["split"]), str(row["formal_statement"])
            header, informal = str(row.get("header", "")), str(row.get("informal_prefix", ""))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{where}: not a miniF2F row ({exc}); each line needs name, split, formal_statement, header"
            ) from None
        if split not in DATASET_SPLITS:
            raise ValueError(f"{where}: split {split!r} is not one of {', '.join(DATASET_SPLITS)}")
        before, theorems = _theorems(statement, lambda _: where)
        if len(theorems) != 1 or code_only(before).strip():
            raise ValueError(f"{where}: formal_statement must be one theorem ending in {ENDINGS}")
        (theorem,) = theorems
        tasks.append(
            _task(f"minif2f/{name}", theorem, header, DATASET_SPLITS[split], "minif2f", _doc_text(informal))
        )
    return _unique(tasks, path)


def directory_tasks(directory: Path) -> list[LeanTask]:
    """The .lean files below `directory` (a miniF2F-lean4 checkout, or any folder of task
    files), each a header and one or more theorems with accepted endings. Files that hold only
    imports (miniF2F-lean4's `MiniF2F.lean`, `MiniF2F/Test.lean`...) are skipped, and so are
    Lake's files; a path through a folder or file named Test goes to `test`, all else (Valid)
    to `train`. Ids: `dir/<path without .lean>`, plus `/<theorem name>` in a file of several."""
    tasks = []
    top = directory.resolve().name  # source=.../MiniF2F/Test is the test split too
    for file in sorted(directory.rglob("*.lean")):
        relative = file.relative_to(directory)
        if file.name == _LAKE_FILE or any(p.startswith(".") or p == _LAKE_PACKAGES for p in relative.parts):
            continue
        text = file.read_text()
        header, theorems = _theorems(text, lambda at: f"{file}:{_line(text, at)}")
        if not theorems:
            if all(not line.strip() or line.split()[0] == "import" for line in code_only(text).splitlines()):
                continue  # an imports-only aggregator: it holds no theorem by design
            raise ValueError(
                f"{file} holds Lean code but no theorem; each task file needs a theorem ending in {ENDINGS} "
                "(remove the file, or point source at the folder that holds the task files)"
            )
        stem = relative.with_suffix("").as_posix()
        split = "test" if any(p.lower() == "test" for p in (top, *relative.with_suffix("").parts)) else "train"
        for theorem in theorems:
            task_id = f"dir/{stem}" if len(theorems) == 1 else f"dir/{stem}/{theorem.name}"
            tasks.append(_task(task_id, theorem, header, split, "directory"))
    if not tasks:
        raise ValueError(f"{directory} holds no .lean file with a theorem; a task file needs one ending in {ENDINGS}")
    return _unique(tasks, directory)


@dataclass(frozen=True)
class _Theorem:
    name: str
    statement: str  # up to (not including) its `:=`


def _theorems(text: str, where: Callable[[int], str]) -> tuple[str, list[_Theorem]]:
    """(the header: the code before the first theorem, from its first line of code; the
    theorems, each cut at its accepted ending). Comments are blanked before matching, so a
    commented-out theorem or a trailing comment changes nothing. `where(offset)` names a place
    in `text` for an error."""
    code = code_only(text)
    starts = list(_THEOREM.finditer(code))
    theorems = []
    for match, following in zip(starts, starts[1:] + [None]):
        end = len(text) if following is None else following.start()
        ending = _ENDING.search(code, match.start(), end)
        if ending is None:
            raise ValueError(
                f"{where(match.start())}: theorem {match['name']} must end in {ENDINGS}, with only comments after it"
            )
        theorems.append(_Theorem(match["name"], text[match.start() : ending.start()].strip()))
    cut = starts[0].start() if starts else len(text)
    first_code = len(code[:cut]) - len(code[:cut].lstrip())  # a licence comment does not start the header
    return text[first_code:cut], theorems


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _task(task_id: str, theorem: _Theorem, header: str, split: str, source: str, description: str = "") -> LeanTask:
    if header and not header.endswith("\n"):
        header += "\n"
    return LeanTask(
        id=task_id,
        name=theorem.name,
        statement=theorem.statement,
        header=header,
        description=description,
        split=split,
        source=source,
        requires_mathlib=any(m.split(".")[0] not in _CORE_MODULES for m in _imports(header)),
    )


def _imports(header: str) -> list[str]:
    return [m for line in code_only(header).splitlines() if line.split()[:1] == ["import"] for m in line.split()[1:]]


def _doc_text(informal: str) -> str:
    """The text of a doc comment `/-- ... -/` (DeepSeek's `informal_prefix`)."""
    return informal.strip().removeprefix("/--").removesuffix("-/").strip()


def _unique(tasks: list[LeanTask], source: Path) -> list[LeanTask]:
    seen = set()
    for task in tasks:
        if task.id in seen:
            raise ValueError(f"{source}: task id {task.id!r} appears twice; theorem names must be unique")
        seen.add(task.id)
    return tasks
