"""Wait attribution (trainer/attribution.py): what the trainer waited on, on hand-built timelines
whose answers are known exactly, and on one short real run."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from rich.console import Console

from harness.benchmark import BenchmarkSpec, run_benchmark
from harness.console import benchmark_table
from harness.figures import FIGURES
from harness.report import write_report
from harness.rundir import load_run
from trainer.attribution import PARTS, gym_share, mean_split, split_waits
from trainer.timeline import Span


def wait(step: int, a: float, b: float) -> Span:
    return Span("trainer", "train_wait", a, b, step)


def group(g: int, start: float, put: float, version: int = 0) -> Span:
    return Span("groups", "group", start, put, version, group=g)


def request(g: int, sample: int, turn: int, start: float, end: float, version: int = 0) -> Span:
    """An episode's request for its turn: from asking to the answer, the wait for the engine included."""
    return Span("generate-requests", "generate_request", start, end, version, group=g, sample=sample, turn=turn)


def engine(start: float, end: float) -> Span:
    """One engine call: it may serve several groups' requests, so it names none."""
    return Span("rollout", "generate", start, end, 0)


def gym(g: int, sample: int, turn: int, submit: float, start: float, end: float, worker: int = 0) -> list[Span]:
    """A gym call: its queue wait (submit to start) and its service (start to finish)."""
    return [
        Span("gym-queue", "gym_queue", submit, start, 0, group=g, sample=sample, turn=turn),
        Span(f"gym-{worker}", "gym_step", start, end, 0, group=g, sample=sample, turn=turn),
    ]


def split(spans: list[Span], step: int = 0, max_staleness: int = 0) -> dict[str, float]:
    [result] = split_waits(spans, [step], max_staleness)
    assert result["step"] == step
    return {p: result[p] for p in PARTS}


def expect(got: dict[str, float], **parts: float) -> None:
    assert got == pytest.approx({p: parts.get(p, 0.0) for p in PARTS}, abs=1e-9)


def total(parts: dict[str, float]) -> float:
    return sum(parts[p] for p in PARTS)


def test_gym_bound_step_is_mostly_gym_service():
    spans = [wait(0, 0.0, 10.0), group(0, 0.0, 9.6), engine(0.0, 1.0), request(0, 0, 1, 0.0, 1.0),
             request(0, 1, 1, 0.0, 1.0), *gym(0, 0, 1, 1.0, 1.0, 3.0),
             *gym(0, 1, 1, 1.0, 1.0, 9.5, worker=1)]  # fmt: skip
    got = split(spans)
    # the slower sample holds the group: its 8.5 s of service; 0.1 s advantages + put, 0.4 s waking
    expect(got, generation=1.0, gym_service=8.5, other=0.5)
    assert got["gym_service"] / total(got) > 0.8


def test_generation_bound_step_counts_the_wait_for_a_busy_engine_as_generation():
    # group 1 (the batch's last) starts at 0.5 and asks at once; the engine is busy with group 0
    # until 2, then generates group 1's answer until 5: its request spans both
    spans = [wait(0, 0.0, 5.4), group(0, 0.0, 2.2), engine(0.0, 2.0), request(0, 0, 1, 0.0, 2.0),
             *gym(0, 0, 1, 2.0, 2.0, 2.1), group(1, 0.5, 5.3), engine(2.0, 5.0), request(1, 0, 1, 0.5, 5.0),
             *gym(1, 0, 1, 5.0, 5.0, 5.2, worker=1)]  # fmt: skip
    got = split(spans)
    # before group 1 started the engine was busy too, but that is admission: other
    expect(got, generation=1.5 + 3.0, gym_service=0.2, other=0.5 + 0.1 + 0.1)
    assert got["generation"] / total(got) > 0.8


def test_scarce_workers_show_as_gym_queue():
    # one worker, three answers submitted together: the last one queues behind the other two
    spans = [wait(0, 0.0, 4.0), group(0, 0.0, 4.0), *(request(0, s, 1, 0.0, 1.0) for s in range(3)),
             *gym(0, 0, 1, 1.0, 1.0, 2.0), *gym(0, 1, 1, 1.0, 2.0, 3.0), *gym(0, 2, 1, 1.0, 3.0, 4.0)]  # fmt: skip
    expect(split(spans), generation=1.0, gym_queue=2.0, gym_service=1.0)


