"""The conformance check: does a gym keep the promises the trainer relies on?

For each task (up to a limit): the reference passes with reward 1; every known-bad candidate
does not pass; a candidate that never terminates ends as a `fail` within the gym's step
timeout; empty and garbage actions end as a `fail` with readable feedback, never an `error`
or a traceback. Every call goes through a `GymPool`, as in training.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from gyms.base import Candidate, Gym, Outcome
from gyms.pool import GymPool, StepCall

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

    @property
    def ok(self) -> bool:
        return self.problem is None


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
    planned = []
    for task in tasks:
        candidates = gym.candidates(task, rng)
        if not any(c.label == "reference" and c.expect == "pass" for c in candidates):
            report.checks.append(
                CheckResult(task.id, "reference", "pass", "-", 0.0, 0.0, "", "the task has no reference answer")
            )
        planned += [(task, c) for c in candidates]
        planned += [(task, Candidate(action, "fail", label)) for label, action in GARBAGE_ACTIONS.items()]
    if not any(c.expect == "timeout" for _, c in planned):
        report.notes.append("the gym offers no non-terminating candidate, so its timeout was not exercised")

    with GymPool(workers, step_timeout_s=gym.step_timeout_s) as pool:
        futures = [(task, c, pool.submit(gym.open(task), c.action)) for task, c in planned]
        for task, candidate, future in futures:
            call = future.result()
            call.episode.close()
            result = _judge(task.id, candidate, call, gym.step_timeout_s)
            report.checks.append(result)
            if on_check is not None:
                on_check(result)
    return report


def _judge(task_id: str, candidate: Candidate, call: StepCall, timeout_s: float) -> CheckResult:
    res = call.result
    problem = None
    if res.outcome is Outcome.ERROR:
        problem = f"infrastructure error: {res.info.get('error', res.observation)}"
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
    return CheckResult(
        task_id=task_id,
        label=candidate.label,
        expect=candidate.expect,
        outcome=res.outcome.value,
        reward=res.reward,
        service_s=call.service_s,
        observation=res.observation[:300],
        problem=problem,
    )
