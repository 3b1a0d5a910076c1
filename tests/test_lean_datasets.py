"""The lean gym's dataset loaders on miniF2F's published forms: DeepSeek-Prover's JSONL
(`tests/fixtures/lean/minif2f.jsonl`), the miniF2F-lean4 Lake project in its folder layout
(`miniF2F-lean4/`) and its earlier one-file-per-split layout (`miniF2F-lean4-files/`), and a
plain folder of .lean files. Loading needs no Lean; the last test (slow) checks on the real
wasm Lean that a task loaded from each accepted statement ending takes the answer the prompt
asks for."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_lean_wasm import wasm_lean  # noqa: F401  (the fixture: installs the wasm Lean if missing)

from gyms.base import Outcome
from gyms.lean import LeanGym
from gyms.lean.episode import split_header
from gyms.lean.extract import last_block
from gyms.lean.tasks import directory_tasks, minif2f_tasks

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lean"
JSONL = FIXTURES / "minif2f.jsonl"
FOLDERS = FIXTURES / "miniF2F-lean4"  # MiniF2F/Test/*.lean, MiniF2F/Valid/*.lean
FILES = FIXTURES / "miniF2F-lean4-files"  # MiniF2F/Test.lean, MiniF2F/Valid.lean
HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat\n\n"
# Each accepted ending, as the published sources write it and with trailing whitespace or comments.
ENDINGS = [":= by\n", ":= by sorry", ":=", ":= sorry", ":= by\n  sorry\n\n", ":=\n  by sorry  -- to do\n"]


def _row(name: str, statement: str, split: str = "test") -> str:
    fields = {"name": name, "split": split, "formal_statement": statement, "goal": "⊢ 1 + 1 = 2", "header": HEADER}
    return json.dumps(fields, ensure_ascii=False) + "\n"


# -- DeepSeek-Prover's JSONL -------------------------------------------------------------------


def test_the_deepseek_jsonl_loads_with_its_splits() -> None:
    tasks = minif2f_tasks(JSONL)
    assert [(t.id, t.split) for t in tasks] == [
        ("minif2f/toy_linear_solve", "train"),  # split "valid"
        ("minif2f/toy_sum_first_five", "train"),
        ("minif2f/toy_power_mod", "test"),
        ("minif2f/toy_abs_bound", "test"),
    ]
    first_five = tasks[1]
    assert first_five.statement == (
        "theorem toy_sum_first_five (n : ℕ) (h₀ : n = 4) :\n  ∑ k in Finset.range (n + 1), k = 10"
    )
    assert first_five.header == HEADER and first_five.requires_mathlib
    assert first_five.description == "What is $0 + 1 + 2 + \\dots + n$ when $n = 4$? Show that it is 10."
    prompt = first_five.to_task().prompt
    assert prompt.startswith(first_five.description) and "Lean 4 with Mathlib" in prompt
    assert last_block(prompt) == f"{HEADER}{first_five.statement} := by\n  sorry\n"


@pytest.mark.parametrize("ending", ENDINGS)
def test_every_accepted_ending_gives_the_same_task(tmp_path: Path, ending: str) -> None:
    statement = "theorem toy_two :\n    (1 : ℕ) + 1 = 2"
    rows = tmp_path / "rows.jsonl"
    rows.write_text(_row("toy_two", f"{statement} {ending}"))
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "toy_two.lean").write_text(f"{HEADER}{statement} {ending}")
    for task in minif2f_tasks(rows) + directory_tasks(tmp_path / "files"):
        assert task.statement == statement and task.name == "toy_two"
        assert last_block(task.to_task().prompt).endswith(f"{statement} := by\n  sorry\n")


@pytest.mark.parametrize("ending", [":= by simp", ":= by\n  norm_num", "", ": True", ":= by sorry\n#eval 1"])
def test_any_other_ending_is_one_error_naming_file_line_and_endings(tmp_path: Path, ending: str) -> None:
    rows = tmp_path / "rows.jsonl"
    good, bad = "theorem toy_one : 1 = 1 := by", f"theorem toy_two : 2 = 2 {ending}"
    rows.write_text(_row("toy_one", good) + _row("toy_two", bad))
    accepted = re.escape("`:=`, `:= by`, `:= by sorry` or `:= sorry`")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(rows))}:2: theorem toy_two must end in {accepted}"):
        minif2f_tasks(rows)
    (tmp_path / "Valid").mkdir()
    file = tmp_path / "Valid" / "toy_two.lean"
    file.write_text(f"{HEADER}theorem toy_two : 2 = 2 {ending}\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(file))}:8: theorem toy_two must end in {accepted}"):
        directory_tasks(tmp_path)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "not a miniF2F row"),
        ('{"name": "toy", "formal_statement": "theorem toy : 1 = 1 := by"}', "not a miniF2F row .*'split'"),
        (_row("toy", "theorem toy : 1 = 1 := by", split="dev"), "split 'dev' is not one of train, valid, .*, test"),
        (_row("toy", "def two := 2\ntheorem toy : 1 = 1 := by"), "formal_statement must be one theorem"),
        (_row("toy", "theorem toy : 1 = 1 := by sorry\ntheorem toy' : 2 = 2 := by"), "formal_statement must be one"),
        (_row("toy_one", "theorem toy_one : 1 = 1 := by"), "task id 'minif2f/toy_one' appears twice"),
    ],
)
def test_a_bad_row_is_one_error_naming_the_line(tmp_path: Path, line: str, says: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(_row("toy_one", "theorem toy_one : 1 = 1 := by") + "\n" + line.strip() + "\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(rows))}(:3)?: {says}"):
        minif2f_tasks(rows)


# -- the miniF2F-lean4 Lake project ------------------------------------------------------------


def test_the_minif2f_lean4_folders_load_as_test_and_train() -> None:
    gym = LeanGym(source=str(FOLDERS), backend="native")  # MiniF2F.lean, Test.lean, Valid.lean hold only imports
    assert [t.id for t in gym.tasks("train")] == [
        "dir/MiniF2F/Valid/toy_cube_sum",
        "dir/MiniF2F/Valid/toy_even_square",
        "dir/MiniF2F/Valid/toy_linear_pair",
    ]
    assert [t.id for t in gym.tasks("test")] == [
        "dir/MiniF2F/Test/toy_digits_mod",
        "dir/MiniF2F/Test/toy_square_nonneg",
    ]
    task = gym.tasks("test")[0]
    assert task.metadata["statement"] == "theorem toy_digits_mod (n : ℕ) (h₀ : n % 10 = 7) :\n  (3 * n) % 10 = 1"
    assert split_header(task.metadata["header"])[0] == "import Mathlib\n"
    assert task.metadata["requires_mathlib"]


def test_the_one_file_per_split_layout_gives_the_same_tasks() -> None:
    files, folders = directory_tasks(FILES), directory_tasks(FOLDERS)
    assert sorted((t.id, t.split) for t in files) == sorted((t.id, t.split) for t in folders)
    by_id = {t.id: t for t in folders}
    for task in files:
        assert task.statement.split() == by_id[task.id].statement.split()
        # the licence comment is not part of the header: the imports start it
        imports, rest = split_header(task.header)
        assert (imports, rest) == ("import MiniF2F.Minif2fImport\n", "open BigOperators Real Nat Topology\n\n\n")
    assert "toy_commented_out" not in {t.name for t in files}


def test_a_source_at_the_test_folder_is_the_test_split() -> None:
    tasks = directory_tasks(FOLDERS / "MiniF2F" / "Test")
    assert [(t.id, t.split) for t in tasks] == [("dir/toy_digits_mod", "test"), ("dir/toy_square_nonneg", "test")]


def test_lakes_files_and_packages_are_not_tasks(tmp_path: Path) -> None:
    project = tmp_path / "miniF2F-lean4"
    shutil.copytree(FOLDERS, project)
    for packages in (".lake/packages/mathlib/Mathlib", "lake-packages/mathlib/Mathlib"):
        (project / packages).mkdir(parents=True)
        (project / packages / "Basic.lean").write_text("theorem mathlib_lemma : 1 = 1 := by rfl\n")
    assert {t.id for t in directory_tasks(project)} == {t.id for t in directory_tasks(FOLDERS)}


def test_a_file_with_code_but_no_theorem_is_an_error(tmp_path: Path) -> None:
    project = tmp_path / "miniF2F-lean4"
    shutil.copytree(FOLDERS, project)
    (project / "Main.lean").write_text('import MiniF2F\n\ndef main : IO Unit :=\n  IO.println "hello"\n')
    with pytest.raises(ValueError, match=rf"^{re.escape(str(project / 'Main.lean'))} holds Lean code but no theorem"):
        directory_tasks(project)


def test_a_folder_without_any_theorem_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "All.lean").write_text("import Mathlib\n")
    with pytest.raises(ValueError, match="holds no .lean file with a theorem"):
        directory_tasks(tmp_path)


def test_a_plain_folder_of_lean_files_is_train() -> None:
    tasks = directory_tasks(FIXTURES / "problems")
    assert [(t.id, t.split) for t in tasks] == [("dir/algebra/toy_abs", "train"), ("dir/toy_square", "train")]
    square = tasks[1]
    assert square.statement == "theorem toy_square_even (n : ℕ) (h : Even n) : Even (n ^ 2)"
    imports, rest = split_header(square.header)
    assert (imports, rest) == ("import Mathlib\n", "\nopen Nat\n\n/-- The square of an even number is even. -/\n")


def test_an_unknown_split_names_the_splits() -> None:
    gym = LeanGym(source=str(JSONL), backend="native")
    with pytest.raises(ValueError, match=r"unknown split 'valid'; the lean gym has splits train, test \(miniF2F's"):
        gym.tasks("valid")


# -- Mathlib and the wasm backend --------------------------------------------------------------


@pytest.mark.parametrize("source", [JSONL, FOLDERS, FILES])
def test_a_mathlib_source_is_refused_on_wasm_and_loads_on_native(source: Path) -> None:
    with pytest.raises(ValueError, match=rf"source '{re.escape(str(source))}': the wasm Lean has core Lean only, "
                                         "no Mathlib: use backend=native with repl="):  # fmt: skip
        LeanGym(source=str(source))  # the default backend, wasm
    native = LeanGym(source=str(source), backend="native", repl="/nonexistent/repl")
    task = native.tasks("test")[0]
    assert native.open(task).task is task and native.excluded_tasks() == {}


def test_on_wasm_the_mathlib_tasks_of_a_mixed_source_are_left_out_and_listed(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "problems", tmp_path / "problems")
    (tmp_path / "problems" / "core_only.lean").write_text("theorem core_only (a : Nat) : a + 0 = a := by\n")
    gym = LeanGym(source=str(tmp_path / "problems"))
    assert [t.id for t in gym.tasks("train")] == ["dir/core_only"]
    excluded = gym.excluded_tasks()
    assert sorted(excluded) == ["dir/algebra/toy_abs", "dir/toy_square"]
    assert all(reason.startswith("needs Mathlib: ") and "backend=native" in reason for reason in excluded.values())
    mathlib_task = LeanGym(source=str(tmp_path / "problems"), backend="native").tasks("train")[0]
    with pytest.raises(ValueError, match=rf"task '{re.escape(mathlib_task.id)}' needs Mathlib.* use backend=native"):
        gym.open(mathlib_task)  # a task made elsewhere is refused too, never checked without its imports


def _core_only_endings(directory: Path) -> Path:
    """One core-Lean theorem per accepted ending, in a folder of .lean files without imports."""
    statement = "(a b : Nat) (h : a < b) : a + 1 ≤ b"
    for name, ending in [("ending_by", ":= by\n"), ("ending_by_sorry", ":= by sorry"), ("ending_assign", ":=\n")]:
        (directory / f"{name}.lean").write_text(f"theorem {name} {statement} {ending}")
    return directory


@pytest.mark.slow
def test_each_ending_takes_the_answer_its_prompt_asks_for_on_the_wasm_lean(
    wasm_lean: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    gym = LeanGym(source=str(_core_only_endings(tmp_path)))
    tasks = gym.tasks("train")
    assert len(tasks) == 3 and not any(t.metadata["requires_mathlib"] for t in tasks)
    for task in tasks:
        shown = last_block(task.prompt)  # the statement as the prompt shows it, `:= by\n  sorry`
        assert shown.endswith(":= by\n  sorry\n")
        answer = shown.removesuffix("sorry\n") + "omega\n"
        restated = gym.open(task).step(f"```lean\n{answer}```")
        assert restated.outcome is Outcome.PASS, (task.id, restated.observation)
        assert gym.open(task).step("```lean\nby\n  omega\n```").outcome is Outcome.PASS, task.id
    wrong = gym.open(tasks[0]).step("```lean\nby\n  rfl\n```")
    assert wrong.outcome is Outcome.FAIL and "Lean says" in wrong.observation
