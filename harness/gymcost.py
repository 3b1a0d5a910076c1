"""`harness gyms profile NAME`: a gym's cost card, measured.

Every replay candidate of each task (`Gym.candidates`, seeded by task id as the replay policy
seeds it) is stepped once through a GymPool, after a warm-up of one reference answer per
worker. Service times are weighted to the replay policy's action mix (trainer/rules/answers.py),
so the card predicts a benchmark run; CPU seconds and peak memory are read from /proc around the
measured calls. Each step whose episode would go on (a fail, with turns left) records its
feedback's estimated tokens (trainer/rules/context.py), weighted the same way: what a turn adds
to the next prompt beside its response. Each task's own mean step time, weighted the same way
over its candidates, is kept by task id (`by_task`): the prior of trainer/rules/cost.py.
"""

from __future__ import annotations

import os
import random
import resource
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from gyms import Candidate, Gym, Outcome
from gyms.docker_sandbox import pool_cpu_s
from gyms.pool import GymPool, default_workers
from gyms.steps import StepCall
from harness.costcard import CostCard, turn_pmf
from harness.sim.distribution import Distribution
from trainer.rules.answers import AnswerMix
from trainer.rules.context import feedback_tokens


def sandbox_line() -> str:
    """The sandbox the card was measured in: "bwrap", or "docker IMAGE ID" (harness/sandboxes.py)."""
    from harness import sandboxes

    record = sandboxes.record()
    if record["backend"] != "docker":
        return str(record["backend"])
    return f"docker {record['image']} {record['id']}"


def measure(
    gym: Gym, limit: int | None = None, workers: int | None = None, say: Callable[[str], None] | None = None
) -> CostCard:
    """Step every replay candidate of the first `limit` tasks once, through a GymPool, after a
    warm-up: one reference answer per worker (a first call starts the checker: a one-off).
    `say` gets a line of progress: the warm-up, then the candidates stepped, about every tenth."""
    for flag, value in (("--limit", limit), ("--gym-workers", workers)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    tasks = list(gym.tasks("train"))[:limit]
    planned: list[tuple[str, Candidate, float]] = []  # task id, candidate, weight in the replay mix
    end_chances = []
    for task in tasks:
        candidates = gym.candidates(task, random.Random(task.id))  # the replay policy's seed
        if not candidates:
            continue
        mix = AnswerMix().shares({c.expect for c in candidates})  # the replay policy's, at its defaults
        per_kind = Counter(c.expect for c in candidates)
        planned += [(task.id, c, mix.get(c.expect, 0.0) / per_kind[c.expect]) for c in candidates]
        end_chances.append(mix.get("pass", 0.0))
    if not planned:
        raise ValueError(f"gym {gym.name} offers no candidates to profile (Gym.candidates returned none)")
    by_id = {t.id: t for t in tasks}
    pool_size = workers or default_workers()
    with GymPool(pool_size, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:

        def step(batch: list[tuple[str, Candidate, float]], what: str = "") -> list[StepCall]:
            futures = [pool.submit(gym.open(by_id[tid]), c.action) for tid, c, _ in batch]
            calls = []
            for future in futures:
                calls.append(future.result())
                if what and say is not None and len(calls) * 10 // len(batch) > (len(calls) - 1) * 10 // len(batch):
                    say(f"stepped {len(calls)}/{len(batch)} {what}")
            for call in calls:
                call.episode.close()
            return calls

        references = [p for p in planned if p[1].expect == "pass"] or planned
        if say is not None:
            say(f"warming up {pool_size} gym workers (one reference answer each), then stepping {len(planned)} "
                f"candidates of {len(tasks)} tasks")  # fmt: skip
        warmup = step((references * pool_size)[:pool_size])
        warm_cpu_s = _tree_cpu_s() + pool_cpu_s()
        calls = step(planned, "candidates")
        cpu_s = _tree_cpu_s() + pool_cpu_s() - warm_cpu_s  # docker: the commands ran in the containers
        peak_live_mb = _tree_peak_rss_mb()
    peak_rss_mb = max(peak_live_mb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    weights = [w for _, _, w in planned]
    service = [c.service_s for c in calls]
    timed_out = [bool(c.result.info.get("timed_out")) or c.service_s >= gym.step_timeout_s for c in calls]
    errors = [c.result.outcome is Outcome.ERROR for c in calls]
    going_on = [(feedback_tokens(c.result.observation), w) for c, w in zip(calls, weights) if not c.result.done]
    max_turns = max(1, gym.max_turns)
    turns = [sum(p) / len(end_chances) for p in zip(*(turn_pmf(e, max_turns) for e in end_chances))]
    by_expect = {
        kind: Distribution.of([s for s, (_, c, _) in zip(service, planned) if c.expect == kind])
        for kind in sorted({c.expect for _, c, _ in planned})
    }
    by_task = {tid: _weighted_mean([(s, w) for s, (t, _, w) in zip(service, planned) if t == tid])
               for tid in dict.fromkeys(t for t, _, _ in planned)}  # fmt: skip
    return CostCard(
        gym=gym.name, source="gyms profile", tools={**gym.describe(), "sandbox": sandbox_line()}, service_s=Distribution.of(service, weights),
        turns=tuple(turns), error_rate=_weighted(errors, weights), timeout_rate=_weighted(timed_out, weights),
        workers=pool_size, calls=len(calls), peak_rss_mb=peak_rss_mb, by_expect=by_expect,
        cpu_s_per_call=cpu_s / len(calls), warmup_max_s=max(c.service_s for c in warmup),
        feedback_tokens=_weighted_mean(going_on), by_task=by_task,
    )  # fmt: skip


def _weighted(flags: Sequence[bool], weights: Sequence[float]) -> float:
    return sum(w for f, w in zip(flags, weights) if f) / sum(weights)


def _weighted_mean(pairs: Sequence[tuple[float, float]]) -> float:
    """The mean of (value, weight) pairs; 0 where their weights are (no step's episode went on)."""
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total > 0 else 0.0


def _descendants() -> list[tuple[int, list[str]]]:
    """(pid, /proc/PID/stat fields after the command name) of this process, then its descendants."""
    stats, children = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        pid = int(stat.parent.name)
        stats[pid] = fields
        children.setdefault(int(fields[1]), []).append(pid)
    found, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        found += [(pid, stats[pid])] if pid in stats else []
        todo += children.get(pid, [])
    return found


def _tree_cpu_s() -> float:
    """CPU seconds of every descendant, alive or reaped (a reaped one's time is in its parent's
    cutime/cstime): the gym workers, their warm checkers and sandboxes."""
    (_, me), *rest = _descendants()
    ticks = int(me[13]) + int(me[14]) + sum(int(f[11]) + int(f[12]) + int(f[13]) + int(f[14]) for _, f in rest)
    return ticks / os.sysconf("SC_CLK_TCK")


def _tree_peak_rss_mb() -> float:
    """The largest resident high-water mark (VmHWM) of any live descendant, in MB."""
    peak = 0.0
    for pid, _ in _descendants()[1:]:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]) / 1024)
    return peak
