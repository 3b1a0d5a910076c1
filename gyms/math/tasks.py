"""Math tasks generated offline by reasoning-gym, and the answer format every task asks for.

Datasets are the arithmetic and algebra generators whose gold answers math-verify reads
back correctly: numbers, sets of numbers and polynomials. Left out on purpose:
`fraction_simplification` (math-verify compares values, so the unreduced fraction would
pass), `prime_factorization` (`2 × 2 × 5` equals the number itself), `bitwise_arithmetic`
(hex literals are read as products), `power_function` (e-notation is misread), and
`gsm_symbolic` (its items depend on the dataset size, so ids would not be stable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from gyms.base import Task

SPLITS = ("train", "test")
RG_DATASETS = (
    "basic_arithmetic",
    "chain_sum",
    "decimal_chain_sum",
    "decimal_arithmetic",
    "products",
    "gcd",
    "lcm",
    "simple_equations",
    "polynomial_equations",
    "polynomial_multiplication",
)
# These generators make item i on demand from `seed + i`: the size is only an upper bound.
_VIRTUAL_SIZE = 2**30
# The answer contract (docs/gyms/math.md): where the final answer stands and what may follow it.
BOXED_INSTRUCTION = (
    "End your reply with your final answer, as \\boxed{<answer>}: the last \\boxed{} is graded, and only"
    " closing punctuation may follow it. Put the value alone in the box (a unit may follow the value there), and state"
    " it plainly, in a sentence that does not retract it."
)
# The addition tasks train a tiny byte-level model with a short context: the contract's first
# clause only, as these prompts have always said it.
SHORT_BOXED_INSTRUCTION = "Give your final answer at the end of your reply, as \\boxed{<answer>}."

AnswerStyle = Literal["boxed", "answer-line"]


def format_answer(value: str, style: AnswerStyle) -> str:
    """A final answer written the way the task's prompt asks for it."""
    return f"Answer: {value}" if style == "answer-line" else f"The answer is \\boxed{{{value}}}."


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; the math gym has splits {', '.join(SPLITS)}")


def split_seed(seed: int, split: str) -> int:
    """reasoning-gym seeds item i with `seed + i`: these bases keep every (seed, split) range apart."""
    check_split(split)
    return seed * 2**32 + SPLITS.index(split) * 2**31


def reasoning_gym_tasks(split: str, size: int, seed: int) -> list[Task]:
    """`size` tasks, dealt round-robin over `RG_DATASETS`.

    A task's id names its dataset and item index (`rg/chain_sum/0003`), and its content depends
    only on the seed and split: the same id is the same problem whatever `size` is.
    """
    import reasoning_gym  # imported here: episodes unpickled in gym workers never need it

    base = split_seed(seed, split)
    counts = [len(range(i, size, len(RG_DATASETS))) for i in range(len(RG_DATASETS))]
    per_dataset = [
        _generate(reasoning_gym.create_dataset(name, seed=base, size=_VIRTUAL_SIZE), name, count, split)
        for name, count in zip(RG_DATASETS, counts)
    ]
    return [tasks[k] for k in range(max(counts, default=0)) for tasks in per_dataset if k < len(tasks)]


def _generate(dataset: Sequence[dict], name: str, count: int, split: str) -> list[Task]:
    tasks: list[Task] = []
    for index in range(len(dataset)):
        if len(tasks) == count:
            break
        item = dataset[index]
        if item["answer"].strip():  # an item without an answer (no real roots) is skipped
            tasks.append(_rg_task(name, index, item, split))
    return tasks


def _rg_task(dataset: str, index: int, item: dict, split: str) -> Task:
    gold = item["answer"].strip()
    return Task(
        id=f"rg/{dataset}/{index:04d}",
        prompt=f"{item['question'].rstrip()}\n\n{BOXED_INSTRUCTION}",
        reference=format_answer(gold, "boxed"),
        metadata={"gold": gold, "style": "boxed", "source": "reasoning-gym", "dataset": dataset},
        split=split,
    )


def addition_tasks(split: str, max_operand: int = 2) -> list[Task]:
    """Sums of two small numbers, for learning checks: a tiny model can learn them in minutes.

    `train` has every a + b with a, b <= max_operand; `test` has the sums where one operand is
    max_operand + 1, which training never shows.
    """
    check_split(split)
    if split == "train":
        pairs = [(a, b) for a in range(max_operand + 1) for b in range(max_operand + 1)]
    else:
        top = max_operand + 1
        pairs = [(a, top) for a in range(top + 1)] + [(top, b) for b in range(top)]
    return [
        Task(
            id=f"add/{a}+{b}",
            # The question comes last, close to the answer: easy for a small model to attend to.
            prompt=f"{SHORT_BOXED_INSTRUCTION}\n{a} + {b} = ",
            reference=format_answer(str(a + b), "boxed"),
            metadata={"gold": str(a + b), "style": "boxed", "source": "addition"},
            split=split,
        )
        for a, b in pairs
    ]

