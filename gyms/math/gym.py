"""The math gym: answers checked by math-verify in a warm, sandboxed checker process."""

from __future__ import annotations

import random
import re
import time
from dataclasses import replace
from decimal import Decimal
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gyms.base import Candidate, Episode, Gym, Outcome, Task, ToolCheck, Verdict
from gyms.math.extract import extract_answers
from gyms.math.notation import canonical
from gyms.math.shape import SET, SEVERAL, screen, shape_of, value_of
from gyms.math.tasks import addition_tasks, check_split, format_answer, reasoning_gym_tasks
from gyms.options import Options
from gyms.resources import per_process
from gyms.sandbox import Sandbox, SandboxError
from gyms.warm import WALL_PER_CPU, WarmCrash, WarmProcess, WarmTimeout

if TYPE_CHECKING:
    from gyms.attacks import AttackSuite

REASONING_GYM = "reasoning-gym"
ADDITION = "addition"
# CPU seconds of one check (the wall-clock backstop is WALL_PER_CPU times as long, so a loaded
# machine does not fail a correct answer). math-verify's own limits (2 s parse + 3 s compare)
# end a hang in Python well within it; this ends one in C code. They are wall-clock (math-verify
# times them with SIGALRM), but a correct answer's check costs milliseconds, thousands of times less.
CHECK_CPU_S = 8.0
# Gold answers are short; a longer "answer" is not one, and would only load the checker.
MAX_ANSWER_CHARS = 1000
# A reply may box the same answer more than once, in different forms; more is a scattershot.
MAX_FINAL_ANSWERS = 4
# Runs in isolated mode (-I): the checker imports math-verify and nothing from the project.
VERIFIER = Path(__file__).with_name("verifier.py")

NO_ANSWER = (
    "No final answer found. End your reply with the final answer in \\boxed{...}"
    " (or, if the problem asks for it, on a last line `Answer: ...`)."
)
TOO_LONG = "Your final answer is {} characters long; give the answer alone."
TOO_MANY = "Your reply gives {} different final answers; give one."
NOT_CORRECT = "That answer is not correct."
NOT_ALL_CORRECT = "Your reply gives {} different final answers, and not all of them are correct; give one."
NOT_CHECKED = "Your answer could not be checked in time; give it in a simpler form."
RETRY = " You may try again."


def checker() -> WarmProcess:
    """This process's math-verify checker, started on first use and reused by every episode."""
    def start() -> WarmProcess:
        sandbox = Sandbox(expose=[VERIFIER])  # docker mounts the program read-only; bwrap reads it anyway
        return WarmProcess([sandbox.python, "-I", str(VERIFIER)], name="math-verify", memory_mb=1024, sandbox=sandbox)

    return per_process("math-verify", start)


class MathEpisode(Episode):
    """Holds only its task, turn count and emulated seconds, so it pickles; the checker lives in
    the process."""

    def __init__(self, task: Task, max_turns: int = 1, emulated_s: float = 0.0) -> None:
        super().__init__(task, max_turns)
        self.emulated_s = emulated_s  # slept after each check (the gym's emulated_check_s)

    def evaluate(self, action: str) -> Verdict:
        verdict = self._check(action)
        if self.emulated_s:  # in the gym worker, as a heavier check would hold it
            time.sleep(self.emulated_s)
            verdict = replace(verdict, info={**verdict.info, "emulated_s": self.emulated_s})
        return verdict

    def _check(self, action: str) -> Verdict:
        retry = RETRY if self.turn < self.max_turns else ""
        found = extract_answers(action)
        if found is None:
            return Verdict(0.0, Outcome.FAIL, NO_ANSWER + retry, {"answer": None})
        if found.problem is not None:
            return Verdict(0.0, Outcome.FAIL, found.problem + retry, {"answer": None})
        answers, gold = _canonical(found.answers, self.task.metadata["gold"])
        info: dict[str, Any] = {"answer": answers[-1][:200]}
        if len(answers) > 1:
            info["answers"] = [a[:200] for a in answers[:MAX_FINAL_ANSWERS]]
        refused = _refusal(answers, gold)
        if refused is not None:
            return Verdict(0.0, Outcome.FAIL, refused + retry, {**info, "refused": refused})
        started = time.monotonic()
        try:
            # Units the screen accepted are stripped: the checker reads none (gyms/math/verifier.py).
            request = {"answers": [value_of(a) for a in answers], "gold": value_of(gold)}
            reply = checker().request(request, CHECK_CPU_S * WALL_PER_CPU, cpu_s=CHECK_CPU_S)
        except WarmTimeout:
            # A pathological answer that hangs the checker is the model's fault: a fail.
            reply = {"ok": True, "correct": False, "timed_out": True}
        except (WarmCrash, SandboxError) as exc:
            return _error("the math checker failed", exc, info)
        info["check_s"] = time.monotonic() - started
        if not reply.get("ok"):
            # The checker could not read the request (a bad gold answer): not the model's doing.
            return _error("the math checker rejected the task", reply.get("error"), info)
        info.update(parsed=reply.get("parsed"), timed_out=bool(reply.get("timed_out")))
        if "unreadable" in reply:
            info["unreadable"] = reply["unreadable"]
        if reply.get("correct"):
            return Verdict(1.0, Outcome.PASS, "Correct.", info)
        wrong = NOT_ALL_CORRECT.format(len(answers)) if len(answers) > 1 else NOT_CORRECT
        return Verdict(0.0, Outcome.FAIL, (NOT_CHECKED if info["timed_out"] else wrong) + retry, info)


