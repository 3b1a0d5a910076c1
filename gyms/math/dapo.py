"""Math problems with known answers from a parquet file or a Hugging Face dataset on disk
(`gyms/hf_datasets.py`): DAPO-Math-17k, its evaluation sets such as AIME-2024, and flat tables.

Columns read (any others are ignored):
* chat, as BytedTsinghua-SIA publishes DAPO-Math-17k and AIME-2024: `prompt`, a list of chat
  messages (`role`, `content`; the first user message is the problem), and `reward_model`, a
  struct with `ground_truth`. Problems repeat (DAPO-Math-17k: 17 k in 1.79 M rows; AIME-2024:
  30 in 960);
* flat: text columns `prompt` and `solution`, or `problem` and `answer`.

A problem is known by its key, its text without the DAPO instruction wrapper and with whitespace
collapsed, so that one problem has one id and one split whatever the layout it comes in.

Splits:
1. with `test_source`, that dataset is the whole `test` split, and the source is `train`, less
   the problems the test set also has (a warning says how many);
2. else the source's own: a `split` column, else its split names (a DatasetDict's, the shards'):
   `train` is train, `test` and `validation` are test, anything else is an error. They are used
   when they name some problem test; a source labelled all train (as DAPO-Math-17k is on the
   hub) has no test part of its own, and gets the next rule;
3. else one problem in 16, by a hash of its key, is `test`.
A problem a source labels both train and test is test only, with a warning.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from gyms.base import Task
from gyms.hf_datasets import Part, columns_error, read_dataset
from gyms.math.tasks import BOXED_INSTRUCTION, AnswerStyle, format_answer

_TEST_EVERY = 16
# The published prompts ask for a last line `Answer: ...`; keep a prompt's own format.
_ASKS_ANSWER_LINE = re.compile(r"\bAnswer:")
# The instruction DAPO-Math-17k and AIME-2024 wrap every problem in (whitespace collapsed).
_WRAPPER_HEAD = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem."
)
_WRAPPER_TAIL = 'Remember to put your answer on its own line after "Answer:".'
_FLAT = (("prompt", "solution"), ("problem", "answer"))
_NEEDED = (
    "`prompt` (chat messages) with `reward_model.ground_truth`, or text columns `prompt` and `solution`, "
    "or `problem` and `answer`"
)
_SPLIT_NAMES = {"train": "train", "test": "test", "validation": "test"}


@dataclass(frozen=True)
class Problem:
    prompt: str  # as the source writes it, trimmed
    gold: str
    label: str | None  # "train" or "test" where the source says which; None where it does not
    key: str  # problem_key(prompt)


def problem_key(prompt: str) -> str:
    text = " ".join(prompt.split())
    return " ".join(text.removeprefix(_WRAPPER_HEAD).removesuffix(_WRAPPER_TAIL).split())


def dapo_splits(source: str | Path, test_source: str | Path | None = None) -> dict[str, list[Task]]:
    problems = load_problems(source)
    if test_source is None:
        train, test = _own_split(source, problems)
    else:
        train, test = _with_test_set(source, problems, test_source)
    return {"train": [_dapo_task(p, "train") for p in train], "test": [_dapo_task(p, "test") for p in test]}


def load_problems(path: str | Path) -> list[Problem]:
    """Every row's problem, in order, each distinct prompt once per split label."""
    path = Path(path).expanduser()
    parts = read_dataset(path)
    problems: list[Problem] = []
    skipped = 0
    for part in parts:
        if not (_is_chat(part.table.schema) or _flat_columns(part.table.schema)):
            raise columns_error(path, parts, _NEEDED)
        for label, table in _labelled(path, part):
            prompts, golds = _columns(table)
            pairs, dropped = _first_of_each(prompts, golds)
            skipped += table.num_rows - len(prompts) + dropped
            problems += [Problem(p, g, label, problem_key(p)) for p, g in pairs]
    if skipped:
        warnings.warn(f"{path}: {skipped} row(s) without a problem text or an answer, left out", stacklevel=2)
    return problems


def _own_split(source: str | Path, problems: list[Problem]) -> tuple[list[Problem], list[Problem]]:
    unique = _first_by_key(problems)
    held_out = {p.key for p in problems if p.label == "test"}
    if not held_out:
        held_out = {key for key in unique if int(_digest(key)[:8], 16) % _TEST_EVERY == 0}
    else:
        both = held_out & {p.key for p in problems if p.label != "test"}
        if both:
            warnings.warn(f"{source}: {_problems(len(both))} in both its train and test splits, kept in test only",
                          stacklevel=3)  # fmt: skip
    return [p for k, p in unique.items() if k not in held_out], [p for k, p in unique.items() if k in held_out]


