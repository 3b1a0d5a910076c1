"""Load DAPO-Math-17k problems from a parquet file.

Two layouts are accepted:
* the published one (BytedTsinghua-SIA/DAPO-Math-17k): `prompt` is a list of chat messages
  (`role`, `content`) and `reward_model` a struct with `ground_truth`; every problem is
  repeated many times (1.79 M rows for 17 k problems);
* a flat, deduplicated one: string columns `prompt` and `solution` (the gold answer).

Problems are deduplicated by prompt text. One problem in 16, chosen by a hash of its text,
forms the `test` split, so the split of a problem never depends on the file's row order.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gyms.base import Task
from gyms.math.tasks import BOXED_INSTRUCTION, AnswerStyle, check_split, format_answer

_TEST_EVERY = 16
# The published prompts ask for a last line `Answer: ...`; keep a prompt's own format.
_ASKS_ANSWER_LINE = re.compile(r"\bAnswer:")


def dapo_tasks(path: str | Path, split: str) -> list[Task]:
    check_split(split)
    tasks = []
    for problem, gold in load_problems(path):
        digest = hashlib.sha256(problem.encode()).hexdigest()
        if (int(digest[:8], 16) % _TEST_EVERY == 0) == (split == "test"):
            tasks.append(_dapo_task(problem, gold, digest[:12], split))
    return tasks


def load_problems(path: str | Path) -> list[tuple[str, str]]:
    """(prompt, gold answer) pairs in file order, each prompt once."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no DAPO parquet file at {path}; pass source=<path to a .parquet file>")
    schema = pq.read_schema(path)
    if _is_flat(schema):
        table = pq.read_table(path, columns=["prompt", "solution"])
        prompts, golds = table.column("prompt").combine_chunks(), table.column("solution").combine_chunks()
    elif _is_chat(schema):
        prompts, golds = _chat_columns(pq.read_table(path, columns=["prompt", "reward_model"]))
    else:
        raise ValueError(
            f"{path} is not a DAPO-Math parquet file: found columns {', '.join(schema.names)}; expected `prompt` "
            "(chat messages) with `reward_model.ground_truth`, or string columns `prompt` and `solution`"
        )
    return [(p, g) for p, g in _first_of_each(prompts, golds) if p and g]


def _is_flat(schema: pa.Schema) -> bool:
    names = schema.names
    return "prompt" in names and "solution" in names and _is_text(schema.field("prompt").type)


def _is_chat(schema: pa.Schema) -> bool:
    if "prompt" not in schema.names or "reward_model" not in schema.names:
        return False
    prompt, reward = schema.field("prompt").type, schema.field("reward_model").type
    return (
        (pa.types.is_list(prompt) or pa.types.is_large_list(prompt))
        and pa.types.is_struct(prompt.value_type)
        and {"role", "content"} <= {f.name for f in prompt.value_type}
        and pa.types.is_struct(reward)
        and "ground_truth" in {f.name for f in reward}
    )


def _is_text(type_: pa.DataType) -> bool:
    return pa.types.is_string(type_) or pa.types.is_large_string(type_)


# The published file has 1.79 M rows: everything below works on whole columns, not on rows.


def _chat_columns(table: pa.Table) -> tuple[pa.Array, pa.Array]:
    """The first user message of each row, and the row's ground truth."""
    prompts = table.column("prompt").combine_chunks()
    messages = pc.list_flatten(prompts)
    is_user = pc.equal(pc.struct_field(messages, "role"), "user")
    owners = pc.filter(pc.list_parent_indices(prompts), is_user)  # ascending row numbers
    contents = pc.filter(pc.struct_field(messages, "content"), is_user)
    first = pc.not_equal(owners[1:], owners[:-1])
    first = pa.concat_arrays([pa.array([True]), first]) if len(owners) else first
    golds = pc.struct_field(table.column("reward_model").combine_chunks(), "ground_truth")
    return pc.filter(contents, first), pc.take(golds, pc.filter(owners, first))


def _first_of_each(prompts: pa.Array, golds: pa.Array) -> list[tuple[str, str]]:
    """(prompt, gold) at the first row of each distinct prompt, in row order."""
    prompts = pc.utf8_trim_whitespace(prompts.cast(pa.string()))
    golds = pc.utf8_trim_whitespace(golds.cast(pa.string()))
    known = pc.and_(pc.is_valid(prompts), pc.is_valid(golds))
    prompts, golds = pc.filter(prompts, known), pc.filter(golds, known)
    first_rows = pc.index_in(pc.unique(prompts), value_set=prompts)
    rows = pc.take(first_rows, pc.sort_indices(first_rows))
    return list(zip(pc.take(prompts, rows).to_pylist(), pc.take(golds, rows).to_pylist()))


def _dapo_task(problem: str, gold: str, digest: str, split: str) -> Task:
    style: AnswerStyle = "answer-line" if _ASKS_ANSWER_LINE.search(problem) else "boxed"
    prompt = problem if style == "answer-line" else f"{problem}\n\n{BOXED_INSTRUCTION}"
    return Task(
        id=f"dapo/{digest}",
        prompt=prompt,
        reference=format_answer(gold, style),
        metadata={"gold": gold, "style": style, "source": "dapo-math"},
        split=split,
    )
