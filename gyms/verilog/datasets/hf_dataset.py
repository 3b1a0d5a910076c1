"""VerilogEval v2 (spec-to-RTL) saved as a Hugging Face dataset (`gyms/hf_datasets.py` reads the
layouts): one row per problem with text columns `problem_id` (`Prob001_zero`), `prompt` (the
specification), `ref` (the reference, `module RefModule`) and `test` (the testbench, `module tb`),
as the hub's copies of the benchmark have them (dakies/nvlabs-verilogeval-v2-spec-to-rtl: one
split, `test`, of 156 rows). Other columns are ignored; every split is read.

The rows are written out as the benchmark's own files (`ProbNNN_name_prompt.txt`, `_ref.sv`,
`_test.sv`), once, into a folder named by a hash of their content under the user's cache
directory, and loaded from there by the VerilogEval loader: the same problem is the same task,
with the same id, from either source, and what that loader reports is this loader's report.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa

from gyms import cache
from gyms.hf_datasets import columns_error, read_dataset
from gyms.verilog.datasets.common import Loaded
from gyms.verilog.datasets.verilog_eval import verilog_eval_tasks

COLUMNS = ("problem_id", "prompt", "ref", "test")
_NEEDED = "text columns problem_id, prompt, ref and test (VerilogEval v2 spec-to-RTL)"
_PROBLEM_ID = re.compile(r"Prob\d+_\w+")  # VerilogEval's file stems
_SUFFIXES = {"prompt": "_prompt.txt", "ref": "_ref.sv", "test": "_test.sv"}


def hf_dataset_tasks(root: Path) -> Loaded:
    rows = _rows(root)
    return verilog_eval_tasks(_materialised(rows))


def cache_dir() -> Path:
    return cache.cache_dir("hf-verilog")


def _rows(root: Path) -> dict[str, dict[str, str]]:
    """Each problem's texts by problem id."""
    parts = read_dataset(root)
    if not parts or not all(_has_columns(part.table.schema) for part in parts):
        raise columns_error(root, parts, _NEEDED)
    rows: dict[str, dict[str, str]] = {}
    for part in parts:
        for number, row in enumerate(part.table.select(COLUMNS).to_pylist()):
            where = f"{root}: row {number}" + (f" of split {part.split}" if part.split else "")
            empty = [c for c in COLUMNS if not (row[c] or "").strip()]
            if empty:
                raise ValueError(f"{where} has no {' and no '.join(empty)}")
            problem = row["problem_id"]
            if not _PROBLEM_ID.fullmatch(problem):
                raise ValueError(f"{where}: problem_id {problem!r} is not a VerilogEval name like Prob001_zero")
            if rows.setdefault(problem, row) != row:
                raise ValueError(f"{where}: problem {problem} appears twice with different texts")
    if not rows:
        raise ValueError(f"{root} has no rows")
    return rows


def _has_columns(schema: pa.Schema) -> bool:
    return all(c in schema.names and _is_text(schema.field(c).type) for c in COLUMNS)


def _is_text(type_: pa.DataType) -> bool:
    return pa.types.is_string(type_) or pa.types.is_large_string(type_)


def _materialised(rows: dict[str, dict[str, str]]) -> Path:
    """The rows as VerilogEval files in their content's own folder, written once."""
    digest = hashlib.sha256()
    for problem in sorted(rows):
        for column in COLUMNS:
            digest.update(rows[problem][column].encode() + b"\0")
    folder = cache_dir() / digest.hexdigest()[:16]
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder.parent))
    for problem, row in rows.items():
        for column, suffix in _SUFFIXES.items():
            (partial / f"{problem}{suffix}").write_text(row[column], encoding="utf-8")
    try:
        partial.rename(folder)  # atomic: a reader sees no folder or a whole one
    except OSError:
        shutil.rmtree(partial)
        if not folder.is_dir():  # not another process that got there first
            raise
    return folder
