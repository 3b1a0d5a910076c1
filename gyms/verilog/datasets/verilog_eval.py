"""VerilogEval v2 (spec-to-RTL): a directory of `ProbNNN_name_prompt.txt`, `ProbNNN_name_ref.sv`
(`module RefModule`) and `ProbNNN_name_test.sv` (`module tb`, which instantiates RefModule and
TopModule and prints `Mismatches: N in M samples`). The candidate is `module TopModule`;
reward = (M - N) / M, a pass when N is 0.
"""

from __future__ import annotations

import re
from pathlib import Path

from gyms.base import Task
from gyms.verilog.datasets.common import Loaded, instruction, reference_ports

MODULE = "TopModule"
REF_MODULE = "RefModule"
_PROMPT = re.compile(r"^(Prob\d+_\w+?)_prompt\.txt$")


def verilog_eval_tasks(root: Path) -> Loaded:
    tasks = []
    unloadable = {}
    for prompt in sorted(root.glob("Prob*_prompt.txt")):
        found = _PROMPT.match(prompt.name)
        if found is None:
            unloadable[f"verilog-eval/{prompt.name}"] = f"{prompt.name}: not named ProbNNN_name_prompt.txt"
            continue
        stem = found.group(1)
        ref, test = root / f"{stem}_ref.sv", root / f"{stem}_test.sv"
        missing = [p.name for p in (ref, test) if not p.is_file()]
        if missing:  # e.g. a code-completion variant without a testbench
            unloadable[f"verilog-eval/{stem}"] = f"{prompt.name}: no {' and no '.join(missing)} beside it"
            continue
        reference = re.sub(rf"\bmodule\s+{REF_MODULE}\b", f"module {MODULE}", ref.read_text(errors="replace"))
        tasks.append(
            Task(
                id=f"verilog-eval/{stem}",
                prompt=f"{prompt.read_text(errors='replace').strip()}\n\n{instruction(MODULE)}",
                reference=reference,
                metadata={"kind": "verilog-eval", "dir": str(root), "stem": stem, "module": MODULE,
                          "ports": reference_ports(reference, MODULE)},  # fmt: skip
            )
        )
    if not tasks:
        raise ValueError(
            f"no VerilogEval problems under {root}: expected ProbNNN_name_prompt.txt with _ref.sv and _test.sv "
            "beside it (the dataset_spec-to-rtl directory of VerilogEval v2)"
        )
    return Loaded(tasks, unloadable)