def test_the_chain_is_the_episode_that_ended_last_turn_by_turn():
    # episodes stream: each asks for its next turn when its own step returns, so the put waits
    # for the last episode alone, whatever the others did in any turn
    spans = [
        wait(0, 0.0, 6.3), group(0, 0.0, 6.2),
        request(0, 0, 1, 0.0, 1.0), *gym(0, 0, 1, 1.0, 1.0, 2.0),  # passes
        request(0, 1, 1, 0.0, 1.0), *gym(0, 1, 1, 1.0, 1.5, 2.5, worker=1),  # queued 0.5 s, goes on
        request(0, 1, 2, 2.6, 3.4), *gym(0, 1, 2, 3.4, 3.4, 6.0, worker=1),  # ends last: the critical episode
        request(0, 2, 1, 0.0, 1.0), *gym(0, 2, 1, 1.0, 1.0, 3.0, worker=2),  # turn 1's slowest, yet off the path
        request(0, 2, 2, 3.0, 4.0), *gym(0, 2, 2, 4.0, 4.5, 4.8, worker=2),
    ]  # fmt: skip
    expect(split(spans), generation=1.0 + 0.8, gym_queue=0.5, gym_service=1.0 + 2.6, other=0.1 + 0.3)


def test_the_chain_is_clipped_to_the_wait_window():
    # async: the critical group started long before the trainer began to wait
    spans = [wait(3, 10.0, 12.5), group(7, 4.0, 12.2, version=2), request(7, 0, 1, 4.0, 5.0, version=2),
             *gym(7, 0, 1, 5.0, 6.0, 12.0)]  # fmt: skip
    expect(split(spans, step=3, max_staleness=1), gym_service=2.0, other=0.5)


def test_the_critical_group_is_the_last_put_the_step_may_train_on():
    spans = [
        wait(3, 0.0, 10.0),
        group(1, 0.0, 9.0, version=1), request(1, 0, 1, 0.0, 9.0, version=1),  # too stale for step 3: dropped
        group(2, 0.0, 8.0, version=2), *gym(2, 0, 1, 0.0, 0.0, 8.0),  # the one that released the batch
        group(3, 0.0, 11.0, version=3), request(3, 0, 1, 0.0, 11.0, version=3),  # put after the wait ended
    ]  # fmt: skip
    # group 2's chain is all gym; other groups' requests meanwhile do not count: the critical
    # group was not waiting for them
    expect(split(spans, step=3, max_staleness=1), gym_service=8.0, other=2.0)


def test_weight_sync_spans_in_a_gap_are_weight_sync():
    spans = [wait(0, 0.0, 4.0), group(0, 0.0, 3.9), Span("rollout", "weight_sync", 0.0, 1.0, 0),
             request(0, 0, 1, 1.0, 2.0), *gym(0, 0, 1, 2.0, 2.0, 3.9)]  # fmt: skip
    expect(split(spans), weight_sync=1.0, generation=1.0, gym_service=1.9, other=0.1)


def test_a_timeline_without_group_spans_is_all_other_and_one_without_waits_has_no_split():
    old = [wait(0, 0.0, 2.0), Span("rollout", "generate", 0.0, 1.0, 0), Span("gym-0", "gym_step", 1.0, 2.0, 0)]
    expect(split(old), other=2.0)
    assert split_waits([Span("rollout", "generate", 0.0, 1.0, 0)], [0], 0) is None  # a simulated timeline


