"""The built-in task format: one `DesignTask` per task, written as data in `gyms/verilog/tasks/`.

A task is a natural-language spec, the module's ports, a reference design, and a golden
model in Python. The model is a tiny object with `step(inputs) -> outputs` that is fed the
stimulus one vector (or clock cycle) at a time; the testbench is generated from the vectors
it produces, so the model is the single source of truth for every simulator and testbench
form.

Timing contract of the generated testbenches (clocked tasks; docs/gyms/verilog.md):
  t = 10i       clock falls
  t = 10i + 1   inputs of cycle i are applied (reset included: it is an ordinary input)
  t = 10i + 5   clock rises: from here until the next inputs at 10i + 11, the outputs must
                hold `model.step(inputs_i)` (any change after this time step fails)
  registered outputs (all but `mealy`) must not change from 10i + 1 until that rising edge
                (except while an asynchronous reset is asserted)
So `step` applies one rising edge with the cycle's inputs and returns the outputs seen just
after it, with those inputs still applied (Mealy outputs see them too). Combinational tasks
apply inputs at 10i + 1 and must hold the model's outputs from then until 10i + 11. An output
the model returns as `None` is not checked in that cycle (a don't-care, e.g. the read data of
an empty FIFO).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

Inputs = dict[str, int]
Outputs = Mapping[str, int | None]
MODULE = "TopModule"  # every built-in task asks for this module name (as VerilogEval does)
CATEGORIES = ("combinational", "arithmetic", "sequential", "fsm", "memory", "bus", "heavy")  # heavy: the heavy suite


@dataclass(frozen=True)
class Port:
    name: str
    width: int
    direction: Literal["input", "output"]

    def declaration(self) -> str:
        rng = f" [{self.width - 1}:0]" if self.width > 1 else ""
        return f"{self.direction}{rng} {self.name}"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


def In(name: str, width: int = 1) -> Port:  # noqa: N802 - reads like a declaration
    return Port(name, width, "input")


def Out(name: str, width: int = 1) -> Port:  # noqa: N802
    return Port(name, width, "output")


class Model(Protocol):
    def step(self, inputs: Inputs) -> Outputs: ...


class Combinational:
    """Adapts a pure function of the inputs to the `Model` protocol."""

    def __init__(self, fn: Callable[..., Outputs]) -> None:
        self.fn = fn

    def step(self, inputs: Inputs) -> Outputs:
        return self.fn(**inputs)


def comb(fn: Callable[..., Outputs]) -> Callable[[], Model]:
    """A model factory for a combinational task: `fn(**inputs) -> {output: value}`."""
    return lambda: Combinational(fn)


@dataclass(frozen=True)
class Reset:
    """The reset input: asserted in the first cycle of every sequence, then at `rate` (unless the
    task's stimulus drives it itself)."""

    name: str
    active: int = 1  # the level that resets
    rate: float = 0.02  # chance of a reset in any later cycle
    # An asynchronous reset takes registered outputs to their reset values as soon as it is
    # asserted, before the edge; the testbenches allow that change in the cycles it is asserted.
    asynchronous: bool = False


Stimulus = Callable[[random.Random], Iterator[Inputs]]


def endless(vector: Callable[[random.Random], Inputs]) -> Stimulus:
    """A stimulus that draws every vector independently with `vector(rng)`."""

    def stimulus(rng: random.Random) -> Iterator[Inputs]:
        while True:
            yield vector(rng)

    return stimulus


@dataclass(frozen=True)
class DesignTask:
    name: str
    category: str
    difficulty: Literal["easy", "medium", "hard"]
    spec: str  # what the module does; the interface is rendered from `ports`
    ports: tuple[Port, ...]
    reference: str  # a module named TopModule that passes
    model: Callable[[], Model]  # a fresh golden model per sequence
    clock: str | None = None  # the clock input, driven by the testbench; None: combinational
    reset: Reset | None = None
    stimulus: Stimulus | None = None  # endless input vectors; default: uniform random
    vectors: int = 200  # default vectors (clock cycles) per sequence
    # Simulation cost of one cycle of the reference on Icarus with the SystemVerilog testbench
    # (microseconds, measured on the project's machine); the heavy suite sizes each task's
    # simulation timeout from it (gym.py). None: the gym-wide per-vector allowance.
    cycle_cost_us: float | None = None
    # Outputs of a clocked task that follow its inputs before the rising edge (Mealy outputs).
    # Every other output is registered: between the inputs' change and the rising edge it must
    # keep the previous cycle's value (docs/gyms/verilog.md, "Timing contract").
    mealy: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"task {self.name}: category {self.category!r} is not one of {CATEGORIES}")
        names = [p.name for p in self.ports]
        if len(set(names)) != len(names):
            raise ValueError(f"task {self.name}: duplicate port names")
        if self.clock is not None and self.clock not in names:
            raise ValueError(f"task {self.name}: clock {self.clock!r} is not a port")
        if self.reset is not None and self.reset.name not in names:
            raise ValueError(f"task {self.name}: reset {self.reset.name!r} is not a port")
        if not self.outputs:
            raise ValueError(f"task {self.name}: a task needs at least one output")
        unknown = set(self.mealy) - {p.name for p in self.outputs}
        if unknown:
            raise ValueError(f"task {self.name}: mealy names {sorted(unknown)}, which are not outputs")

    @property
    def registered(self) -> tuple[bool, ...]:
        """Per output: whether it may change only at a rising edge (or an asynchronous reset)."""
        return tuple(self.clock is not None and p.name not in self.mealy for p in self.outputs)

    @property
    def id(self) -> str:
        return f"verilog/{self.category}/{self.name}"

    @property
    def inputs(self) -> tuple[Port, ...]:
        """The inputs the vectors drive (the clock is toggled by the testbench instead)."""
        return tuple(p for p in self.ports if p.direction == "input" and p.name != self.clock)

    @property
    def outputs(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.direction == "output")

    def interface(self) -> str:
        body = ",\n".join(f"  {p.declaration()}" for p in self.ports)
        return f"module {MODULE} (\n{body}\n);"

    def prompt(self) -> str:
        lines = [self.spec.strip(), "", "Implement it with exactly this interface:", "", self.interface(), ""]
        if self.clock is not None:
            lines.append(f"Registers change on the rising edge of `{self.clock}` (and on an asynchronous reset where "
                         "the description says the reset is asynchronous).")  # fmt: skip
        lines.append(
            f"Answer with the complete SystemVerilog (or Verilog-2005) code of module {MODULE} in one "
            "```verilog code block. Do not write a testbench."
        )
        return "\n".join(lines)

    def random_stimulus(self, rng: random.Random) -> Iterator[Inputs]:
        """Uniform random inputs (the reset is left to `vectors.make_vectors`)."""
        driven = [p for p in self.inputs if self.reset is None or p.name != self.reset.name]
        while True:
            yield {p.name: rng.getrandbits(p.width) for p in driven}

