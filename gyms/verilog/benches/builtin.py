"""The bench of a built-in task under the generated SystemVerilog testbench (`testbench.py`):
it records outputs; the golden model's values stay on the host."""

from __future__ import annotations

from functools import cached_property, lru_cache

from gyms.verilog.benches import testbench
from gyms.verilog.benches.base import DESIGN, BenchOptions, SimulatorBench, read_outputs
from gyms.verilog.benches.recorded import NoVerdict, Score
from gyms.verilog.benches.vectors import Vectors, make_vectors
from gyms.verilog.checks.precheck import PortSpec
from gyms.verilog.checks.simulators import Build, Job
from gyms.verilog.spec import MODULE, DesignTask


class BuiltinBench(SimulatorBench):
    """A built-in task: the testbench records outputs; the golden model's values stay here."""

    forgeable = False
    reserved_modules = frozenset({testbench.TB_TOP})

    def __init__(self, task: DesignTask, options: BenchOptions) -> None:
        self.task = task
        self.options = options
        self.simulator = options.simulator
        self.module = MODULE
        self.expected_ports = tuple(PortSpec(p.name, p.direction, p.width) for p in task.ports)

    @cached_property
    def vectors(self) -> Vectors:
        opts = self.options
        per_sequence = opts.vectors if opts.vectors is not None else self.task.vectors
        return _vectors(self.task, opts.seed, per_sequence, opts.sequences)

    def prepare(self, job: Job) -> Build:
        self.write_stimulus(job)
        job.write("tb.sv", testbench.render(self.task, len(self.vectors), self.options.waves))
        return Build(["tb.sv", DESIGN], testbench.TB_TOP, self.options.waves, strict_x=True)

    def write_stimulus(self, job: Job) -> None:
        job.write(testbench.STIMULUS, _stimulus_file(self.task, self.vectors))

    def score(self, job: Job, output: str) -> Score | NoVerdict:
        data = read_outputs(job, testbench.size_limit(self.task, len(self.vectors)))
        if isinstance(data, NoVerdict):
            return data
        return testbench.score(self.task, self.vectors, data)


# The host's work per step is the golden model's run and the stimulus file: a pure function of
# (task, seed, vectors, sequences), so each is computed once per process and reused by every
# step of every episode (a heavy task's 10^5+ cycles take seconds of Python). A few entries
# only: a heavy task's vectors take tens of MB.
@lru_cache(maxsize=8)
def _vectors(task: DesignTask, seed: int, per_sequence: int, sequences: int) -> Vectors:
    return make_vectors(task, seed, per_sequence, sequences)


_stimulus_texts: dict[int, tuple[Vectors, str]] = {}


def _stimulus_file(task: DesignTask, vectors: Vectors) -> str:
    key = id(vectors)
    found = _stimulus_texts.get(key)
    if found is None or found[0] is not vectors:  # an id reused by new vectors is a miss
        if len(_stimulus_texts) >= 8:
            _stimulus_texts.pop(next(iter(_stimulus_texts)))
        found = _stimulus_texts[key] = (vectors, testbench.stimulus_file(task, vectors))
    return found[1]