def test_parts_sum_to_train_wait_on_random_timelines():
    rng = random.Random(7)
    for _ in range(200):
        spans, steps = [], []
        t = 0.0
        for step in range(4):
            a = t
            groups = rng.randint(1, 3)
            for g in range(groups):
                gid = step * 10 + g
                start = a - rng.uniform(0, 2)  # may start before the wait
                ends = []
                for sample in range(rng.randint(1, 3)):  # episodes run on their own
                    cursor = start + rng.uniform(0, 0.3)
                    for turn in (1, 2)[: rng.randint(1, 2)]:
                        answered = cursor + rng.uniform(0, 1)
                        spans.append(request(gid, sample, turn, cursor, answered, version=step))
                        begin = answered + rng.uniform(0, 0.5)
                        finish = begin + rng.uniform(0, 2)
                        spans += gym(gid, sample, turn, answered, begin, finish, worker=sample)
                        cursor = finish + rng.uniform(0, 0.1)
                    ends.append(cursor)
                put = max(ends) + rng.uniform(0, 0.1)
                spans.append(group(gid, start, put, version=step))
                t = max(t, put)
            if rng.random() < 0.3:
                spans.append(Span("rollout", "weight_sync", a, a + rng.uniform(0, 1), step))
            b = max(t, a) + rng.uniform(0, 0.2)
            spans.append(wait(step, a, b))
            steps.append((step, b - a))
            t = b + rng.uniform(0, 1)
        per_step = split_waits(spans, [s for s, _ in steps], 0)
        for row, (step, duration) in zip(per_step, steps):
            assert row["step"] == step
            assert all(row[p] >= 0 for p in PARTS)
            assert total(row) == pytest.approx(duration, abs=1e-9)


def test_mean_and_gym_share():
    rows = [dict.fromkeys(PARTS, 0.0) | {"gym_queue": 1.0, "other": 1.0}, dict.fromkeys(PARTS, 0.0) | {"generation": 2.0}]
    assert mean_split(rows) == {"generation": 1.0, "gym_queue": 0.5, "gym_service": 0.0, "weight_sync": 0.0,
                                "other": 0.5}  # fmt: skip
    assert gym_share(rows) == pytest.approx(0.25)
    assert gym_share([dict.fromkeys(PARTS, 0.0)]) is None


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A short real benchmark: the math gym, the replay policy with zero-cost emulated stages."""
    root = tmp_path_factory.mktemp("results")
    spec = BenchmarkSpec(gym="math", gym_options={}, steps=3, batch_groups=2, group_size=2, profile="zero",
                         gym_workers=2)  # fmt: skip
    return run_benchmark(spec, root)


def test_a_real_run_reports_the_split_and_it_sums_to_train_wait(real_run):
    summary, run_dir = real_run
    waits: dict[str, list[float]] = {}
    for row in csv.DictReader((run_dir / "steps.csv").open()):
        waits.setdefault(row["mode"], []).append(float(row["train_wait"]))
    for mode in ("sync", "async"):
        figures = summary["modes"][mode]
        per_step = figures["wait_split_per_step"]
        assert [row["step"] for row in per_step] == [0, 1, 2]
        for row, train_wait in zip(per_step, waits[mode]):
            assert set(row) == {"step", *PARTS}
            assert total(row) == pytest.approx(train_wait, rel=1e-6, abs=1e-9)
        assert set(figures["wait_split"]) == set(PARTS)
        assert total(figures["wait_split"]) == pytest.approx(figures["train_wait_mean"], rel=1e-6, abs=1e-9)
        share = figures["gym_wait_share"]
        measured = per_step[1:]
        expected = sum(r["gym_queue"] + r["gym_service"] for r in measured) / sum(map(total, measured))
        assert share == pytest.approx(expected) and 0 <= share <= 1
        # every gym step of the run is real work: the trainer waited on the gym for some of it
        assert figures["wait_split"]["gym_service"] > 0
    records = [json.loads(line) for line in (run_dir / "timeline.jsonl").open()]
    queued = [r for r in records if r["kind"] == "gym_queue"]
    assert queued and all({"group", "sample", "turn"} <= set(r) for r in queued)
    assert all("sample" not in r for r in records if r["kind"] == "train_wait")  # None fields are left out
    assert {r["group"] for r in records if r["kind"] == "group"}


def test_the_real_run_s_report_and_table_show_the_split(real_run):
    summary, run_dir = real_run
    page = write_report(run_dir).read_text()
    assert "wait_split" in {spec.name for spec in FIGURES}
    assert (run_dir / "figures" / "wait_split.png").stat().st_size > 5000
    assert "What the trainer waited on" in page and "train_wait: gym_service" in page
    assert load_run(run_dir).spans["sync"]  # the new span fields read back
    out = io.StringIO()
    Console(file=out, width=200).print(benchmark_table(summary))
    text = out.getvalue()
    for part in PARTS:
        assert f"wait: {part} (s)" in text
    assert "gym share of the wait" in text
