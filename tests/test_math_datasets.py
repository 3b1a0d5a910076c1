"""The math gym's dataset sources: an evaluation set as the test split, a source's own split
labels, the layout-independent hash split, and Hugging Face datasets on disk. The fixtures in
tests/fixtures/math are laid out as DAPO-Math-17k and AIME-2024 are published (problems of our
own); the other layouts are built here from them, with the `datasets` library and no hub."""

from __future__ import annotations

import socket
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import harness

from gyms.base import Outcome
from gyms.math import MathGym
from gyms.math.dapo import problem_key

FIXTURES = Path(__file__).parent / "fixtures" / "math"
DAPO = FIXTURES / "dapo-math-17k"  # the hub's folder: data/dapo-math-17k.parquet, 48 problems x 4 rows
AIME = FIXTURES / "aime-2024"  # data/aime-2024.parquet, 30 problems x 32 rows
DAPO_FILE, AIME_FILE = DAPO / "data" / "dapo-math-17k.parquet", AIME / "data" / "aime-2024.parquet"


def splits(source: Path | str, **options: str) -> dict[str, set[str]]:
    gym = MathGym(source=str(source), **options)
    return {split: {t.id for t in gym.tasks(split)} for split in ("train", "test")}


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def problem(row: dict) -> str:
    return row["prompt"][0]["content"]


def gold(row: dict) -> str:
    return row["reward_model"]["ground_truth"]


def distinct(path: Path) -> list[list[dict]]:
    """The file's rows grouped by problem, in order of first appearance."""
    groups: dict[str, list[dict]] = {}
    for row in rows(path):
        groups.setdefault(problem(row), []).append(row)
    return list(groups.values())


def save_dict(path: Path, parts: dict[str, list[dict]]) -> Path:
    datasets.DatasetDict({name: datasets.Dataset.from_list(r) for name, r in parts.items()}).save_to_disk(str(path))
    return path


# -- an evaluation file as the test split ---------------------------------------------------


def test_the_evaluation_file_is_the_whole_test_split() -> None:
    # By the hash alone, AIME-2024 would put 28 of its 30 problems into train.
    assert [len(ids) for ids in splits(AIME_FILE).values()] == [28, 2]
    with pytest.warns(UserWarning, match=r"1 problem also in test_source=.*aime-2024, left out of train"):
        gym = MathGym(source=str(DAPO), test_source=str(AIME))
        train, test = gym.tasks("train"), gym.tasks("test")
    assert (len(train), len(test)) == (47, 30)  # 48 DAPO problems, one of them also in AIME
    assert {t.split for t in test} == {"test"} and {t.split for t in train} == {"train"}
    assert not {t.id for t in train} & {t.id for t in test}
    assert sorted(t.metadata["gold"] for t in test) == sorted(gold(g[0]) for g in distinct(AIME_FILE))
    assert all(t.prompt.startswith("Solve the following") and t.reference.startswith("Answer: ") for t in test)
    result = gym.open(test[0]).step(f"So it is that.\nAnswer: {test[0].metadata['gold']}")
    assert result.outcome is Outcome.PASS


def test_the_test_set_is_the_same_from_the_file_and_the_hub_folder() -> None:
    with pytest.warns(UserWarning):
        from_file = splits(DAPO_FILE, test_source=str(AIME_FILE))
    with pytest.warns(UserWarning):
        from_folder = splits(DAPO, test_source=str(AIME))
    assert from_file == from_folder


def test_a_source_test_split_is_trained_on_with_a_warning_when_test_source_is_given(tmp_path: Path) -> None:
    groups = distinct(DAPO_FILE)
    saved = save_dict(tmp_path / "dd", {"train": sum(groups[:40], []), "test": sum(groups[40:], [])})
    with pytest.warns(UserWarning) as caught:
        ids = splits(saved, test_source=str(AIME_FILE))
    said = [str(w.message) for w in caught]
    assert any("its own test split (8 problems) is used for training, as test_source=" in m for m in said)
    assert any("1 problem also in test_source=" in m for m in said)
    assert [len(ids["train"]), len(ids["test"])] == [47, 30]


@pytest.mark.parametrize("option", [{}, {"source": "addition"}])
def test_test_source_needs_a_dataset_source(option: dict) -> None:
    with pytest.raises(ValueError, match=r"math gym option test_source='.*aime.*' needs source=PATH"):
        MathGym(test_source=str(AIME), **option)


