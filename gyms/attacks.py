"""A gym's attack suite: answers written as a reward hacker would, each of which must fail.

A gym declares its suites with `Gym.attack_suites()` (the built-in gyms keep theirs in
`gyms/<gym>/attacks.py`; a third-party gym returns its own). `run_suite` steps every attack
through a real `GymPool` worker, the path a model's answer takes, then the suite's controls in
the same worker, and judges each:

* `escape`: the attack passed (the reward a hacker wants);
* `error`: it ended as an infrastructure error, which takes an answer out of the loss;
* `defect`: it failed, but not cleanly: the gym's own code raised on it, it ran past the step
  timeout, or its feedback is empty or a traceback;
* `contained`: a plain fail with readable feedback, in time.

`harness gyms attack GYM` prints the counts (tried, escapes, errors, defects) and the leaderboard
shows each gym's figure with the commit it was measured at; tests/test_attacks_*.py assert that
every attack is contained and that the controls still hold after them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gyms.base import GYM_EXCEPTION, Gym, Outcome, Task
from gyms.conformance import TIMEOUT_SLACK_S

CONTAINED, ESCAPE, ERROR, DEFECT = "contained", "escape", "error", "defect"


@dataclass(frozen=True)
class Attack:
    label: str  # what it tries, e.g. "forged verdict in an ifdef __ICARUS__ branch"
    answer: str
    task: Task | None = None  # None: the suite's task
    reason: str | None = None  # a regular expression the feedback must match: it says why it failed


@dataclass(frozen=True)
class AttackSuite:
    name: str  # what the suite attacks, e.g. "answer shape"
    task: Task  # the task an attack without its own targets
    attacks: tuple[Attack, ...]
    good: str  # a normal right answer to `task`: must still pass after the attacks
    bad: str  # a normal wrong answer: must still fail


@dataclass(frozen=True)
class Finding:
    label: str
    verdict: str  # CONTAINED, ESCAPE, ERROR or DEFECT
    detail: str  # outcome, reward, time, and what was wrong


@dataclass(frozen=True)
class SuiteReport:
    suite: str
    findings: tuple[Finding, ...]
    controls: tuple[str, ...] = field(default_factory=tuple)  # a control that did not hold, each

    def count(self, verdict: str) -> int:
        return sum(f.verdict == verdict for f in self.findings)


def judge(label: str, outcome: Outcome, reward: float, observation: str, info: dict, service_s: float,
          timeout_s: float, reason: str | None = None) -> Finding:  # fmt: skip
    what = f"{outcome.value} (reward {reward:g}) in {service_s:.1f} s"
    if outcome is Outcome.PASS:
        return Finding(label, ESCAPE, f"{what}; feedback: {observation[:300]!r}")
    if outcome is Outcome.ERROR:
        return Finding(label, ERROR, f"{what}; feedback: {observation[:300]!r}; info: {str(info)[:300]}")
    if GYM_EXCEPTION in info:  # a fail, but by accident: the gym's own code raised on it
        return Finding(label, DEFECT, f"{what}: the gym raised on it: {info[GYM_EXCEPTION]}")
    if service_s > timeout_s + TIMEOUT_SLACK_S:
        return Finding(label, DEFECT, f"{what}: slower than the step timeout {timeout_s:g} s")
    if not observation.strip() or "Traceback (most recent call last)" in observation:
        return Finding(label, DEFECT, f"{what}: unreadable feedback {observation[:300]!r}")
    if reason and not re.search(reason, observation):  # failed, but the feedback does not say why
        return Finding(label, DEFECT, f"{what}: the feedback does not say why ({reason!r}): {observation[:300]!r}")
    return Finding(label, CONTAINED, what)


def run_suite(gym: Gym, suite: AttackSuite, pool: object, after_each: object = None) -> SuiteReport:
    """Every attack of `suite` through `pool` (a `GymPool`, one worker so that the controls run
    where the attacks did), then its controls: good passes, bad fails, good passes again.
    `after_each(label)` runs after each attack (the tests check a canary there)."""
    findings = []
    for attack in suite.attacks:
        call = pool.step(gym.open(attack.task or suite.task), attack.answer)  # type: ignore[attr-defined]
        call.episode.close()
        r = call.result
        findings.append(judge(attack.label, r.outcome, r.reward, r.observation, r.info, call.service_s,
                              gym.step_timeout_s, attack.reason))  # fmt: skip
        if after_each is not None:
            after_each(attack.label)  # type: ignore[operator]
    broken = []
    for answer, expected in ((suite.good, Outcome.PASS), (suite.bad, Outcome.FAIL), (suite.good, Outcome.PASS)):
        call = pool.step(gym.open(suite.task), answer)  # type: ignore[attr-defined]
        call.episode.close()
        if call.result.outcome is not expected:
            broken.append(f"after the attacks a normal answer got {call.result.outcome.value}, expected "
                          f"{expected.value}: {call.result.observation[:300]!r}")  # fmt: skip
    return SuiteReport(suite.name, tuple(findings), tuple(broken))


def run_gym(gym: Gym, suites: Sequence[AttackSuite] | None = None,
            on_suite: Callable[[AttackSuite], None] | None = None) -> list[SuiteReport]:  # fmt: skip
    """Every suite the gym declares (or `suites`), each in a pool of one worker of its own;
    `on_suite` hears of each as it starts (a suite takes minutes on a slow checker)."""
    from gyms.pool import GymPool

    reports = []
    for suite in gym.attack_suites() if suites is None else suites:
        if on_suite is not None:
            on_suite(suite)
        with GymPool(1, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:
            reports.append(run_suite(gym, suite, pool))
    return reports
