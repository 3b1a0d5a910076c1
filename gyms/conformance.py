"""The conformance check: does a gym keep the promises the trainer relies on?

For each task (up to a limit): the reference passes with reward 1; every known-bad candidate
does not pass; a candidate that never terminates ends as a `fail` within the gym's step
timeout; empty and garbage actions end as a `fail` with readable feedback, never an `error`
or a traceback. Every call goes through a `GymPool`, as in training.

A known-bad candidate must also exercise what it claims, or its check proves nothing: a
`timeout` candidate must be stopped by the time limit (`info["timed_out"]`), and one with a
`stage` must end at that stage (`info["stage"]`). A `timeout` candidate the gym refused before
that stage (a pre-check, a build) is *not applicable*: reported with the reason, neither passed
nor a violation. One that ran and ended without `info["timed_out"]` is a violation: either the gym
stopped it but forgot to say so, or the candidate does not hang.

`timeout` candidates run on `gym.with_short_time_limits()`: the stop is observed on every task
without waiting out each task's full limit, which would be most of the check's time. The first
one runs on the gym itself, so the full limit is seen to end a hang within the step timeout too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from gyms.base import GYM_EXCEPTION, Candidate, Gym, Outcome
from gyms.pool import GymPool
from gyms.steps import StepCall

# Actions no gym should choke on: they must get a plain `fail` with feedback.
GARBAGE_ACTIONS = {
    "empty": "",
    "whitespace": " \n\t \n",
    "binary-junk": "\x00\x01\x02\ufffd}{]][[\\boxed{ ```\n```verilog\nmodule endmodule theorem :=",
    "huge": "lorem ipsum " * 20_000,
    # Degenerate, repetitive output a model really produces, shaped to make a careless extractor
    # (regexes over fences, think tags, braces, answer lines) quadratic. Under the answer-size cap
    # (`Episode.max_answer_bytes`) it is parsed, so parsing must be linear; over it, it is refused unread.
    "repetitive-markup": ("<think>```verilog\nmodule m(\\boxed{{\\boxed{Answer: $x$ " * 2_000)[:60_000],
    "unclosed-fences": "```\n" * 15_000,
    "oversized": "<think>" + "a(" * 200_000,
}
# How far past its own step timeout a non-terminating action may take to come back as `fail`.
TIMEOUT_SLACK_S = 3.0
HANG_FINISHED = (
    "the non-terminating candidate ended without info['timed_out'] = True: a gym that stopped it at its time "
    "limit must set info['timed_out'] = True in that step's info; if nothing stopped it, the candidate does not "
    "hang, so it tests nothing"
)


@dataclass(frozen=True)
class CheckResult:
    task_id: str
    label: str
    expect: str
    outcome: str
    reward: float
    service_s: float
    observation: str
    problem: str | None  # None when the gym kept its promise
    not_applicable: str | None = None  # why the candidate tested nothing (it never reached its stage)

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def status(self) -> str:
        return "violation" if self.problem else "not applicable" if self.not_applicable else "ok"


@dataclass
class ConformanceReport:
    gym: str
    tasks: int = 0
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.ok]

    @property
    def not_applicable(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "not applicable"]

    @property
    def ok(self) -> bool:
        return not self.violations and self.tasks > 0


def check_gym(
    gym: Gym,
    limit: int | None = None,
    split: str = "train",
    workers: int | None = None,
    seed: int = 0,
    on_check: Callable[[CheckResult], None] | None = None,
) -> ConformanceReport:
    report = ConformanceReport(gym.name)
    tasks = list(gym.tasks(split))[:limit]
    report.tasks = len(tasks)
    if not tasks:
        report.notes.append(f"the gym has no tasks in split {split!r}")
        return report
    rng = random.Random(seed)
    known = {task.id: gym.candidates(task, rng) for task in tasks}
    if not any(known.values()):  # an environment whose answers nobody gave (the openenv gym without them)
        report.notes.append("the gym gave no candidates (known answers): only that garbage answers fail was checked; "
                            "that references pass, wrong answers fail and hangs are stopped was not")  # fmt: skip
    planned = []
    for task in tasks:
        candidates = known[task.id]
        if any(known.values()) and not any(c.label == "reference" and c.expect == "pass" for c in candidates):
            report.checks.append(
                CheckResult(task.id, "reference", "pass", "-", 0.0, 0.0, "", "the task has no reference answer")
            )
        planned += [(task, c) for c in candidates]
        planned += [(task, Candidate(action, "fail", label)) for label, action in GARBAGE_ACTIONS.items()]
    hangs = [c for _, c in planned if c.expect == "timeout"]
    if not hangs:
        report.notes.append("the gym offers no non-terminating candidate, so its timeout was not exercised")
    short = gym.with_short_time_limits()
    if short is not gym and len(hangs) > 1:
        report.notes.append(
            f"non-terminating candidates ran under the gym's short time limits (step timeout {short.step_timeout_s:g} s), "
            f"the first under its own ({gym.step_timeout_s:g} s)"
        )

    with GymPool(workers, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:
        # A window of steps in flight, each episode closed once judged: a gym whose open episodes
        # hold something scarce (the openenv gym: a server's sessions) never holds more than that.
        # The window refills as any step ends, so one hang does not idle the other workers.
        pending: dict[Future[StepCall], tuple[int, str, Candidate, float]] = {}
        judged: dict[int, CheckResult] = {}

        def judge(done: set[Future[StepCall]]) -> None:
            for future in done:
                number, task_id, candidate, timeout_s = pending.pop(future)
                call = future.result()
                pool.close_episode(call.episode)
                judged[number] = _judge(task_id, candidate, call, timeout_s)
                if on_check is not None:
                    on_check(judged[number])

        for number, (task, c) in enumerate(planned):
            runner = short if c.expect == "timeout" and c is not hangs[0] else gym
            pending[pool.submit(runner.open(task), c.action)] = (number, task.id, c, runner.step_timeout_s)
            while len(pending) > 2 * pool.workers:
                judge(wait(pending, return_when=FIRST_COMPLETED).done)
        while pending:
            judge(wait(pending, return_when=FIRST_COMPLETED).done)
        report.checks += [judged[number] for number in sorted(judged)]  # in plan order, as listed
    if hangs and all(c.status == "not applicable" for c in report.checks if c.expect == "timeout"):
        report.notes.append("no non-terminating candidate reached the stage it exercises: the timeout was not exercised")
    return report


def _judge(task_id: str, candidate: Candidate, call: StepCall, timeout_s: float) -> CheckResult:
    res = call.result
    problem = not_applicable = None
    if res.outcome is Outcome.ERROR:
        problem = f"infrastructure error: {res.info.get('error', res.observation)}"
    elif GYM_EXCEPTION in res.info:  # a fail all the same, but a bug in the gym's own code
        problem = f"the gym raised on it: {res.info[GYM_EXCEPTION]}"
    elif candidate.expect == "pass" and (res.outcome is not Outcome.PASS or res.reward != 1.0):
        problem = f"expected a pass with reward 1, got {res.outcome.value} with reward {res.reward:g}"
    elif candidate.expect != "pass" and res.outcome is Outcome.PASS:
        problem = "a known-bad action passed"
    elif candidate.expect == "timeout" and call.service_s > timeout_s + TIMEOUT_SLACK_S:
        problem = f"a non-terminating action took {call.service_s:.1f} s (step timeout {timeout_s:g} s)"
    elif candidate.expect != "pass" and not res.observation.strip():
        problem = "no feedback for a failed action"
    elif "Traceback (most recent call last)" in res.observation:
        problem = "the feedback contains a Python traceback"
    elif candidate.expect != "pass":
        problem, not_applicable = _exercised(candidate, res.info, res.observation)
    return CheckResult(
        task_id=task_id,
        label=candidate.label,
        expect=candidate.expect,
        outcome=res.outcome.value,
        reward=res.reward,
        service_s=call.service_s,
        observation=res.observation[:300],
        problem=problem,
        not_applicable=not_applicable,
    )


def _exercised(candidate: Candidate, info: Mapping[str, Any], observation: str) -> tuple[str | None, str | None]:
    """(problem, why not applicable) of a known-bad candidate's claim: what it was meant to exercise."""
    stage = info.get("stage")
    if candidate.stage is not None and stage is None:
        return f"the candidate claims stage {candidate.stage!r}, but the gym reports no info['stage']", None
    if candidate.expect == "timeout":
        if info.get("timed_out") is True:
            return None, None
        if candidate.stage is not None and stage != candidate.stage:
            reason = " ".join(observation.split())[:200]  # the gym's feedback, on one line
            return None, f"it never reached stage {candidate.stage!r}: it ended at {stage!r} ({reason})"
        reason = " ".join(observation.split())[:200]
        return f"{HANG_FINISHED} (the gym's feedback: {reason})", None
    if candidate.stage is not None and stage != candidate.stage:
        return f"the candidate should fail at stage {candidate.stage!r} but ended at {stage!r}: it tests another", None
    return None, None
