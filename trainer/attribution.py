"""Wait attribution: what the trainer was waiting on during each step's `train_wait`.

Each step's wait is split into five parts that sum to it (up to float rounding):

    generation   the critical episode's request for its next turn, from asking to its answer:
                 the engine generating it, or busy with other requests while it waits
    gym_queue    the critical episode's answer waiting for a free gym worker (submit -> start)
    gym_service  a gym worker checking the critical episode's answer (start -> finish)
    weight_sync  weight-sync spans (kinds in WEIGHT_SYNC_KINDS, any resource) inside the wait
    other        the rest: admission, the group not yet started, bookkeeping, the trainer waking

The definition, for step s with train_wait span [a, b] on resource "trainer":

1. The critical group is the group that released the batch: among the `group` spans (start to
   put into the ready buffer) whose version v satisfies s - max_staleness <= v <= s (the ones
   the trainer may take at step s) and whose put time is at most b, the one put last. The
   buffer hands groups out in put order, so the last one put before b is the batch's last
   member; a group put within the few microseconds between that put and the trainer waking
   would be taken for it instead (the chains of both end within those microseconds).
2. Episodes run on their own (trainer/rollout.py: no barrier between them), so the group's
   put waits for its last episode alone: the critical episode is the sample whose last
   `gym_step` finished last. Its chain, turn by turn: its `generate_request` span
   (generation), its `gym_queue` span (gym_queue) and its `gym_step` span (gym_service).
3. Every instant of [a, b] covered by the chain takes the chain's part. An instant of [a, b]
   not covered by it (a gap) is weight_sync if a weight-sync span covers it, else other: the
   time before the critical group started, between a gym step and the episode's next request,
   and after its last step (advantages, the put, the trainer waking), as is all of [a, b] when
   no critical group is found (a timeline without group spans). A request's wait for an engine
   busy with other requests is inside its `generate_request` span, so it is generation.

In the pipeline as it is, weight sync is the trainer's own `update_weights`, which never
overlaps its `train_wait`, so weight_sync is 0 unless a policy records weight-sync spans on
another resource (an engine loading weights while the trainer waits).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from trainer.timeline import Span

PARTS = ("generation", "gym_queue", "gym_service", "weight_sync", "other")
WEIGHT_SYNC_KINDS = frozenset({"update_weights", "weight_sync"})


CHAIN_PARTS = {"generate_request": "generation", "gym_queue": "gym_queue", "gym_step": "gym_service"}


def chain(spans: Iterable[Span]) -> list[tuple[str, Span]]:
    """The critical path of one group, given its spans: (part, span) for its critical episode
    (the sample whose gym step finished last), turn by turn: request, queue wait, service."""
    mine = [s for s in spans if s.kind in CHAIN_PARTS]
    steps = [s for s in mine if s.kind == "gym_step"]
    if not steps:
        return []
    critical = max(steps, key=lambda s: (s.end, s.sample or 0)).sample
    order = list(CHAIN_PARTS)
    path = sorted((s for s in mine if s.sample == critical), key=lambda s: (s.turn or 0, order.index(s.kind)))
    return [(CHAIN_PARTS[s.kind], s) for s in path]


def critical_group(groups: Iterable[Span], step: int, released: float, max_staleness: int) -> Span | None:
    """The `group` span put last at or before `released` among those step `step` may train on."""
    fit = [g for g in groups if step - max_staleness <= g.version <= step and g.end <= released]
    return max(fit, key=lambda g: (g.end, g.group or 0), default=None)


class _Intervals:
    """Spans of some kinds, sorted by start, for 'which of them overlap [a, b]' in O(log n + k)."""

    def __init__(self, spans: Iterable[Span]) -> None:
        self.spans = sorted(spans, key=lambda s: s.start)
        self.starts = [s.start for s in self.spans]
        self.longest = max((s.duration for s in self.spans), default=0.0)

    def within(self, a: float, b: float) -> list[tuple[float, float]]:
        lo = bisect.bisect_left(self.starts, a - self.longest)
        hi = bisect.bisect_left(self.starts, b)
        return [(s.start, s.end) for s in self.spans[lo:hi] if s.end > a]


def split_waits(spans: Sequence[Span], steps: Sequence[int], max_staleness: int) -> list[dict[str, float]] | None:
    """{"step": n, part: seconds, ...} for each of `steps`, from its train_wait span (the module
    docstring defines the parts); None when a step has no train_wait span (a simulated run's
    timeline holds aggregate spans only)."""
    waits = {s.version: s for s in spans if s.resource == "trainer" and s.kind == "train_wait"}
    if any(n not in waits for n in steps):
        return None
    groups = [s for s in spans if s.kind == "group"]
    by_group: dict[int, list[Span]] = {}
    for s in spans:
        if s.group is not None and s.kind in CHAIN_PARTS:
            by_group.setdefault(s.group, []).append(s)
    syncing = _Intervals(s for s in spans if s.kind in WEIGHT_SYNC_KINDS)
    result = []
    for n in steps:
        wait = waits[n]
        group = critical_group(groups, n, wait.end, max_staleness)
        path = chain(by_group.get(group.group, [])) if group is not None and group.group is not None else []
        parts = _split(wait.start, wait.end, path, syncing)
        result.append({"step": n, **parts})
    return result


def _split(a: float, b: float, path: list[tuple[str, Span]], syncing: _Intervals) -> dict[str, float]:
    parts = dict.fromkeys(PARTS, 0.0)
    if b <= a:
        return parts
    on_path = [(part, s.start, s.end) for part, s in path if s.end > a and s.start < b]
    sync = syncing.within(a, b)
    cuts = {a, b}
    for lo, hi in [*((lo, hi) for _, lo, hi in on_path), *sync]:
        cuts.update(x for x in (lo, hi) if a < x < b)
    points = sorted(cuts)
    for lo, hi in zip(points, points[1:]):
        mid = (lo + hi) / 2
        part = next((p for p, s, e in on_path if s <= mid < e), None)
        if part is None:
            part = "weight_sync" if any(s <= mid < e for s, e in sync) else "other"
        parts[part] += hi - lo
    return parts


def mean_split(per_step: Sequence[dict[str, float]]) -> dict[str, float]:
    """Mean seconds per step of each part."""
    n = max(len(per_step), 1)
    return {p: sum(s[p] for s in per_step) / n for p in PARTS}


def gym_share(per_step: Sequence[dict[str, float]]) -> float | None:
    """(gym_queue + gym_service) / total wait over `per_step`; None when they waited 0 s."""
    total = sum(s[p] for s in per_step for p in PARTS)
    return sum(s["gym_queue"] + s["gym_service"] for s in per_step) / total if total > 0 else None
