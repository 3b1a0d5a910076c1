"""Lean tasks: the built-in core-Lean theorems (suites `core` and `heavy`), and loaders for
miniF2F-style sources.

A `LeanTask` holds the fixed part of a task (header and statement) and what the gym needs to
check an answer; `to_task` turns it into the `Task` the trainer sees. Tasks from the loaders
state theorems over Mathlib: they need the `native` backend with a Lean project that has
Mathlib (`requires_mathlib`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gyms.base import Task
from gyms.sandbox import hide_from_sandboxes

CORE_FILE = Path(__file__).with_name("tasks") / "core.lean"
# The heavy suite: theorems whose check costs real kernel and elaborator work (`-o suite=heavy`).
HEAVY_FILE = CORE_FILE.with_name("heavy.lean")
SUITES = {"core": CORE_FILE, "heavy": HEAVY_FILE}
hide_from_sandboxes(CORE_FILE.parent)  # the reference proofs: the answer key stays on the host
SPLITS = ("train", "test")
# One built-in task in five (by position in the file) is held out for `test`.
_TEST_EVERY = 5
_CORE_TASK = re.compile(
    r"/--(?P<doc>.*?)-/\s*\n(?P<notes>(?:--[^\n]*\n)*)(?P<statement>theorem\s+(?P<name>\S+).*?):=(?P<proof>.*?)(?=\n/--|\Z)",
    re.DOTALL,
)
_WRONG = re.compile(r"^-- wrong:\s*(.+)$", re.MULTILINE)
# A theorem ending in `:= by sorry` (or `:= sorry`), as in miniF2F and in .lean task files.
_SORRY_END = re.compile(r":=\s*(?:by\s+)?sorry\s*$")
_THEOREM = re.compile(r"^\s*(?:theorem|lemma)\s+(?P<name>[^\s:({\[]+)", re.MULTILINE)


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
        raise ValueError(f"unknown split {split!r}; the lean gym has splits {', '.join(SPLITS)}")


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
    """A miniF2F-style JSONL file: one object per line with `name`, `split`, `formal_statement`
    (a theorem ending in `:= by sorry`) and `header` (imports and `open`s)."""
    tasks = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            name, statement, header = str(row["name"]), str(row["formal_statement"]), str(row.get("header", ""))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{path}:{number}: not a miniF2F row ({exc}); each line needs name, split, formal_statement, header"
            ) from None
        split = {"valid": "train", "validation": "train", "train": "train", "test": "test"}.get(
            str(row.get("split")), "test"
        )
        tasks.append(_sorry_task(f"minif2f/{name}", statement, header, split, "minif2f", f"{path}:{number}"))
    return tasks


def directory_tasks(directory: Path) -> list[LeanTask]:
    """A directory of .lean files, each with a header and one theorem ending in `:= by sorry`."""
    tasks = []
    for file in sorted(directory.rglob("*.lean")):
        text = file.read_text()
        theorem = _THEOREM.search(text)
        if theorem is None:
            raise ValueError(f"{file} holds no theorem; each task file needs one theorem ending in `:= by sorry`")
        stem = file.relative_to(directory).with_suffix("").as_posix()
        header = text[: theorem.start()].lstrip("\n")
        tasks.append(_sorry_task(f"dir/{stem}", text[theorem.start() :], header, "train", "directory", str(file)))
    return tasks


def _sorry_task(task_id: str, theorem: str, header: str, split: str, source: str, where: str) -> LeanTask:
    statement = theorem.strip()
    match = _SORRY_END.search(statement)
    name = _THEOREM.search(statement)
    if match is None or name is None:
        raise ValueError(f"{where}: the statement must be one theorem ending in `:= by sorry`")
    if header and not header.endswith("\n"):
        header += "\n"
    return LeanTask(
        id=task_id,
        name=name["name"],
        statement=statement[: match.start()].strip(),
        header=header,
        split=split,
        source=source,
        requires_mathlib=True,  # miniF2F-style sources state theorems over Mathlib
    )
