"""gyms.resources.per_process: one resource per process and key, never across a fork, made
again once closed, and closed when a worker process ends."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

from gyms.resources import per_process


class Resource:
    def __init__(self, closed_mark: Path | None = None) -> None:
        self.closed = False
        self.pid = os.getpid()
        self.closed_mark = closed_mark

    def close(self) -> None:
        self.closed = True
        if self.closed_mark is not None:
            self.closed_mark.write_text(str(os.getpid()))


def test_one_resource_per_key_made_again_once_closed() -> None:
    first = per_process(("test", 1), Resource)
    assert per_process(("test", 1), Resource) is first
    assert per_process(("test", 2), Resource) is not first
    first.close()
    again = per_process(("test", 1), Resource)
    assert again is not first and not again.closed


def _in_child(key: tuple[str, int], conn) -> None:  # type: ignore[no-untyped-def]
    conn.send(per_process(key, Resource).pid)


def test_a_forked_child_makes_its_own_and_leaves_its_parents_open(tmp_path: Path) -> None:
    mark = tmp_path / "closed"
    parent = per_process(("test", 3), lambda: Resource(mark))
    receive, send = mp.get_context("fork").Pipe()
    child = mp.get_context("fork").Process(target=_in_child, args=(("test", 3), send))
    child.start()
    made_in = receive.recv()
    child.join()
    assert made_in == child.pid != parent.pid
    assert not mark.exists()  # the child's exit closed its own resource only


def _hold(mark: Path) -> None:
    per_process(("test", 4), lambda: Resource(mark))


def test_a_worker_process_closes_its_resources_when_it_ends(tmp_path: Path) -> None:
    # Spawned as gym pool workers are; multiprocessing ends them with os._exit, past atexit.
    mark = tmp_path / "closed"
    worker = mp.get_context("spawn").Process(target=_hold, args=(mark,))
    worker.start()
    worker.join()
    assert worker.exitcode == 0 and mark.read_text() == str(worker.pid)
