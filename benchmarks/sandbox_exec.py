"""Per-command cost of the sandbox backends: `true`, and an Icarus compile and run of a small
design, each command run N times in one work directory after one run that starts the backend
(the docker container's start is a worker's, not a step's). Run from the repository root,
backends in ABBA order on a quiet machine (docs/sandbox.md):

    .venv/bin/harness images build verilog
    for b in bwrap docker docker bwrap; do .venv/bin/python benchmarks/sandbox_exec.py $b --runs 40; done
"""

from __future__ import annotations

import argparse
import statistics
import time

from gyms import hostfs
from gyms.sandbox import BACKENDS, Sandbox

DESIGN = """module t; reg [7:0] a; integer i;
  initial begin a = 0; for (i = 0; i < 100; i = i + 1) a = a + i; $display("%d", a); end
endmodule
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("backend", choices=BACKENDS)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    image = None
    if args.backend == "docker":
        from gyms import images

        image = images.image_for("verilog")
    box = Sandbox(args.backend, image=image)
    times: dict[str, list[float]] = {"true": [], "iverilog + vvp": []}
    with box.workdir() as workdir:
        hostfs.write_file(workdir.path, "t.v", DESIGN)
        box.run(["true"], workdir)
        for _ in range(args.runs):
            started = time.monotonic()
            assert box.run(["true"], workdir).ok
            times["true"].append(time.monotonic() - started)
            started = time.monotonic()
            assert box.run(["iverilog", "-o", "s.vvp", "t.v"], workdir).ok
            assert box.run(["vvp", "-n", "s.vvp"], workdir).ok
            times["iverilog + vvp"].append(time.monotonic() - started)
    if box.container is not None:
        box.container.close()
    for name, xs in times.items():
        xs.sort()
        print(f"{args.backend:7s} {name:15s} median {statistics.median(xs) * 1e3:6.1f} ms  "
              f"p10 {xs[len(xs) // 10] * 1e3:6.1f}  p90 {xs[9 * len(xs) // 10] * 1e3:6.1f}  ({args.runs} runs)")  # fmt: skip


if __name__ == "__main__":
    main()
