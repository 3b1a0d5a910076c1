"""The cocotb form of a built-in task's testbench: the same vectors, timing and check count as
the SystemVerilog testbench (see `testbench.py`), driven from Python through cocotb 2.x.

This file is copied into the episode's work directory and imported by cocotb inside the
simulator, so it imports nothing from heavygym: it reads `bench.json` and the hex files.
"""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import Timer

MAX_SHOWN = 5


def _words(path: str) -> list[int]:
    with open(path) as f:
        return [int(line, 16) for line in f if line.strip()]


def _fields(word: int, ports: list[list]) -> dict[str, int]:
    values = {}
    for name, width in reversed(ports):
        values[name] = word & ((1 << width) - 1)
        word >>= width
    return values


def _matches(bits: str, expected: int, care: int) -> bool:
    """`bits` as read from the simulator (MSB first, may hold x/z) against expected under care."""
    for k, char in enumerate(reversed(bits)):
        if care >> k & 1 and (char not in "01" or int(char) != expected >> k & 1):
            return False
    return True


@cocotb.test()
async def vectors(dut) -> None:  # noqa: ANN001 - cocotb's handle type
    with open("bench.json") as f:
        bench = json.load(f)
    nonce = os.environ["HEAVYGYM_NONCE"]
    print(f"HEAVYGYM_COCOTB_STARTED {nonce}", flush=True)
    inputs, outputs, clock = bench["inputs"], bench["outputs"], bench["clock"]
    step = "cycle" if clock else "vector"
    stimulus, expected, care = _words(bench["stimulus"]), _words(bench["expected"]), _words(bench["care"])
    clk = getattr(dut, clock) if clock else None
    if clk is not None:
        clk.value = 0
    passed = total = shown = 0
    for i, word in enumerate(stimulus):
        await Timer(1, "ns")
        applied = _fields(word, inputs)
        for name, value in applied.items():
            getattr(dut, name).value = value
        if clk is not None:
            await Timer(4, "ns")
            clk.value = 1
            await Timer(2, "ns")
        else:
            await Timer(4, "ns")
        want, mask = _fields(expected[i], outputs), _fields(care[i], outputs)
        for name, width in outputs:
            if not mask[name]:
                continue
            total += 1
            got = str(getattr(dut, name).value).lower().rjust(width, "0")
            if _matches(got, want[name], mask[name]):
                passed += 1
            elif shown < MAX_SHOWN:
                shown += 1
                shown_inputs = " ".join(f"{n}={w}'h{applied[n]:x}" for n, w in inputs)
                print(f"MISMATCH {step} {i}: output {name} expected {width}'h{want[name]:x} got {width}'b{got}\n"
                      f"  inputs of {step} {i}: {shown_inputs}", flush=True)  # fmt: skip
        if clk is not None:
            await Timer(3, "ns")
            clk.value = 0
        else:
            await Timer(5, "ns")
    print(f"CHECKS {nonce} passed={passed} total={total}", flush=True)