def test_a_missing_test_source_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"no dataset at {tmp_path / 'gone'}"):
        MathGym(source=str(DAPO_FILE), test_source=str(tmp_path / "gone")).tasks()


# -- a source's own split labels --------------------------------------------------------------


def test_dataset_dict_split_names_are_the_splits(tmp_path: Path) -> None:
    groups = distinct(DAPO_FILE)
    saved = save_dict(tmp_path / "dd", {"train": sum(groups[:40], []), "test": sum(groups[40:], [])})
    ids = splits(saved)
    assert (len(ids["train"]), len(ids["test"])) == (40, 8)
    by_hash = splits(DAPO_FILE)  # the same problems keep their ids in any layout
    assert ids["train"] | ids["test"] == by_hash["train"] | by_hash["test"]


def test_validation_is_test(tmp_path: Path) -> None:
    groups = distinct(DAPO_FILE)
    saved = save_dict(tmp_path / "dd", {"train": sum(groups[:45], []), "validation": sum(groups[45:], [])})
    assert [len(ids) for ids in splits(saved).values()] == [45, 3]


def test_an_unknown_split_name_is_refused(tmp_path: Path) -> None:
    saved = save_dict(tmp_path / "dd", {"train": rows(DAPO_FILE), "AIME2024": rows(AIME_FILE)})
    with pytest.raises(ValueError, match=rf"{saved}: the split 'AIME2024' is not train, test or validation"):
        MathGym(source=str(saved)).tasks()


def test_a_split_column_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "flat.parquet"
    labels = ["train", "TEST", "validation", "train", "test"]
    pq.write_table(pa.table({"problem": [f"What is {n} + {n}?" for n in range(5)],
                             "answer": [str(2 * n) for n in range(5)], "split": labels}), path)  # fmt: skip
    gym = MathGym(source=str(path))
    assert [t.metadata["gold"] for t in gym.tasks("train")] == ["0", "6"]
    assert sorted(t.metadata["gold"] for t in gym.tasks("test")) == ["2", "4", "8"]


@pytest.mark.parametrize("label", ["holdout", None])
def test_a_bad_split_value_names_it(tmp_path: Path, label: str | None) -> None:
    path = tmp_path / "flat.parquet"
    pq.write_table(pa.table({"prompt": ["What is 1+1?", "What is 2+2?"], "solution": ["2", "4"],
                             "split": pa.array(["train", label], pa.string())}), path)  # fmt: skip
    with pytest.raises(ValueError, match=rf"{path}: a row's split {label!r} is not train, test or validation"):
        MathGym(source=str(path)).tasks()


def test_a_problem_labelled_train_and_test_is_test_only(tmp_path: Path) -> None:
    path = tmp_path / "flat.parquet"
    pq.write_table(pa.table({"prompt": ["What is 1+1?", "What is 2+2?", "What is 1+1?"], "solution": ["2", "4", "2"],
                             "split": ["train", "train", "test"]}), path)  # fmt: skip
    with pytest.warns(UserWarning, match="1 problem in both its train and test splits, kept in test only"):
        gym = MathGym(source=str(path))
        train, test = gym.tasks("train"), gym.tasks("test")
    assert ([t.metadata["gold"] for t in train], [t.metadata["gold"] for t in test]) == (["4"], ["2"])


def test_a_source_labelled_all_train_gets_the_hash_split(tmp_path: Path) -> None:
    # As load_dataset(...)["train"].save_to_disk(...) leaves DAPO-Math-17k: no test part of its own.
    datasets.Dataset.from_list(rows(DAPO_FILE), split="train").save_to_disk(str(tmp_path / "saved"))
    ids = splits(tmp_path / "saved")
    assert ids == splits(DAPO_FILE) and len(ids["test"]) == 3


# -- the hash split does not depend on the layout ------------------------------------------


def test_the_published_and_the_flat_layout_of_a_problem_have_one_key() -> None:
    wrapped = problem(rows(DAPO_FILE)[0])
    bare = wrapped.split("\n\n")[1]
    assert problem_key(wrapped) == problem_key(f"  {bare.replace(' ', '   ', 2)}\n") == bare
    assert problem_key("What is 1+1?") != problem_key("What is 1+2?")


