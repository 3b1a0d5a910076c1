"""An episode that reads files inside a sandbox, for tests/test_answer_keys.py. It lives in a
module of its own that imports no gym, so the pool worker that unpickles it loads none."""

from __future__ import annotations

import sys

from gyms.base import Episode, Outcome, Verdict
from gyms.sandbox import Sandbox

GYM_TASK_MODULES = ("gyms.verilog.tasks", "gyms.lean.tasks", "gyms.modelica.catalog")


class ReadEpisode(Episode):
    """Reads each file named in the action (one per line) inside a sandbox, and reports which
    gym task modules its process had imported."""

    def evaluate(self, action: str) -> Verdict:
        sandbox = Sandbox()
        shown = {}
        with sandbox.workdir() as workdir:
            for path in action.splitlines():
                shown[path] = sandbox.run(["cat", path], workdir).stdout
        imported = [name for name in GYM_TASK_MODULES if name in sys.modules]
        return Verdict(1.0, Outcome.PASS, "read", {"shown": shown, "imported": imported})
