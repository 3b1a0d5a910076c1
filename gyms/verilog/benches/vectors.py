"""Test vectors from a task's golden model, packed as the hex files every testbench form reads.

Vectors are a pure function of (task, seed, vectors, sequences): the same on every simulator
and testbench form, and the first n vectors of a longer run are those of a shorter one (with
one sequence), so a design that fails a short test fails every longer one too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from gyms.verilog.spec import DesignTask, Port


@dataclass(frozen=True)
class Vectors:
    stimulus: list[int]  # packed inputs (first input port in the most significant bits)
    expected: list[int]  # packed outputs
    care: list[int]  # per output bit: 1 = compare, 0 = don't care

    def __len__(self) -> int:
        return len(self.stimulus)


def pack(values: dict[str, int | None], ports: Sequence[Port]) -> tuple[int, int]:
    """(value, care mask) of `values` concatenated in port order; None values are don't-cares."""
    word = care = 0
    for port in ports:
        value = values.get(port.name)
        word <<= port.width
        care <<= port.width
        if value is not None:
            word |= value & port.mask
            care |= port.mask
    return word, care


def make_vectors(task: DesignTask, seed: int, vectors: int, sequences: int) -> Vectors:
    rng = random.Random(f"{seed}/{task.id}")  # str seeds are stable across Python versions
    stimulus: list[int] = []
    expected: list[int] = []
    care: list[int] = []
    for _ in range(sequences):
        model = task.model()
        source = task.stimulus(rng) if task.stimulus is not None else task.random_stimulus(rng)
        for cycle, inputs in enumerate(islice(source, vectors)):
            if task.reset is not None:
                reset = task.reset
                if cycle == 0:
                    inputs = {**inputs, reset.name: reset.active}
                elif reset.name not in inputs:
                    hit = rng.random() < reset.rate
                    inputs = {**inputs, reset.name: reset.active if hit else 1 - reset.active}
            missing = {p.name for p in task.inputs} - inputs.keys()
            if missing:
                raise ValueError(f"task {task.name}: the stimulus gave no value for {sorted(missing)}")
            outputs = model.step(inputs)
            stimulus.append(pack(dict(inputs), task.inputs)[0])
            word, mask = pack(dict(outputs), task.outputs)
            expected.append(word)
            care.append(mask)
    return Vectors(stimulus, expected, care)


def hex_lines(words: Sequence[int], width: int) -> str:
    """`$readmemh` text: one zero-padded word per line."""
    digits = max(1, (width + 3) // 4)
    return "".join(f"{w:0{digits}x}\n" for w in words)


def bits(ports: Sequence[Port]) -> int:
    return sum(p.width for p in ports)
