"""`harness gyms step`: one episode stepped with answers from files, run as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

from conftest import harness, with_path

from harness.errors import FAILED
from harness.gymstep import read_answer

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



def test_only_a_regular_file_is_read_and_nothing_hangs(tmp_path) -> None:
    """A FIFO with no writer would block open() forever, /dev/zero never ends, a socket cannot be
    read as a file: each is one line and exit 2, at once (the subprocess's timeout fails a hang)."""
    fifo = tmp_path / "answer.fifo"
    os.mkfifo(fifo)
    folder = Path(tempfile.mkdtemp(prefix="hg-", dir="/tmp"))  # a socket's path must be short
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(folder / "s"))
    try:
        for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a character device"),
                           (folder / "s", "a socket"), (tmp_path, "a directory")):  # fmt: skip
            done = harness("gyms", "step", "math", "--task", TASK, "--answer-file", str(path), timeout=60)
            assert done.returncode == FAILED and len(done.stderr.strip().splitlines()) == 1, done.stderr
            assert f"answer file {path} is {kind}, not a regular file" in done.stderr
    finally:
        listening.close()
        shutil.rmtree(folder)


def test_a_link_to_a_regular_file_is_read(tmp_path) -> None:
    answer, link = tmp_path / "a.txt", tmp_path / "link.txt"
    answer.write_text("\\boxed{1}")
    link.symlink_to(answer)
    assert read_answer(str(link)) == "\\boxed{1}"
