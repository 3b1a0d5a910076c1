"""What one episode step costs on each backend: `python -m gyms.verilog.cost [options]`.

Steps the reference answer of every selected task once per configuration, one at a time on an
otherwise idle machine (after one warm-up step, so Verilator's compiler cache is warm), and
prints the median and maximum wall time of the whole step, of the build and of the
simulation. Any gym option can be given as KEY=VALUE; each --config is simulator/testbench.
"""

from __future__ import annotations

import argparse
import statistics
import time

from gyms.verilog.answers.candidates import answer
from gyms.verilog.gym import VerilogGym

CONFIGS = ("icarus/sv", "verilator/sv", "icarus/cocotb", "verilator/cocotb")


def measure(config: str, options: dict[str, str]) -> dict[str, list[float]]:
    simulator, testbench = config.split("/")
    gym = VerilogGym(simulator=simulator, testbench=testbench, **options)
    tasks = gym.tasks()
    timings: dict[str, list[float]] = {"step": [], "build": [], "sim": []}
    for k, task in enumerate([tasks[0], *tasks]):
        with gym.open(task) as episode:
            started = time.monotonic()
            result = episode.step(answer(task.reference or ""))
            elapsed = time.monotonic() - started
        if result.reward != 1.0:
            raise RuntimeError(f"{config}: the reference of {task.id} did not pass: {result.observation}")
        if k == 0:
            continue  # warm-up
        timings["step"].append(elapsed)
        timings["build"].append(result.info["build_s"])
        timings["sim"].append(result.info["sim_s"])
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", choices=CONFIGS, help="simulator/testbench (repeatable)")
    parser.add_argument("options", nargs="*", help="gym options as KEY=VALUE, e.g. tasks=fsm/* vectors=1000")
    args = parser.parse_args(argv)
    options = dict(pair.split("=", 1) for pair in args.options)
    header = ["step median/max s", "build median/max s", "sim median/max s"]
    print(f"{'config':18} {'steps':>5}  " + "  ".join(f"{h:>19}" for h in header))
    for config in args.config or CONFIGS:
        t = measure(config, options)
        cells = [f"{statistics.median(t[k]):8.3f} /{max(t[k]):7.3f}" for k in ("step", "build", "sim")]
        print(f"{config:18} {len(t['step']):5d}  " + "  ".join(f"{c:>19}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