def _with_test_set(
    source: str | Path, problems: list[Problem], test_source: str | Path
) -> tuple[list[Problem], list[Problem]]:
    test = _first_by_key(load_problems(test_source))
    unique = _first_by_key(problems)
    own_test = {p.key for p in problems if p.label == "test"}
    if own_test:
        warnings.warn(f"{source}: its own test split ({_problems(len(own_test))}) is used for training, as "
                      f"test_source={test_source} is the test set", stacklevel=3)  # fmt: skip
    overlap = unique.keys() & test.keys()
    if overlap:
        warnings.warn(f"{source}: {_problems(len(overlap))} also in test_source={test_source}, left out of train",
                      stacklevel=3)  # fmt: skip
    return [p for k, p in unique.items() if k not in test], list(test.values())


def _problems(count: int) -> str:
    return f"{count} problem{'' if count == 1 else 's'}"


def _first_by_key(problems: Iterable[Problem]) -> dict[str, Problem]:
    first: dict[str, Problem] = {}
    for problem in problems:
        first.setdefault(problem.key, problem)
    return first


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _labelled(path: Path, part: Part) -> list[tuple[str | None, pa.Table]]:
    """The part's rows by split label: from a `split` column, else from the part's split name."""
    table = part.table
    if "split" in table.column_names:
        column = table.column("split")
        names = pc.unique(column).to_pylist()
        return [(_label(path, name, "a row's split"), table.filter(pc.equal(column, name))) for name in names]
    return [(None if part.split is None else _label(path, part.split, "the split"), table)]


def _label(path: Path, name: object, what: str) -> str:
    if isinstance(name, str) and name.lower() in _SPLIT_NAMES:
        return _SPLIT_NAMES[name.lower()]
    raise ValueError(
        f"{path}: {what} {name!r} is not train, test or validation; rename it, or pass the test set as "
        "test_source=PATH"
    )


def _flat_columns(schema: pa.Schema) -> tuple[str, str] | None:
    for prompt, gold in _FLAT:
        if prompt in schema.names and gold in schema.names and _is_text(schema.field(prompt).type):
            return prompt, gold
    return None


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


def _columns(table: pa.Table) -> tuple[pa.Array, pa.Array]:
    """Problem text and gold answer of each row (of each row with a user message, for chat rows)."""
    flat = _flat_columns(table.schema)
    if flat is None:
        return _chat_columns(table)
    return table.column(flat[0]).combine_chunks(), table.column(flat[1]).combine_chunks()


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


def _first_of_each(prompts: pa.Array, golds: pa.Array) -> tuple[list[tuple[str, str]], int]:
    """(prompt, gold) at the first row of each distinct prompt, in row order, and how many rows
    lack a prompt or a gold."""
    prompts = pc.utf8_trim_whitespace(prompts.cast(pa.string()))
    golds = pc.utf8_trim_whitespace(golds.cast(pa.string()))
    known = pc.and_(_nonempty(prompts), _nonempty(golds))
    prompts, golds = pc.filter(prompts, known), pc.filter(golds, known)
    first_rows = pc.index_in(pc.unique(prompts), value_set=prompts)
    rows = pc.take(first_rows, pc.sort_indices(first_rows))
    pairs = list(zip(pc.take(prompts, rows).to_pylist(), pc.take(golds, rows).to_pylist()))
    return pairs, len(known) - len(prompts)


def _nonempty(texts: pa.Array) -> pa.Array:
    return pc.greater(pc.fill_null(pc.utf8_length(texts), 0), 0)


def _dapo_task(problem: Problem, split: str) -> Task:
    style: AnswerStyle = "answer-line" if _ASKS_ANSWER_LINE.search(problem.prompt) else "boxed"
    prompt = problem.prompt if style == "answer-line" else f"{problem.prompt}\n\n{BOXED_INSTRUCTION}"
    return Task(
        id=f"dapo/{_digest(problem.key)[:12]}",
        prompt=prompt,
        reference=format_answer(problem.gold, style),
        metadata={"gold": problem.gold, "style": style, "source": "dapo-math"},
        split=split,
    )