def test_flat_and_published_layouts_get_the_same_ids_and_splits(tmp_path: Path) -> None:
    published = splits(DAPO_FILE)
    assert len(published["test"]) == 3  # a split that could differ
    groups = distinct(DAPO_FILE)
    flat = tmp_path / "flat.parquet"  # the bare problem, spaced differently, once per problem
    bare = [" ".join(problem(g[0]).split("\n\n")[1].split(" ")).replace(" ", "\n", 1) for g in groups]
    pq.write_table(pa.table({"prompt": bare, "solution": [gold(g[0]) for g in groups]}), flat)
    assert splits(flat) == published
    wrapped_flat = tmp_path / "wrapped.parquet"  # open-r1's flat copy: the wrapped text as a string
    pq.write_table(pa.table({"prompt": [problem(g[0]) for g in groups], "solution": [gold(g[0]) for g in groups]}),
                   wrapped_flat)  # fmt: skip
    assert splits(wrapped_flat) == published


# -- Hugging Face datasets on disk -----------------------------------------------------------


def test_parquet_and_arrow_shards_in_the_hub_layout(tmp_path: Path) -> None:
    table = pq.read_table(DAPO_FILE)
    for kind in ("parquet", "arrow"):
        data = tmp_path / kind / "data"
        data.mkdir(parents=True)
        halves = (table.slice(0, 100), table.slice(100))
        for index, part in enumerate(halves):
            write_shard(part, data / f"train-{index:05d}-of-00002.{kind}")
        write_shard(pq.read_table(AIME_FILE), data / f"test-00000-of-00001.{kind}")
        with pytest.warns(UserWarning, match="1 problem in both its train and test splits, kept in test only"):
            ids = splits(data.parent)
        assert (len(ids["train"]), len(ids["test"])) == (47, 30), kind


def write_shard(table: pa.Table, path: Path) -> None:
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    else:  # the Arrow stream format that `datasets` writes
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)


def test_no_network_is_touched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    groups = distinct(DAPO_FILE)
    saved = save_dict(tmp_path / "dd", {"train": sum(groups[:40], []), "test": sum(groups[40:], [])})

    def refuse(*args: object) -> None:
        raise AssertionError(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    assert [len(ids) for ids in splits(saved).values()] == [40, 8]
    assert [len(ids) for ids in splits(DAPO).values()] == [45, 3]


def test_a_folder_that_is_not_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# not a dataset\n")
    with pytest.raises(ValueError, match=rf"{tmp_path} is not a dataset: it holds no dataset_dict.json"):
        MathGym(source=str(tmp_path)).tasks()


def test_a_dataset_without_the_columns_names_found_and_needed(tmp_path: Path) -> None:
    datasets.Dataset.from_dict({"question": ["What is 1+1?"], "final": ["2"]}).save_to_disk(str(tmp_path))
    with pytest.raises(ValueError, match=rf"{tmp_path}: found columns final, question; needed `prompt` \(chat"):
        MathGym(source=str(tmp_path)).tasks()


def test_a_broken_saved_dataset_is_one_line(tmp_path: Path) -> None:
    datasets.Dataset.from_dict({"prompt": ["What is 1+1?"], "solution": ["2"]}).save_to_disk(str(tmp_path))
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(ValueError, match=rf"^{tmp_path} could not be read as a Hugging Face dataset: [^\n]+$"):
        MathGym(source=str(tmp_path)).tasks()


def test_a_shard_in_no_split_is_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    pq.write_table(pq.read_table(DAPO_FILE), tmp_path / "data" / "train-00000-of-00001.parquet")
    pq.write_table(pq.read_table(AIME_FILE), tmp_path / "data" / "aime-2024.parquet")
    with pytest.raises(ValueError, match=r"the shard data/aime-2024.parquet is in no split"):
        MathGym(source=str(tmp_path)).tasks()


def test_the_cli_says_what_is_wrong_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no dataset here\n")
    run = harness("gyms", "check", "math", "--limit", "1", "-o", f"source={tmp_path}")
    assert run.returncode != 0 and "Traceback" not in run.stderr + run.stdout
    assert f"{tmp_path} is not a dataset" in run.stderr + run.stdout
