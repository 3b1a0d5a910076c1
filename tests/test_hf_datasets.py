"""Hugging Face datasets on disk (gyms/hf_datasets.py), and the Verilog loader that reads
VerilogEval v2 from one (gyms/verilog/datasets/hf_dataset.py). Datasets are built here with the
`datasets` library from the VerilogEval-format fixtures in tests/fixtures/verilog; no hub."""

from __future__ import annotations

from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import needs_icarus

from gyms.base import Outcome
from gyms.hf_datasets import read_dataset
from gyms.verilog import VerilogGym
from gyms.verilog.answers.candidates import answer
from gyms.verilog.datasets.hf_dataset import hf_dataset_tasks
from gyms.verilog.datasets.verilog_eval import verilog_eval_tasks

VERILOG_EVAL = Path(__file__).parent / "fixtures" / "verilog" / "verilog_eval"
SUFFIXES = ("prompt.txt", "ref.sv", "test.sv")
STEMS = sorted(p.name.removesuffix("_prompt.txt") for p in VERILOG_EVAL.glob("Prob*_prompt.txt")
               if all((VERILOG_EVAL / p.name.replace("prompt.txt", s)).is_file() for s in SUFFIXES))  # fmt: skip


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "heavygym" / "hf-verilog"


def verilog_rows() -> dict[str, list[str]]:
    """The fixture problems as the hub's VerilogEval v2 spec-to-RTL rows."""
    read = {suffix: [(VERILOG_EVAL / f"{stem}_{suffix}").read_text() for stem in STEMS] for suffix in SUFFIXES}
    return {"problem_id": list(STEMS), "prompt": read["prompt.txt"], "ref": read["ref.sv"], "test": read["test.sv"]}


def saved(path: Path, columns: dict[str, list[str]]) -> Path:
    datasets.DatasetDict({"test": datasets.Dataset.from_dict(columns)}).save_to_disk(str(path))
    return path


# -- reading the layouts -----------------------------------------------------------------------


def test_each_layout_gives_its_splits(tmp_path: Path) -> None:
    table = pa.table({"x": [1, 2, 3]})
    pq.write_table(table, tmp_path / "one.parquet")
    parts = {"train": datasets.Dataset(table), "validation": datasets.Dataset(table.slice(2))}
    datasets.DatasetDict(parts).save_to_disk(str(tmp_path / "dict"))
    datasets.Dataset(table, split="test").save_to_disk(str(tmp_path / "single"))
    (tmp_path / "hub" / "data").mkdir(parents=True)
    pq.write_table(table, tmp_path / "hub" / "data" / "train-00000-of-00001.parquet")
    pq.write_table(table.slice(1), tmp_path / "hub" / "data" / "validation-00000-of-00001.parquet")
    found = {name: [(p.split, p.table.column("x").to_pylist()) for p in read_dataset(tmp_path / name)]
             for name in ("one.parquet", "dict", "single", "hub")}  # fmt: skip
    assert found == {
        "one.parquet": [(None, [1, 2, 3])],
        "dict": [("train", [1, 2, 3]), ("validation", [3])],
        "single": [("test", [1, 2, 3])],
        "hub": [("train", [1, 2, 3]), ("validation", [2, 3])],
    }


def test_a_saved_selection_is_read_as_selected(tmp_path: Path) -> None:
    datasets.Dataset.from_dict({"x": [1, 2, 3, 4]}).select([3, 1]).save_to_disk(str(tmp_path))
    assert read_dataset(tmp_path)[0].table.column("x").to_pylist() == [4, 2]


def test_mixed_shard_kinds_are_refused(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "train-00000-of-00001.parquet")
    (tmp_path / "test-00000-of-00001.arrow").write_bytes(b"")
    with pytest.raises(ValueError, match=f"{tmp_path} holds both parquet and arrow shards"):
        read_dataset(tmp_path)


