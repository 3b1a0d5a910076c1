"""The cocotb form of a built-in task's testbench: the same stimulus and timing as the
SystemVerilog testbench (see `testbench.py`), driven from Python through cocotb 2.x.

Like that testbench it only applies the stimulus and records the design's outputs, one line
per vector in `outputs.txt`, with one bit per output saying whether it changed inside the
vector's window (after the rising edge, or the inputs of a combinational task, and before the
next inputs) or, for a registered output, between the inputs and the rising edge; the host
compares them with the golden model. Nothing here knows an expected
value, and nothing it prints matters.

This file is copied into the episode's work directory and imported by cocotb inside the
simulator, so it imports nothing from heavygym: it reads `bench.json` and the stimulus.
"""

from __future__ import annotations

import json

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer


def _words(path: str) -> list[int]:
    with open(path) as f:
        return [int(line, 16) for line in f if line.strip()]


def _fields(word: int, ports: list[list]) -> dict[str, int]:
    values = {}
    for name, width in reversed(ports):
        values[name] = word & ((1 << width) - 1)
        word >>= width
    return values


def _bits(handle, width: int) -> str:  # noqa: ANN001 - cocotb's handle type
    """The value as %b would print it: MSB first, x for any non-0/1/z state (cocotb has 9)."""
    text = str(handle.value).lower().rjust(width, "0")
    return "".join(c if c in "01z" else "x" for c in text)


async def _watch(handle, changed: list[int], k: int) -> None:  # noqa: ANN001 - cocotb's handle type
    """Keep `changed[k]` at the simulation step (the finest unit) of the output's latest change."""
    while True:
        await handle.value_change
        changed[k] = get_sim_time("step")


@cocotb.test()
async def vectors(dut) -> None:  # noqa: ANN001 - cocotb's handle type
    with open("bench.json") as f:
        bench = json.load(f)
    inputs, outputs, clock = bench["inputs"], bench["outputs"], bench["clock"]
    stimulus = _words(bench["stimulus"])
    registered = bench.get("registered") or [False] * len(outputs)
    reset = bench.get("async_reset")
    clk = getattr(dut, clock) if clock else None
    if clk is not None:
        clk.value = 0
    changed = [0] * len(outputs)
    for k, (name, _) in enumerate(outputs):
        cocotb.start_soon(_watch(getattr(dut, name), changed, k))
    with open(bench["outputs_file"], "w") as out:
        await Timer(1, "ns")
        for word in stimulus:
            for name, value in _fields(word, inputs).items():
                getattr(dut, name).value = value
            applied = get_sim_time("step")
            early = [False] * len(outputs)
            if clk is not None:
                await Timer(4, "ns")
                # A registered output may not change between the inputs and the rising edge,
                # except while an asynchronous reset is asserted.
                resetting = reset is not None and _fields(word, inputs)[reset[0]] == reset[1]
                early = [r and not resetting and at >= applied for r, at in zip(registered, changed)]
                clk.value = 1
            due = get_sim_time("step")  # the golden model's values hold from this step on
            if clk is not None:
                await Timer(5, "ns")
                clk.value = 0
                await Timer(1, "ns")
            else:
                await Timer(10, "ns")
            # The window ends as the next inputs are applied: record, then go on.
            values = [_bits(getattr(dut, name), width) for name, width in outputs]
            moved = "".join("1" if at > due or e else "0" for at, e in zip(changed, early))
            out.write(" ".join([*values, moved]) + "\n")
