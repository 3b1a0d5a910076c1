"""`harness gyms step`: one episode stepped with answers from files, run as a user runs it."""

from __future__ import annotations

import json

from conftest import harness, with_path

from harness.errors import FAILED

TASK = "rg/basic_arithmetic/0000"  # -1515 / 5 + -( -2842 * -5436 ) * -6892


def test_two_answers_are_two_turns_of_one_episode(tmp_path) -> None:
    wrong, right = tmp_path / "wrong.txt", tmp_path / "right.txt"
    wrong.write_text("So the answer is \\boxed{7}.")
    right.write_text("The answer is \\boxed{106475279601}.")
    done = harness("gyms", "step", "math", "--task", TASK, "--answer-file", str(wrong), "--answer-file", str(right),
                   "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["steps"]
    assert [(s["turn"], s["outcome"], s["reward"], s["answer_file"]) for s in steps] == [
        (1, "fail", 0.0, str(wrong)), (2, "pass", 1.0, str(right))]  # fmt: skip
    assert steps[0]["feedback"] and not steps[0]["terminated"] and steps[1]["terminated"]
    shown = harness("gyms", "step", "math", "--task", TASK, "--answer-file", str(right))
    assert shown.returncode == 0 and "turn 1" in shown.stdout and "pass" in shown.stdout


def test_answers_after_the_end_are_listed_unstepped_and_stdin_is_an_answer(tmp_path) -> None:
    right = tmp_path / "right.txt"
    right.write_text("\\boxed{106475279601}")
    done = harness("gyms", "step", "math", "--task", TASK, "--answer-file", "-", "--answer-file", str(right), "--json",
                   stdin="\\boxed{106475279601}")  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert [s["outcome"] for s in shown["steps"]] == ["pass"] and shown["unstepped"] == [str(right)]


def test_an_answer_that_makes_the_gym_raise_shows_the_recorded_exception(tmp_path) -> None:
    answer = tmp_path / "raise.txt"
    answer.write_text("raise")
    done = harness("gyms", "step", "toy_gyms:ToyGym", "--task", "toy/0", "--answer-file", str(answer), "--json",
                   env=with_path())  # fmt: skip
    assert done.returncode == 0, done.stderr
    (step,) = json.loads(done.stdout)["steps"]
    assert step["outcome"] == "fail" and "RuntimeError: a bug in the gym" in step["info"]["gym_exception"]


def test_an_unknown_task_or_an_unreadable_file_is_one_line(tmp_path) -> None:
    answer = tmp_path / "a.txt"
    answer.write_text("\\boxed{1}")
    unknown = harness("gyms", "step", "math", "--task", "basic_arithmetic/9999", "--answer-file", str(answer))
    assert unknown.returncode == FAILED and len(unknown.stderr.strip().splitlines()) == 1
    assert "no task 'basic_arithmetic/9999'" in unknown.stderr and "similar: rg/basic_arithmetic/" in unknown.stderr
    missing = harness("gyms", "step", "math", "--task", TASK, "--answer-file", str(tmp_path / "nope.txt"))
    assert missing.returncode == FAILED and len(missing.stderr.strip().splitlines()) == 1
    assert f"answer file {tmp_path / 'nope.txt'}: No such file or directory" in missing.stderr