def _emulated_checks(text: str) -> tuple[tuple[str, float], ...]:
    """`emulated_check_s`'s PREFIX:SECONDS pairs, in order."""
    pairs = []
    for item in str(text).split(","):
        prefix, colon, seconds = item.strip().rpartition(":")
        if not colon or not prefix:
            raise _OPTIONS.error("emulated_check_s", text, ": use PREFIX:SECONDS[,PREFIX:SECONDS...], e.g. add/2+:1.5")
        pairs.append((prefix, _OPTIONS.seconds("emulated_check_s", seconds)))
    return tuple(pairs)


def _canonical(answers: tuple[str, ...], gold: str) -> tuple[tuple[str, ...], str]:
    """Answers and gold in one notation (gyms/math/notation.py), answers that became one counted once.
    Too long an answer is left as it is, for `_refusal` to refuse."""
    commas = not shape_of(gold).features & {SEVERAL, SET}
    written = [a if len(a) > MAX_ANSWER_CHARS else canonical(a, commas) for a in answers]
    distinct: dict[str, str] = {}
    for answer in written:
        distinct.setdefault("".join(answer.split()), answer)
    return tuple(distinct.values()), canonical(gold, commas)


def _refusal(answers: tuple[str, ...], gold: str) -> str | None:
    """Why the answers are refused before any check (too many, too long, not a value's shape)."""
    if len(answers) > MAX_FINAL_ANSWERS:
        return TOO_MANY.format(len(answers))
    for answer in answers:
        if len(answer) > MAX_ANSWER_CHARS:
            return TOO_LONG.format(len(answer))
        problem = screen(answer, gold)
        if problem is not None:
            return problem
    return None


def _error(what: str, detail: object, info: dict[str, Any]) -> Verdict:
    return Verdict(0.0, Outcome.ERROR, f"internal error: {what}", {**info, "error": str(detail)})


_OPTIONS = Options("math")