def test_a_file_that_is_not_parquet(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("x\n1\n")
    with pytest.raises(ValueError, match=r"rows.csv is not a dataset: pass a parquet file, a folder written by"):
        read_dataset(tmp_path / "rows.csv")


# -- VerilogEval v2 from a saved dataset ------------------------------------------------------


def test_rows_become_the_same_tasks_as_the_benchmark_folder(tmp_path: Path, cache: Path) -> None:
    loaded = hf_dataset_tasks(saved(tmp_path / "ds", verilog_rows()))
    tasks, expected = loaded.tasks, verilog_eval_tasks(VERILOG_EVAL).tasks
    assert loaded.unloadable == {}
    assert [(t.id, t.prompt, t.reference, t.metadata["ports"]) for t in tasks] == \
           [(t.id, t.prompt, t.reference, t.metadata["ports"]) for t in expected]  # fmt: skip
    (folder,) = cache.iterdir()  # content-addressed: one folder for these rows
    assert {t.metadata["dir"] for t in tasks} == {str(folder)}
    files = sorted(f"{stem}_{suffix}" for stem in STEMS for suffix in SUFFIXES)
    assert sorted(f.name for f in folder.iterdir()) == files
    assert all((folder / name).read_bytes() == (VERILOG_EVAL / name).read_bytes() for name in files)


def test_the_materialised_folder_is_reused_and_new_rows_get_their_own(tmp_path: Path, cache: Path) -> None:
    rows = verilog_rows()
    first = hf_dataset_tasks(saved(tmp_path / "a", rows)).tasks[0].metadata["dir"]
    marker = Path(first) / "Prob001_nand3_prompt.txt"
    stamp = marker.stat().st_mtime_ns
    assert hf_dataset_tasks(saved(tmp_path / "b", rows)).tasks[0].metadata["dir"] == first
    assert marker.stat().st_mtime_ns == stamp  # not written again
    rows["prompt"][0] += "\nAll inputs are active high.\n"
    assert hf_dataset_tasks(saved(tmp_path / "c", rows)).tasks[0].metadata["dir"] != first
    assert len(list(cache.iterdir())) == 2 and not any(p.name.startswith(".partial") for p in cache.iterdir())


def test_hub_parquet_shards_are_read_too(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table(verilog_rows()), tmp_path / "data" / "test-00000-of-00001.parquet")
    assert [t.id for t in hf_dataset_tasks(tmp_path).tasks] == [f"verilog-eval/{s}" for s in STEMS]


def test_an_unrecognised_schema_names_found_and_needed(tmp_path: Path) -> None:
    v1 = {"task_id": ["nand3"], "prompt": ["module top_module(...);"], "canonical_solution": ["endmodule"],
          "test": ["module tb; endmodule"]}  # fmt: skip
    root = saved(tmp_path, v1)
    with pytest.raises(ValueError, match=rf"^{root}: found columns canonical_solution, prompt, task_id, test; "
                                         "needed text columns problem_id, prompt, ref and test"):  # fmt: skip
        hf_dataset_tasks(root)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"problem_id": ["../evil", *STEMS[1:]]}, r"row 0 of split test: problem_id '../evil' is not a VerilogEval"),
        ({"ref": ["", *STEMS[1:]]}, r"row 0 of split test has no ref"),
        ({"problem_id": [STEMS[0], *STEMS[:-1]]}, r"row 1 of split test: problem Prob001_nand3 appears twice"),
    ],
)
def test_bad_rows_are_named(tmp_path: Path, change: dict, problem: str) -> None:
    root = saved(tmp_path, {**verilog_rows(), **change})
    with pytest.raises(ValueError, match=problem):
        hf_dataset_tasks(root)


@needs_icarus
def test_a_materialised_problem_is_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAVYGYM_TRACE_CACHE", str(tmp_path / "traces"))
    monkeypatch.setenv("HEAVYGYM_VETTING_CACHE", str(tmp_path / "vetting"))
    gym = VerilogGym(source=f"hf-verilog:{saved(tmp_path / 'ds', verilog_rows())}", tasks="*count_down")
    (task,) = gym.tasks()
    with gym.open(task) as episode:
        right = episode.step(answer(task.reference))
    with gym.open(task) as episode:
        wrong = episode.step(answer(task.reference.replace("q - 4'd1", "q + 4'd1")))
    assert right.outcome is Outcome.PASS and right.info["forgeable"] is False
    assert wrong.outcome is Outcome.FAIL and 0 < wrong.reward < 1
