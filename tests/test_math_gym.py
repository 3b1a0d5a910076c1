"""The math gym: task sources, and episodes checked by the real sandboxed checker."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pandas as pd
import pytest

from gyms.base import Outcome, Task
from gyms.conformance import check_gym
from gyms.math import MathGym
from gyms.math import gym as gym_module
from gyms.math.dapo import load_problems
from gyms.math.gym import checker
from gyms.math.tasks import RG_DATASETS
from gyms.pool import GymPool


@pytest.fixture(scope="module")
def gym() -> MathGym:
    return MathGym(size=len(RG_DATASETS))  # one task per dataset


@pytest.fixture(scope="module")
def task(gym: MathGym) -> Task:
    return next(t for t in gym.tasks() if t.id.startswith("rg/chain_sum/"))


# -- tasks ---------------------------------------------------------------------------------


def test_tasks_are_deterministic_for_a_seed() -> None:
    first, again, other = MathGym(size=20, seed=3), MathGym(size="20", seed="3"), MathGym(size=20, seed=4)
    assert first.tasks("train") == again.tasks("train")
    assert [t.prompt for t in first.tasks("train")] != [t.prompt for t in other.tasks("train")]


def test_task_ids_are_stable_across_sizes_and_splits_differ() -> None:
    small, large = MathGym(size=5), MathGym(size=30)
    by_id = {t.id: t for t in large.tasks("train")}
    assert all(by_id[t.id] == t for t in small.tasks("train"))
    assert len(by_id) == 30
    assert {t.split for t in large.tasks("test")} == {"test"}
    assert not {t.prompt for t in large.tasks("train")} & {t.prompt for t in large.tasks("test")}


def test_generated_tasks_ask_for_a_boxed_answer(gym: MathGym) -> None:
    tasks = gym.tasks("train")
    assert {t.id.split("/")[1] for t in tasks} == set(RG_DATASETS)
    for t in tasks:
        assert "\\boxed{" in t.prompt
        assert t.reference == f"The answer is \\boxed{{{t.metadata['gold']}}}."
        assert t.id.startswith("rg/") and t.id[-4:].isdigit()


def test_unknown_split_names_the_known_ones(gym: MathGym) -> None:
    with pytest.raises(ValueError, match="train, test"):
        gym.tasks("validation")


@pytest.mark.parametrize("options", [{"size": "many"}, {"max_turns": 0}, {"seed": -1}])
def test_bad_options_are_rejected(options: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        MathGym(**options)


# -- the DAPO-Math loader ------------------------------------------------------------------

# DAPO-Math-17k's instruction wrapper, as published.
_ASK = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
)
_REMIND = '\n\nRemember to put your answer on its own line after "Answer:".'


def _chat(content: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Be careful."}, {"role": "user", "content": content}]


@pytest.fixture
def dapo_chat(tmp_path: Path) -> Path:
    problems = (("What is 2+3?", "5"), ("What is 6*7?", "42"), ("What is 2+3?", "5"))
    rows = [(_ASK + p + _REMIND, g) for p, g in problems]
    frame = pd.DataFrame(
        {
            "data_source": ["math_dapo"] * len(rows),
            "prompt": [_chat(p) for p, _ in rows],
            "reward_model": [{"ground_truth": g, "style": "rule-lighteval/MATH_v2"} for _, g in rows],
        }
    )
    path = tmp_path / "dapo.parquet"
    frame.to_parquet(path)
    return path


def test_dapo_chat_schema_is_loaded_and_deduplicated(dapo_chat: Path) -> None:
    problems = [(p.prompt, p.gold) for p in load_problems(dapo_chat)]
    assert problems == [(_ASK + "What is 2+3?" + _REMIND, "5"), (_ASK + "What is 6*7?" + _REMIND, "42")]
    gym = MathGym(source=str(dapo_chat))
    tasks = gym.tasks("train") + gym.tasks("test")
    assert sorted(t.metadata["gold"] for t in tasks) == ["42", "5"]
    for t in tasks:
        assert t.id.startswith("dapo/")
        assert t.prompt.startswith(_ASK)  # the prompt's own format is kept...
        assert t.reference == f"Answer: {t.metadata['gold']}"  # ...and the reference follows it


def test_dapo_flat_schema(tmp_path: Path) -> None:
    path = tmp_path / "flat.parquet"
    prompts = ["What is 1+1?", "What is 1+1?", " Solve x+1=3. "]
    pd.DataFrame({"prompt": prompts, "solution": ["2", "2", "2"]}).to_parquet(path)
    assert [(p.prompt, p.gold) for p in load_problems(path)] == [("What is 1+1?", "2"), ("Solve x+1=3.", "2")]
    tasks = MathGym(source=str(path)).tasks("train") + MathGym(source=str(path)).tasks("test")
    assert len(tasks) == 2
    assert all("\\boxed{" in t.prompt and t.reference.endswith("\\boxed{2}.") for t in tasks)


def test_dapo_bad_schema_names_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "other.parquet"
    pd.DataFrame({"question": ["What is 1+1?"], "answer": ["2"]}).to_parquet(path)
    with pytest.raises(ValueError, match="found columns answer, question; needed"):
        MathGym(source=str(path)).tasks()


def test_dapo_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="parquet"):
        MathGym(source=str(tmp_path / "missing.parquet")).tasks()


# -- episodes, through the real sandboxed checker ------------------------------------------


def test_reference_passes(gym: MathGym, task: Task) -> None:
    result = gym.open(task).step(task.reference)
    assert (result.outcome, result.reward, result.done) == (Outcome.PASS, 1.0, True)
    assert result.info["answer"] == task.metadata["gold"]
    assert result.info["check_s"] >= 0


def test_wrong_answer_then_retry(gym: MathGym, task: Task) -> None:
    episode = gym.open(task)
    wrong = episode.step(f"\\boxed{{{int(task.metadata['gold']) + 1}}}")
    assert (wrong.outcome, wrong.reward, wrong.done) == (Outcome.FAIL, 0.0, False)
    assert "not correct" in wrong.observation and "try again" in wrong.observation
    assert task.metadata["gold"] not in wrong.observation
    right = episode.step(task.reference)
    assert (right.outcome, right.reward, right.done, right.turn) == (Outcome.PASS, 1.0, True, 2)


def test_turns_run_out(gym: MathGym, task: Task) -> None:
    episode = gym.open(task)
    first, last = episode.step("I don't know."), episode.step("\\boxed{x}")
    assert "\\boxed" in first.observation and not first.done
    assert (last.outcome, last.done, last.turn) == (Outcome.FAIL, True, 2)
    assert "try again" not in last.observation


def test_episode_survives_a_pickle_round_trip(gym: MathGym, task: Task) -> None:
    episode = gym.open(task)
    episode.step("no idea")
    restored = pickle.loads(pickle.dumps(episode))
    result = restored.step(task.reference)
    assert (result.outcome, result.turn) == (Outcome.PASS, 2)


def test_candidates_keep_their_promise(gym: MathGym) -> None:
    for task in gym.tasks():
        for candidate in gym.candidates(task, random.Random(0)):
            if candidate.expect == "timeout":
                continue  # slow on purpose: tested once below
            result = gym.open(task).step(candidate.action)
            assert (result.outcome is Outcome.PASS) == (candidate.expect == "pass"), (task.id, candidate)


def test_timeout_candidate_ends_as_a_fail(gym: MathGym, task: Task) -> None:
    (slow,) = [c for c in gym.candidates(task, random.Random(0)) if c.expect == "timeout"]
    result = gym.open(task).step(slow.action)
    assert (result.outcome, result.reward) == (Outcome.FAIL, 0.0)
    assert "in time" in result.observation
    assert result.info["check_s"] < gym.step_timeout_s


def test_a_checker_that_does_not_answer_in_time_is_a_fail_and_is_replaced(
    gym: MathGym, task: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Shorter than math-verify's own 3 s limit, so the request's CPU budget in the real process ends it.
    gym.open(task).step(task.reference)  # a started checker
    starts = checker().starts
    monkeypatch.setattr(gym_module, "CHECK_CPU_S", 0.5)
    result = gym.open(task).step("\\boxed{9^{9^{9^{9^{9}}}}}")
    assert (result.outcome, result.info["timed_out"]) == (Outcome.FAIL, True)
    assert "in time" in result.observation
    monkeypatch.undo()
    assert gym.open(task).step(task.reference).outcome is Outcome.PASS
    assert checker().starts == starts + 1


def test_every_final_answer_must_be_right(gym: MathGym, task: Task) -> None:
    gold = task.metadata["gold"]
    wrong = str(int(gold) + 1)
    hedged = gym.open(task).step(f"Either \\boxed{{{wrong}}} or \\boxed{{{gold}}}.")
    assert (hedged.outcome, hedged.info["answers"]) == (Outcome.FAIL, [wrong, gold])
    assert "2 different final answers" in hedged.observation
    same = gym.open(task).step(f"\\boxed{{{gold}}}, that is \\boxed{{\\frac{{{2 * int(gold)}}}{{2}}}}.")
    assert same.outcome is Outcome.PASS


@pytest.mark.parametrize(
    ("answer", "feedback"),
    [
        ("\\boxed{{x={wrong} \\lor x={gold}}}", "offers alternatives"),
        ("\\boxed{{x \\not= {gold}}}", "negation"),
        ("\\boxed{{x \\approx {gold}}}", "approximation"),
        ("\\boxed{{{gold}\\%}}", "percentage"),
        ("\\boxed{{\\{{{gold}\\}}}}", "a set"),
        ("\\boxed{{0 + \\boxed{{{gold}}}}}", "box inside"),
        ("\\boxed{{x = {gold}}}", None),  # a variable named with one value passes
    ],
)
def test_the_shape_screen_runs_before_the_checker(gym: MathGym, task: Task, answer: str, feedback: str | None) -> None:
    gold = task.metadata["gold"]
    result = gym.open(task).step(answer.format(gold=gold, wrong=int(gold) + 1))
    if feedback is None:
        assert result.outcome is Outcome.PASS
    else:
        assert result.outcome is Outcome.FAIL and feedback in result.observation, result.observation
        assert "refused" in result.info and "check_s" not in result.info  # the checker never saw it


def _outcome(gym: MathGym, gold: str, answer: str, style: str = "boxed") -> Outcome:
    task = Task(id="t", prompt="?", metadata={"gold": gold, "style": style})
    return gym.open(task).step(answer).outcome


@pytest.mark.parametrize(
    ("answer", "gold", "passes"),
    [
        # an exact gold (no decimals) needs an exact answer: a decimal is the number it writes
        ("0.5", "\\frac{1}{2}", True),
        ("0.50", "\\frac12", True),
        ("2.0", "2", True),
        ("0.5\\pi", "\\frac{\\pi}{2}", True),
        ("0.333", "\\frac{1}{3}", False),
        ("0.333333", "\\frac{1}{3}", False),  # math-verify's 6-place rounding accepted this
        ("3.14", "\\pi", False),
        ("3.141593", "\\pi", False),
        ("1.414214", "\\sqrt{2}", False),
        # a decimal gold: equal when both round to the same 6 decimal places
        ("\\frac{1}{2}", "0.5", True),
        ("6.320988", "6.32098837209", True),
        ("6.32098837209", "6.32098837209", True),
        ("6.32", "6.32098837209", False),
        ("0.5909, 0", "0.0, 0.5909", True),
        ("0.59, 0", "0.0, 0.5909", False),
    ],
)
def test_the_tolerance_policy(gym: MathGym, answer: str, gold: str, passes: bool) -> None:
    assert (_outcome(gym, gold, f"\\boxed{{{answer}}}") is Outcome.PASS) == passes


@pytest.mark.parametrize(
    ("answer", "gold", "passes"),
    [
        ("2(31)", "62", True),
        ("(2)(31)", "62", True),
        ("60(2)", "62", False),  # latex2sympy's mixed-number rule made this 60 + 2
        ("60(2)", "120", True),
        ("\\binom{4}{2}\\binom{3}{1}", "18", True),
        ("60\\frac{4}{2}", "120", True),
        ("2\\frac{6}{4}", "3", True),  # an improper fraction is a factor, not part of a mixed number
        ("2\\frac{1}{2}", "\\frac{5}{2}", True),  # a mixed number as written
        ("2\\frac12", "\\frac{5}{2}", True),
        ("-2\\frac{1}{2}", "-\\frac{5}{2}", True),
        ("2\\frac{1}{2}", "1", False),
        ("2\\sqrt{3}", "2\\sqrt{3}", True),
        ("x^{3} - 2x", "x**3 - 2*x", True),
    ],
)
def test_implied_products_are_products(gym: MathGym, answer: str, gold: str, passes: bool) -> None:
    assert (_outcome(gym, gold, f"\\boxed{{{answer}}}") is Outcome.PASS) == passes


@pytest.mark.parametrize(
    ("answer", "gold", "passes"),
    [
        ("5\\text{ cm}", "5", True),
        ("5 \\text{ square cm}", "5", True),
        ("5", "5\\text{ cm}", True),
        ("5\\,\\mathrm{cm}", "5\\text{ cm}", True),
        ("10\\text{ inch}", "10\\text{ inches}", True),
        ("5\\text{ thousand}", "5\\text{ thousand}", True),
        ("4210_5", "4210_{5}", True),
        ("4210", "4210_{5}", True),
        ("\\text{(C)}", "\\text{(C)}", True),
        ("\\text{Evelyn}", "\\text{Evelyn}", True),
        ("6\\text{ cm}", "5\\text{ cm}", False),
        ("5t", "5", False),  # math-verify took the t for a unit (tonnes) and dropped it
        ("5\\text{ cm} + 3\\text{ cm}", "5", False),  # ...and everything from the first \\text on
        # bare unit words are units, as in \\text{} (before this rule, `5 cm` was 5·c·m)
        ("5 cm", "5", True),
        ("5cm", "5", True),
        ("5\\ \\mathrm{cm}", "5", True),
        ("12 \\text{ dollars}", "12", True),
        ("12 dollars", "12", True),
        ("5 square cm", "5", True),
        ("5 cm", "5\\text{ cm}", True),
        ("5 mm", "5\\text{ cm}", False),
        ("6 cm", "5", False),
        ("5 thousand", "5", False),  # a scale word is no unit
        ("5 thousand", "5000", False),
        ("62 cents", "62", False),  # not on the list: c·e·n·t·s
        # products of variables keep their meaning
        ("2mn", "2mn", True),
        ("2mn", "2", False),
        ("3xy", "3xy", True),
        ("3xy", "3", False),
        ("5m", "5", False),
    ],
)
def test_units_the_screen_accepts_are_not_compared(gym: MathGym, answer: str, gold: str, passes: bool) -> None:
    assert (_outcome(gym, gold, f"\\boxed{{{answer}}}") is Outcome.PASS) == passes


@pytest.mark.parametrize(("reply", "gold"), [("Answer: 5 cm", "5"), ("**Answer:** 12 dollars", "12")])
def test_bare_units_on_an_answer_line(gym: MathGym, reply: str, gold: str) -> None:
    assert _outcome(gym, gold, reply, style="answer") is Outcome.PASS


def test_the_last_final_answer_ends_the_reply(gym: MathGym, task: Task) -> None:
    gold = task.metadata["gold"]
    wrong = str(int(gold) + 1)
    line = gym.open(task).step(f"\\boxed{{{gold}}}\nAnswer: {wrong}")
    assert (line.outcome, line.info["answers"]) == (Outcome.FAIL, [gold, wrong])
    assert "2 different final answers" in line.observation
    prose = gym.open(task).step(f"\\boxed{{{gold}}}. Hmm, no: the answer is {wrong}.")
    assert prose.outcome is Outcome.FAIL and "goes on after its final answer" in prose.observation
    agreeing = gym.open(task).step(f"So \\boxed{{{gold}}}.\n\nAnswer: ${gold}$")
    assert agreeing.outcome is Outcome.PASS
    closing = gym.open(task).step(f"So \\boxed{{{gold}}}.\n\nAnswer: ${gold}$\nI hope it is correct.")
    assert closing.outcome is Outcome.FAIL and "goes on after its final answer" in closing.observation


@pytest.mark.parametrize(
    "reply",
    [
        # restatements passed under the rule before the contract; any text after the final answer fails now
        "\\boxed{{{gold}}}. So the answer is {gold}.",
        "\\boxed{{{gold}}} apples",
        "$\\boxed{{{gold}}}$ ({gold} in all)",
        "\\boxed{{{gold}}}\\text{{ cm}}^2",
        "Answer: {gold}\n\nSo {gold}.",
        # another value
        "\\boxed{{{gold}}}. So the answer is {wrong}.",
        "\\boxed{{{gold}}}. So the answer is -{gold}.",
        "\\boxed{{{gold}}}^2",
        "\\boxed{{{gold}}} \\cdot {gold}",
        "\\boxed{{{gold}}}. So {gold} thousand.",
        "\\boxed{{{gold}}} {gold}",
        "$\\boxed{{{gold}}}\\%$",
        "$\\boxed{{{gold}}}$\u00bd",
    ],
)
def test_anything_after_the_final_answer_fails(gym: MathGym, task: Task, reply: str) -> None:
    gold = task.metadata["gold"]
    result = gym.open(task).step(reply.format(gold=gold, wrong=int(gold) + 1))
    assert result.outcome is Outcome.FAIL and "goes on after its final answer" in result.observation


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        # thousands separators, in every notation people use (not a bare ASCII space)
        ("2\\,646", "2646"),
        ("2{,}646", "2646"),
        ("2,646", "2646"),
        ("2\u2009646", "2646"),
        ("2\u202f646", "2646"),
        ("1\\,234\\,567", "1234567"),
        ("2646", "2{,}646"),
        ("-2\\,646.5", "-2646.5"),
        # the degree sign is `^\circ`
        ("30°", "30^\\circ"),
        ("30^\\circ", "30°"),
        ("30", "30^\\circ"),
        # digits whose NFKC form is ASCII
        ("\uff13", "3"),
        ("\U0001d7d1\U0001d7d0", "32"),
        # units on the list, inside the box; a gold's own words
        ("5\\text{ cm}", "5"),
        ("3\\text{ apples}", "3\\text{ apples}"),
        ("\\text{Monday}", "\\text{Monday}"),
    ],
)
def test_notations_of_the_right_value_pass(gym: MathGym, answer: str, gold: str) -> None:
    assert _outcome(gym, gold, f"The answer is $\\boxed{{{answer}}}$.") is Outcome.PASS


@pytest.mark.parametrize(
    ("reply", "gold", "feedback"),
    [
        ("\\boxed{2 646}", "2646", "several values"),  # an ASCII space separates two numbers
        ("\\boxed{2,64}", "264", None),  # not a thousands group: a list, refused or wrong
        ("\\boxed{3\\text{ factorial}}", "3", "“factorial”"),  # a \text word is never dropped unread
        ("\\boxed{3\\text{ apples}}", "3", "“apple”"),
        ("\\boxed{3 apples}", "3", "“apple”"),
        ("Answer: 3 apples", "3", "“apple”"),  # decided: a count noun is not a unit; write the value
        ("\\boxed{3\\text{ dozen}}", "3", "scales a number"),
        ("\\boxed{62 cents}", "62", "“cent”"),
    ],
)
def test_words_and_other_notations_fail(gym: MathGym, reply: str, gold: str, feedback: str | None) -> None:
    style = "answer" if reply.startswith("Answer") else "boxed"
    episode = gym.open(Task(id="t", prompt="?", metadata={"gold": gold, "style": style}))
    result = episode.step(reply)
    assert result.outcome is Outcome.FAIL
    assert feedback is None or feedback in result.observation, result.observation


@pytest.mark.parametrize(
    "reply",
    [
        "Work.\r\n\\boxed{{{gold}}}\r\n",
        "\ufeffThe answer is \\boxed{{{gold}}}",
        "```\nThe answer is \\boxed{{{gold}}}\n```",
        "\\boxed{{{gold}}}   \t\n\n",
        "Work.\r\nAnswer: {gold}\r\n",
        "\ufeffAnswer: {gold}",
        "```text\nAnswer: {gold}\n```",
        "Answer: {gold}```",
        "Answer: `{gold}`  \n",
    ],
)
def test_correct_answers_pass_in_common_shapes(gym: MathGym, task: Task, reply: str) -> None:
    result = gym.open(task).step(reply.format(gold=task.metadata["gold"]))
    assert result.outcome is Outcome.PASS, result.observation


def test_the_hang_candidate_hangs_for_a_gold_of_several_values(gym: MathGym) -> None:
    # A lone tower against these roots failed in 0.4 s, unchecked: sets of different sizes.
    roots = Task(id="roots", prompt="?", metadata={"gold": "-3.625, 0.0", "style": "boxed"})
    (slow,) = [c for c in gym.candidates(roots, random.Random(0)) if c.expect == "timeout"]
    result = gym.open(roots).step(slow.action)
    assert (result.outcome, result.info["timed_out"]) == (Outcome.FAIL, True)


def test_an_answer_that_makes_the_libraries_raise_is_a_fail(gym: MathGym, task: Task) -> None:
    # sympy evaluates the binomial to a 6000-digit integer, which str() refuses to print.
    result = gym.open(task).step("\\boxed{\\binom{20000}{10000}}")
    assert (result.outcome, result.reward) == (Outcome.FAIL, 0.0)
    assert result.observation.startswith("That answer is not correct.")


def test_the_checker_refuses_to_start_without_the_private_method_it_overrides() -> None:
    """verifier.py replaces latex2sympy2_extended's private _Latex2Sympy.convert_postfix_list:
    without it the checker fails at import, naming the pin, rather than grade otherwise."""
    import subprocess
    import sys

    code = (
        "from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy\n"
        "del _Latex2Sympy.convert_postfix_list\n"
        "import runpy\n"
        f"runpy.run_path({str(gym_module.VERIFIER)!r})\n"
    )
    run = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "RuntimeError" in run.stderr and "latex2sympy2_extended==1.11.0" in run.stderr, run.stderr


def test_the_latex2sympy_pin_is_the_installed_version() -> None:
    from importlib.metadata import version

    from gyms.math import verifier

    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert f'"{verifier._LATEX2SYMPY_PIN}"' in pyproject
    assert verifier._LATEX2SYMPY_PIN == f"latex2sympy2_extended=={version('latex2sympy2_extended')}"


def test_the_checker_reads_only_answer_lists() -> None:
    reply = checker().request({"answer": "1", "gold": "1"}, 60)
    assert reply["ok"] is False and "answers" in reply["error"]
    assert checker().request({"answers": ["1", "\\frac{2}{2}"], "gold": "1"}, 60)["correct"] is True
    assert checker().request({"answers": ["1", "2"], "gold": "1"}, 60)["correct"] is False
    assert checker().request({"answers": [], "gold": "1"}, 60)["correct"] is False


def test_dapo_answer_line_is_checked(dapo_chat: Path) -> None:
    gym = MathGym(source=str(dapo_chat), max_turns=1)
    for task in gym.tasks("train") + gym.tasks("test"):
        right = gym.open(task).step(f"Some reasoning.\n**Answer:** {task.metadata['gold']}")
        assert right.outcome is Outcome.PASS
        result = gym.open(task).step("Answer: 7")
        assert (result.outcome, result.done) == (Outcome.FAIL, True)


def test_a_bad_gold_answer_is_an_infrastructure_error(gym: MathGym) -> None:
    broken = Task(id="broken", prompt="?", metadata={"gold": ""})
    result = gym.open(broken).step("\\boxed{1}")
    assert (result.outcome, result.done) == (Outcome.ERROR, True)
    assert "could not be parsed" in result.info["error"]


def test_one_checker_serves_every_episode(gym: MathGym, task: Task) -> None:
    gym.open(task).step(task.reference)
    starts = checker().starts
    for _ in range(3):
        gym.open(task).step(task.reference)
    assert checker().starts == starts


def test_episode_steps_in_a_gym_pool_worker(gym: MathGym, task: Task) -> None:
    with GymPool(workers=1, step_timeout_s=gym.step_timeout_s) as pool:
        call = pool.step(gym.open(task), task.reference)
    assert (call.result.outcome, call.result.reward) == (Outcome.PASS, 1.0)


def test_the_gym_passes_the_conformance_check() -> None:
    report = check_gym(MathGym(size=4), limit=2, workers=2)
    assert report.ok, report.violations
    assert not report.notes  # the huge-power candidate exercised the timeout