class MathGym(Gym):
    """Options (strings from the command line are accepted): `source` ("reasoning-gym",
    "addition" for small sums, or the path of a parquet file or Hugging Face dataset of math
    problems), `test_source` (a second such path: the whole test split), `size` (generated
    tasks per split, reasoning-gym only), `seed`, `max_turns`, and `emulated_check_s`.

    `emulated_check_s` (PREFIX:SECONDS[,PREFIX:SECONDS...]) makes each check of a task whose id
    starts with PREFIX (the first that matches) also sleep SECONDS in its gym worker: a task mix
    whose check cost differs by task, with real checks and real rewards, for studying what a
    schedule does to the tasks a policy learns from (docs/benchmarks.md). The cost is emulated,
    and the run records the option beside its figures."""

    name = "math"
    version = "0.1.0"
    step_timeout_s = CHECK_CPU_S * WALL_PER_CPU + 2.0  # the check's backstop, and extraction and screens

    def __init__(
        self,
        source: str = REASONING_GYM,
        size: int | str = 64,
        seed: int | str = 0,
        max_turns: int | str = 2,
        test_source: str | None = None,
        emulated_check_s: str | None = None,
    ) -> None:
        self.source = str(source)
        self.test_source = str(test_source) if test_source else None
        if self.test_source is not None and self.source in (REASONING_GYM, ADDITION):
            raise ValueError(
                f"math gym option test_source={test_source!r} needs source=PATH: source={self.source!r} "
                "makes its own test split"
            )
        self.size = _OPTIONS.whole("size", size, 0)
        self.seed = _OPTIONS.whole("seed", seed, 0)
        self.max_turns = _OPTIONS.whole("max_turns", max_turns, 1)
        self.emulated = _emulated_checks(emulated_check_s) if emulated_check_s is not None else ()
        # the backstop of a step grows with its sleep, which is no hang
        self.step_timeout_s = MathGym.step_timeout_s + max((s for _, s in self.emulated), default=0.0)
        self._tasks: dict[str, list[Task]] = {}

    def tasks(self, split: str = "train") -> list[Task]:
        check_split(split)
        if split not in self._tasks:
            if self.source == REASONING_GYM:
                self._tasks[split] = reasoning_gym_tasks(split, self.size, self.seed)
            elif self.source == ADDITION:
                self._tasks[split] = addition_tasks(split)
            else:
                from gyms.math.dapo import dapo_splits  # pyarrow, datasets: only for a dataset source

                self._tasks.update(dapo_splits(self.source, self.test_source))
            if split == "train":
                self._check_emulated(self._tasks[split])
        return self._tasks[split]

    def _check_emulated(self, tasks: list[Task]) -> None:
        """A prefix of emulated_check_s that matches no training task is a typo that would emulate nothing."""
        for prefix, _ in self.emulated:
            if not any(t.id.startswith(prefix) for t in tasks):
                example = f", such as {tasks[0].id!r}" if tasks else ""
                raise _OPTIONS.error("emulated_check_s", prefix,
                                     f"matches none of the {len(tasks)} training tasks' ids{example}")

    def open(self, task: Task) -> MathEpisode:
        if "gold" not in task.metadata:
            raise ValueError(f"task {task.id!r} has no metadata['gold']; make math tasks with MathGym.tasks()")
        emulated = next((s for prefix, s in self.emulated if task.id.startswith(prefix)), 0.0)
        return MathEpisode(task, self.max_turns, emulated)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        gold, style = task.metadata["gold"], task.metadata.get("style", "boxed")
        found = [Candidate(format_answer(gold, style), "pass", "reference")]
        if re.fullmatch(r"-?\d+", gold):
            fraction = f"\\frac{{{2 * int(gold)}}}{{2}}"
            found.append(Candidate(format_answer(fraction, style), "pass", "equivalent-fraction"))
        off_by_one = _shift_last_number(gold, rng.choice((-1, 1)))
        if off_by_one is not None:
            found.append(Candidate(format_answer(off_by_one, style), "fail", "off-by-one"))
        flipped = _flip_first_sign(gold)
        if flipped is not None:
            found.append(Candidate(format_answer(flipped, style), "fail", "sign-error"))
        found += [
            Candidate(f"After working it out, I get {gold}.", "fail", "no-answer"),
            Candidate(f"The answer is \\boxed{{{gold}.", "fail", "unbalanced"),
            Candidate(f"The answer is \\boxed{{{_huge_power(gold)}}}.", "timeout", "huge-power"),
        ]
        return found

    def format_examples(self, rng: random.Random, per_task: int) -> list[tuple[str, str]]:
        """Each prompt with answers drawn uniformly from the split's distinct answers, in the
        task's format: the model learns the format and which answers occur, never which one a
        prompt has (the draw ignores the prompt)."""
        tasks = self.tasks()
        answers = sorted({t.metadata["gold"] for t in tasks})
        # The shortest answer the checker takes, so a small model's few new tokens hold it.
        shortest = {"boxed": "\\boxed{{{}}}", "answer-line": "Answer: {}"}
        return [(t.prompt, shortest[t.metadata.get("style", "boxed")].format(rng.choice(answers)))
                for t in tasks for _ in range(per_task)]  # fmt: skip

    def attack_suites(self) -> list[AttackSuite]:
        from gyms.math.attacks import suites  # built when asked for: the answers are the suite's own

        return suites(self)

    def tools(self) -> list[ToolCheck]:
        # Requirements as in pyproject.toml.
        tools = [_package("math-verify", "math-verify==0.9.0")]
        if self.source == REASONING_GYM:
            tools.append(_package("reasoning-gym", "reasoning-gym==0.1.25"))
        else:
            tools.append(_package("pyarrow", "pyarrow>=15"))
            if any(Path(p).is_dir() for p in (self.source, self.test_source) if p):
                tools.append(_package("datasets", "datasets==5.2.0"))
        return tools


_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# math-verify keeps the tower unevaluated and gives up comparing it at its timeout.
_TOWER = "9^{9^{9^{9^{9}}}}"


def _huge_power(gold: str) -> str:
    """The tower, in place of the gold's first value: a set is compared value by value only
    with a set of its own size, so a lone tower against `-3.625, 0.0` failed in 0.4 s, unchecked."""
    _, comma, rest = gold.partition(",")
    return _TOWER + comma + rest if comma and SEVERAL in shape_of(gold).features else _TOWER


def _shift_last_number(gold: str, delta: int) -> str | None:
    """`gold` with its last number moved by `delta` (away from zero when that would go negative)."""
    numbers = list(_NUMBER.finditer(gold))
    if not numbers:
        return None
    last = numbers[-1]
    value = Decimal(last.group())
    shifted = value + delta if value + delta >= 0 else value + abs(delta)
    return gold[: last.start()] + str(shifted) + gold[last.end() :]


def _flip_first_sign(gold: str) -> str | None:
    """`gold` with the sign of its first non-zero number flipped (a classic sign error)."""
    for number in _NUMBER.finditer(gold):
        if Decimal(number.group()) != 0:
            start = number.start()
            if gold[:start].endswith("-"):
                return gold[: start - 1] + gold[start:]
            return gold[:start] + "-" + gold[start:]
    return None


def _package(distribution: str, requirement: str) -> ToolCheck:
    try:
        return ToolCheck(distribution, True, version(distribution))
    except PackageNotFoundError:
        return ToolCheck(distribution, False, install_hint=f"pip install '{requirement}'")
