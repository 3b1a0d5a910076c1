"""Public benchmarks read from disk, as tasks of this gym: `source=verilog-eval:PATH`, `source=rtllm:PATH`,
`source=hf-verilog:PATH` (VerilogEval v2 saved as a Hugging Face dataset).

The data is not shipped (licences, size): point the gym at a local copy. Each loader turns a
problem into a `Task` whose metadata names its files; its bench (`benches/verilog_eval.py`,
`benches/rtllm.py`) copies into a run what the run needs. A loader returns a `Loaded`: the
tasks, and every problem it found but could not make a task, with the reason. `vetting.py`
runs each task's reference under its own testbench when the benchmark loads.
"""

from __future__ import annotations

from pathlib import Path

from gyms.verilog.datasets.common import Loaded
from gyms.verilog.datasets.hf_dataset import hf_dataset_tasks
from gyms.verilog.datasets.rtllm import rtllm_tasks
from gyms.verilog.datasets.verilog_eval import verilog_eval_tasks

LOADERS = {"verilog-eval": verilog_eval_tasks, "rtllm": rtllm_tasks, "hf-verilog": hf_dataset_tasks}


def load_source(source: str) -> Loaded:
    kind, sep, path = source.partition(":")
    if not sep or kind not in LOADERS or not path:
        raise ValueError(
            f"source={source!r} is not understood; use builtin, verilog-eval:/path/to/dataset_spec-to-rtl, "
            "rtllm:/path/to/RTLLM or hf-verilog:/path/to/a/saved/dataset"
        )
    root = Path(path).expanduser()
    if not (root.is_dir() or (kind == "hf-verilog" and root.is_file())):  # a dataset may be one parquet file
        raise ValueError(f"source={source!r}: {root} is not a directory")
    return LOADERS[kind](root.resolve())
