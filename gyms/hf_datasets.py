"""Hugging Face datasets on disk, read through the `datasets` library and never the hub.

A path may be:
* a parquet file (read with pyarrow alone);
* a folder written by `DatasetDict.save_to_disk` (`dataset_dict.json`, one folder per split);
* a folder written by `Dataset.save_to_disk` (`state.json`, `dataset_info.json`, `data-*.arrow`);
* a folder of parquet or Arrow shards laid out as on the hub (`data/train-00000-of-00001.parquet`).
  A shard's split is named by its file or folder name the way the hub names it (`train`,
  `validation`, `test`, with their synonyms); where no name gives a split, every shard is `train`.

Each split comes back as one Arrow table, with the split's name where the dataset gives one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

LAYOUTS = (
    "a parquet file, a folder written by Dataset.save_to_disk or DatasetDict.save_to_disk, "
    "or a folder of *.parquet or *.arrow shards"
)
_BATCH_ROWS = 65536


@dataclass(frozen=True)
class Part:
    split: str | None  # as the dataset names it; None where it names none
    table: pa.Table


def read_dataset(path: Path) -> list[Part]:
    if path.is_file():
        if path.suffix != ".parquet":
            raise ValueError(f"{path} is not a dataset: pass {LAYOUTS}")
        return [Part(None, pq.read_table(path))]
    if not path.is_dir():
        raise FileNotFoundError(f"no dataset at {path}; pass {LAYOUTS}")
    path = path.resolve()
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        with _reading(path):
            return _saved(path)
    return _shards(path)


def columns_error(path: Path, parts: list[Part], needed: str) -> ValueError:
    """The one line a loader raises for a dataset without the columns it reads."""
    found = sorted({name for part in parts for name in part.table.column_names})
    return ValueError(f"{path}: found columns {', '.join(found) or '(none)'}; needed {needed}")


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    """What the library raises for a broken dataset, as one line that names the folder."""
    try:
        yield
    except (OSError, ValueError, pa.ArrowException) as exc:
        first = next(iter(str(exc).splitlines()), "") or type(exc).__name__
        raise ValueError(f"{path} could not be read as a Hugging Face dataset: {first}") from exc


def _datasets() -> Any:
    # Read by `datasets` when first imported: a stray hub look-up then fails at once instead of
    # waiting on the network. Only local files and the packaged readers are used below anyway.
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    return datasets


def _saved(path: Path) -> list[Part]:
    datasets = _datasets()
    loaded = datasets.load_from_disk(str(path))
    if isinstance(loaded, datasets.DatasetDict):
        return [Part(str(name), _whole(loaded[name])) for name in loaded]
    return [Part(None if loaded.split is None else str(loaded.split), _whole(loaded))]


def _whole(dataset: Any) -> pa.Table:
    return dataset.with_format("arrow")[:]  # memory-mapped; honours a selection of rows


def _shards(path: Path) -> list[Part]:
    found = sorted(f for kind in ("*.parquet", "*.arrow") for f in path.rglob(kind) if not _hidden(f, path))
    if not found:
        raise ValueError(
            f"{path} is not a dataset: it holds no dataset_dict.json, state.json, *.parquet or *.arrow files; "
            f"pass {LAYOUTS}"
        )
    kinds = {f.suffix for f in found}
    if len(kinds) > 1:
        raise ValueError(f"{path} holds both parquet and arrow shards; keep one kind of shard in a dataset folder")
    datasets = _datasets()
    from datasets.data_files import DataFilesDict, get_data_patterns

    with _reading(path):
        resolved = DataFilesDict.from_patterns(get_data_patterns(str(path)), base_path=str(path))
    files = {str(split): [f for f in names if f.endswith(found[0].suffix)] for split, names in resolved.items()}
    named = {f for names in files.values() for f in names}
    left = [f for f in found if str(f) not in named]
    if left:  # the hub would leave it out of every split
        raise ValueError(f"{path}: the shard {left[0].relative_to(path)} is in no split (the other shards' names "
                         "give splits); name it like them, e.g. train-00000-of-00001")  # fmt: skip
    builder = "parquet" if found[0].suffix == ".parquet" else "arrow"
    # Streamed: read where they lie, without the converted copy `datasets` would write to its cache.
    with _reading(path):
        streamed = datasets.load_dataset(builder, data_files={s: f for s, f in files.items() if f}, streaming=True)
        return [Part(split, _concat(streamed[split])) for split in streamed]


def _concat(stream: Any) -> pa.Table:
    batches = list(stream.with_format("arrow").iter(batch_size=_BATCH_ROWS))
    return pa.concat_tables(batches) if batches else pa.table({})


def _hidden(file: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in file.relative_to(root).parts)
