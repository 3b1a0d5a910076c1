"""`harness gyms step`: one episode of one task, stepped with answers from files, in a real pool
worker (the sandbox, limits and timeouts a training run uses). For gym authors trying an answer,
and for red-teamers trying a cheat."""

from __future__ import annotations

import difflib
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gyms.base import Gym, Task
from gyms.pool import GymPool

# An answer file is read up to this much: the gym refuses far less (`Episode.max_answer_bytes`)
# with feedback of its own, and a larger file is more likely a wrong path than an answer.
MAX_FILE_BYTES = 16 * 2**20


class StepInputError(ValueError):
    """A task id or an answer file that cannot be used; the message names the fix."""


@dataclass(frozen=True)
class SteppedTurn:
    turn: int
    answer_file: str
    outcome: str
    reward: float
    terminated: bool
    truncated: bool
    stage: str | None
    feedback: str
    info: Mapping[str, Any]
    service_s: float


def find_task(gym: Gym, task_id: str, split: str) -> Task:
    tasks = {task.id: task for task in gym.tasks(split)}
    if task_id in tasks:
        return tasks[task_id]
    similar = difflib.get_close_matches(task_id, list(tasks), n=5, cutoff=0.6)
    shown = f"similar: {', '.join(similar)}" if similar else f"for example: {', '.join(list(tasks)[:5])}"
    raise StepInputError(f"gym {gym.name} has no task {task_id!r} in split {split!r} ({len(tasks)} tasks); {shown}")


def read_answer(path: str) -> str:
    """The text of an answer file (`-`: standard input), as the model's answer: UTF-8, with any
    byte that is not replaced, as a tokenizer's decode would. Only a regular file is read, at
    most MAX_FILE_BYTES of it: a FIFO, device or socket could block or never end."""
    fix = "name a readable file (or - for stdin)"
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            _regular(path, os.stat(path).st_mode, fix)  # before open(): opening a FIFO blocks until a writer comes
            # O_NONBLOCK: a path swapped for a FIFO after the stat still opens at once, and fstat refuses it.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with open(fd, "rb") as file:
                _regular(path, os.fstat(fd).st_mode, fix)
                data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise StepInputError(f"answer file {path}: {exc.strerror or exc}; {fix}") from None
    if len(data) > MAX_FILE_BYTES:
        raise StepInputError(f"answer file {path} is over {MAX_FILE_BYTES // 2**20} MB: is it the answer?")
    return data.decode("utf-8", errors="replace")


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def _regular(path: str, mode: int, fix: str) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise StepInputError(f"answer file {path} is {kind}, not a regular file; {fix}")


def step_answers(gym: Gym, task: Task, answer_files: Sequence[str]) -> tuple[list[SteppedTurn], list[str]]:
    """Step one episode of `task` with each file's answer in turn, in a one-worker pool; the
    files left when the episode ended (a pass, an error, or its last turn) are returned unstepped."""
    answers = [(path, read_answer(path)) for path in answer_files]  # every file read before any step
    turns: list[SteppedTurn] = []
    with GymPool(1, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:
        episode = gym.open(task)
        for number, (path, answer) in enumerate(answers):
            if episode.done:
                return turns, [p for p, _ in answers[number:]]
            call = pool.step(episode, answer)
            episode, result = call.episode, call.result
            turns.append(SteppedTurn(
                turn=result.turn, answer_file=path, outcome=result.outcome.value, reward=result.reward,
                terminated=result.terminated, truncated=result.truncated, stage=result.info.get("stage"),
                feedback=result.observation, info=dict(result.info), service_s=round(call.service_s, 3),
            ))  # fmt: skip
        pool.close_episode(episode)
    return turns, []
