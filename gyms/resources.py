"""Per-process resources of a gym: a warm checker, a simulator runner, a probed sandbox.

A gym worker steps many episodes, and an episode is pickled to whichever worker runs its
turn, so what is slow to start lives with the process, not in the episode. `per_process(key,
make)` is the one way gyms keep such a thing:

* made on first use in each process, and shared by every episode that process steps;
* never shared across a fork: a child (a limited pre-check, a test's subprocess) makes its own
  and never uses or closes its parent's;
* made again when it says it is closed (its `closed` attribute is true): a checker that a
  caller shut down is replaced, never handed out dead;
* closed (its `close()`, where it has one) when the process ends: at exit in a main process,
  and in gym pool workers too, which multiprocessing ends with `os._exit` after running its
  finalizers. A worker that is killed outright runs nothing: the pool kills the sandboxes and
  removes the work directories it left (`gyms.pool`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from multiprocessing import util
from typing import Any, TypeVar

T = TypeVar("T")

_made: dict[tuple[int, Hashable], Any] = {}


def per_process(key: Hashable, make: Callable[[], T]) -> T:
    """This process's resource for `key` (include whatever configures it), made by `make()`."""
    slot = (os.getpid(), key)
    found = _made.get(slot)
    if found is None or getattr(found, "closed", False):
        found = _made[slot] = make()
        if callable(getattr(found, "close", None)):
            # exitpriority: run by multiprocessing's exit handler, in workers and at exit alike.
            util.Finalize(None, found.close, exitpriority=10)
    return found
