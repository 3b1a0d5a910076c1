"""A gym whose steps wait at a gate the test opens, so a test can hold a real `harness benchmark`
at a known point (an event, not a race against the clock).

Options: `gate` (a directory shared by every worker process) and `free` (how many steps, over
all workers, pass at once). Step `free + 1` and later wait until `gate/open` exists.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gyms import Episode, Gym, Outcome, Task, Verdict

OPEN = "open"
_WAIT_LIMIT_S = 300  # a test that died never opens the gate: its workers must not wait forever


def ticket(gate: Path) -> int:
    """This step's number, 1, 2, ... over every worker process (an exclusive create is atomic)."""
    n = 1
    while True:
        try:
            os.close(os.open(gate / f"step-{n}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return n
        except FileExistsError:
            n += 1


class GatedEpisode(Episode):
    def __init__(self, task: Task, gate: str, free: int) -> None:
        super().__init__(task, max_turns=1)
        self.gate = Path(gate)
        self.free = free

    def evaluate(self, action: str) -> Verdict:
        if ticket(self.gate) > self.free:
            deadline = time.monotonic() + _WAIT_LIMIT_S
            while not (self.gate / OPEN).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return Verdict(1.0, Outcome.PASS, "well done")


class GatedGym(Gym):
    name = "gated"
    version = "1"
    step_timeout_s = 60.0  # a step may wait at the gate for as long as the test takes

    def __init__(self, gate: str, free: int | str) -> None:
        self.gate = gate
        self.free = int(free)

    def tasks(self, split: str = "train") -> list[Task]:
        return [Task(f"gated/{i}", "say pass", reference="pass") for i in range(3)]

    def open(self, task: Task) -> Episode:
        return GatedEpisode(task, self.gate, self.free)
