"""Each task's predicted gym time (trainer/rules/cost.py): the estimator, its cost card's
per-task figures (harness/costcard.py, harness/gymcost.py), the predictions a run records in its
fates, and the bias audit's predicted against measured cost (trainer/bias.py)."""

from __future__ import annotations

import csv
import random
import sys
import threading

import pytest
from toy_gyms import ToyGym

from gyms import Candidate, Outcome, Task
from gyms.pool import GymPool
from harness.benchmark import card_costs
from harness.costcard import CostCard, load, save
from harness.gymcost import measure
from harness.record import write_mode
from harness.sim.distribution import Distribution
from trainer.bias import audit, spearman
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import HardwareProfile
from trainer.policies.replay import ReplayPolicy
from trainer.rollout import CostPredictor
from trainer.rules.cost import PRIOR_WEIGHT, CostBook
from trainer.types import DROPPED_STALE, ERRORED, TRAINED, Fate, Generation, Trajectory, Turn

K = PRIOR_WEIGHT


# -- the estimator ---------------------------------------------------------------------------


def test_nothing_is_predicted_before_anything_is_known():
    assert CostBook().predict("a") is None


def test_a_task_is_its_mean_shrunk_towards_the_gym_mean():
    book = CostBook().observed("a", [1.0] * 4).observed("b", [3.0] * 4)
    gym_mean = 2.0
    assert book.predict("a") == pytest.approx((4 * 1.0 + K * gym_mean) / (4 + K))
    assert book.predict("b") == pytest.approx((4 * 3.0 + K * gym_mean) / (4 + K))
    assert book.predict("c") == pytest.approx(gym_mean)  # never seen: the prior alone
    # its own mean takes over as its trajectories come in
    many = book.observed("a", [1.0] * 400)
    assert abs(many.predict("a") - 1.0) < abs(book.predict("a") - 1.0) < abs(gym_mean - 1.0)
    assert book.observed("a", []) is book


def test_a_cards_figure_is_the_prediction_before_observations_and_the_prior_after():
    book = CostBook({"a": 5.0})
    assert book.predict("a") == 5.0
    assert book.predict("b") is None  # the card lacks it and nothing is observed
    book = book.observed("b", [2.0])
    assert book.predict("b") == pytest.approx(2.0)  # the card lacks it: from the run alone
    assert book.predict("a") == 5.0  # the card's, not the gym mean's
    book = book.observed("a", [1.0] * 4)
    assert book.predict("a") == pytest.approx((4 * 1.0 + K * 5.0) / (4 + K))  # shrunk towards the card
    assert book.predict("c") == pytest.approx((2.0 + 4.0) / 5)  # the card lacks it: the gym mean


def test_the_book_refuses_what_cannot_be():
    with pytest.raises(ValueError, match="positive"):
        CostBook(k=0)
    with pytest.raises(ValueError, match="negative"):
        CostBook().observed("a", [-1.0])


def trajectory(task: str, gym_s: float, outcome: Outcome) -> Trajectory:
    gen = Generation("x", [], [], [], 0)
    return Trajectory(task, 0, 0, [Turn(gen, "", 0.0, outcome)], gym_s=gym_s)


def test_errored_trajectories_are_left_out():
    costs = CostPredictor()
    costs.observe("a", [trajectory("a", 1.0, Outcome.PASS), trajectory("a", 60.0, Outcome.ERROR),
                        trajectory("a", 3.0, Outcome.FAIL)])  # fmt: skip
    assert costs.predict("a") == pytest.approx(2.0)  # (1 + 3) / 2, not the dead worker's 60 s
    costs.observe("b", [trajectory("b", 60.0, Outcome.ERROR)])
    assert costs.predict("b") == pytest.approx(2.0)  # nothing learned of b: the gym mean


def test_threads_observing_at_once_lose_nothing():
    costs, threads, per_thread = CostPredictor({"a": 1.0}), 8, 300
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: a lost update shows
    try:

        def work(i: int) -> None:
            for _ in range(per_thread):
                costs.observe(f"t{i % 2}", [trajectory("t", 1.0 + i % 2, Outcome.PASS)])
                costs.predict("a")

        running = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for t in running:
            t.start()
        for t in running:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    book = costs._book
    assert (book.total_n, book.total_s) == (threads * per_thread, threads * per_thread * 1.5)
    assert book.sums == {"t0": (threads // 2 * per_thread * 1.0, threads // 2 * per_thread),
                         "t1": (threads // 2 * per_thread * 2.0, threads // 2 * per_thread)}  # fmt: skip


# -- the audit -------------------------------------------------------------------------------


def fate(gym_s: float, kind: str, predicted: float | None) -> Fate:
    return Fate(0, 0, "t", 0, 1, gym_s, 0.0, "fail", kind, 0, predicted)


def test_spearman_by_hand():
    assert spearman([(1, 10), (2, 20), (3, 30)]) == pytest.approx(1.0)
    assert spearman([(1, 30), (2, 20), (3, 10)]) == pytest.approx(-1.0)
    # x's tie shares its ranks: 1, 2.5, 2.5, 4 against 1, 3, 2, 4 -> r = 4.5 / sqrt(4.5 * 5)
    assert spearman([(1, 1), (2, 3), (2, 2), (3, 4)]) == pytest.approx(4.5 / (4.5 * 5) ** 0.5)
    assert spearman([(1, 1)]) is None and spearman([(1, 1), (1, 2)]) is None  # too few, or constant


def test_the_audit_puts_predicted_beside_measured_per_quartile():
    fates = [fate(1, TRAINED, 2.0), fate(2, TRAINED, None), fate(3, TRAINED, 2.0), fate(4, TRAINED, 4.0),
             fate(5, TRAINED, 4.0), fate(6, DROPPED_STALE, 8.0), fate(7, TRAINED, 6.0), fate(8, DROPPED_STALE, 6.0),
             fate(100, ERRORED, 1.0)]  # fmt: skip
    b = audit(fates)
    got = [(q["predicted"], q["predicted_gym_s_mean"], q["measured_gym_s_mean"]) for q in b["quartiles"]]
    assert got == [(1, 2.0, 1.0), (2, 3.0, 3.5), (2, 6.0, 5.5), (2, 6.0, 7.5)]
    pairs = [(2, 1), (2, 3), (4, 4), (4, 5), (8, 6), (6, 7), (6, 8)]  # decided, with a prediction
    assert b["cost_rank_correlation"] == pytest.approx(spearman(pairs))
    old = audit([fate(i, TRAINED, None) for i in range(4)])  # fates recorded without predictions
    assert old["cost_rank_correlation"] is None
    assert [q["predicted_gym_s_mean"] for q in old["quartiles"]] == [None] * 4


def test_the_console_line_shows_predicted_beside_measured():
    from harness.console import _bias_line

    fates = [fate(1, TRAINED, None), fate(2, TRAINED, 2.0), fate(3, TRAINED, 3.0), fate(4, DROPPED_STALE, 4.5)]
    assert _bias_line(audit(fates)).endswith(
        "; gym s predicted/measured by quartile -, 2.00/2.00, 3.00/3.00, 4.50/4.00, "
        "predicted / measured gym time, rank correlation 1.00")
    assert "predicted" not in _bias_line(audit([fate(i, TRAINED, None) for i in range(4)]))  # fmt: skip


# -- cost cards ------------------------------------------------------------------------------


def card(**extra) -> CostCard:
    return CostCard("toy", "gyms profile", {}, Distribution.of([0.1, 0.2]), (0.5, 0.5), 0.0, 0.0, 1, 2, **extra)


def test_a_cards_task_costs_are_its_step_mean_times_its_turns(tmp_path):
    measured = card(by_task={"toy/0": 0.2, "toy/1": 1.0})
    assert measured.task_costs() == pytest.approx({"toy/0": 0.3, "toy/1": 1.5})  # mean turns 1.5
    save(measured, tmp_path / "card.json")
    assert load(tmp_path / "card.json").by_task == {"toy/0": 0.2, "toy/1": 1.0}


def test_a_card_from_before_per_task_figures_loads_with_none(tmp_path):
    data = card().to_json()
    del data["by_task"]
    (tmp_path / "old.json").write_text(__import__("json").dumps(data))
    old = load(tmp_path / "old.json")
    assert old.by_task == {} and old.task_costs() == {}


def test_a_benchmarks_card_must_know_the_gyms_tasks(tmp_path):
    save(card(by_task={"toy/0": 0.2, "toy/1": 1.0}), tmp_path / "card.json")
    assert card_costs(str(tmp_path / "card.json"), ToyGym(tasks=3)) == pytest.approx({"toy/0": 0.3, "toy/1": 1.5})
    save(card(by_task={"other/0": 0.2}), tmp_path / "other.json")
    with pytest.raises(ValueError, match="no per-task figures for the toy gym's training tasks: write one with"):
        card_costs(str(tmp_path / "other.json"), ToyGym(tasks=3))
    save(card(), tmp_path / "none.json")  # a card from a run, or from before per-task figures
    with pytest.raises(ValueError, match="harness gyms profile toy --out"):
        card_costs(str(tmp_path / "none.json"), ToyGym(tasks=3))
    with pytest.raises(ValueError, match="no cost card at"):
        card_costs(str(tmp_path / "missing.json"), ToyGym(tasks=3))


class CostlyTaskGym(ToyGym):
    """Task i's every answer takes the gym 0.04 x i seconds (a fail): cost that differs by task."""

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        i = int(task.id.split("/")[1])
        return [Candidate(f"sleep:{0.04 * i}", "fail", "slow-wrong")]


class PassOrSlowGym(ToyGym):
    """Task toy/1's wrong answer takes 0.2 s; every other answer is instant."""

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        wrong = "sleep:0.2" if task.id == "toy/1" else "nope"
        return [Candidate("pass", "pass", "reference"), Candidate(wrong, "fail", "wrong")]


def test_a_profile_measures_each_tasks_step(tmp_path):
    measured = measure(PassOrSlowGym(max_turns=1, tasks=2), workers=1)
    assert set(measured.by_task) == {"toy/0", "toy/1"}
    # half the replay mix is the wrong answer: toy/1's mean step is about half of 0.2 s
    assert measured.by_task["toy/0"] < 0.05 < 0.09 < measured.by_task["toy/1"] < 0.2
    save(measured, tmp_path / "card.json")
    assert load(tmp_path / "card.json").by_task == pytest.approx(measured.by_task)


# -- a run records its predictions -----------------------------------------------------------

FAST = HardwareProfile("test-fast", "test", 1e-5, 1e-5, 0.01, response_tokens=100, prompt_tokens=10)


@pytest.fixture(scope="module")
def pool():
    with GymPool(workers=2, step_timeout_s=1.0) as p:
        yield p


def group_spans(result) -> dict[int, tuple[float, float]]:
    return {s.group: (s.start, s.end) for s in result.timeline.spans if s.kind == "group"}


def test_a_run_predicts_every_task_after_its_first_group(pool, tmp_path):
    gym = CostlyTaskGym(max_turns=1, tasks=4)
    config = RunConfig(mode="async", steps=8, batch_groups=2, group_size=2, max_staleness=1)
    result = run(gym, ReplayPolicy(gym, FAST, skill=0.0, timeout_rate=0.0, seed=1), pool, config)
    spans = group_spans(result)
    decided = [f for f in result.fates if f.fate in (TRAINED, DROPPED_STALE)]
    first_end: dict[str, float] = {}  # each task's first completed group
    for f in result.fates:
        if f.group in spans:
            first_end[f.task_id] = min(first_end.get(f.task_id, float("inf")), spans[f.group][1])
    later = [f for f in decided if spans[f.group][0] > first_end[f.task_id]]
    assert len(later) >= 8, "the test needs tasks drawn again after their first group"
    assert all(f.predicted_gym_s is not None for f in later), later
    run_start = min(start for start, _ in spans.values())
    assert all(f.predicted_gym_s is None for f in decided if spans[f.group][0] == run_start)  # nothing known yet
    for f in decided:  # one prediction per group, made before it ran
        assert {g.predicted_gym_s for g in result.fates if g.group == f.group} == {f.predicted_gym_s}

    b = audit(result.fates)
    assert len(b["quartiles"]) == 4
    for q in b["quartiles"]:
        assert q["predicted"] > 0 and q["predicted_gym_s_mean"] >= 0 and q["measured_gym_s_mean"] >= 0, q
    assert b["quartiles"][-1]["predicted_gym_s_mean"] > b["quartiles"][0]["predicted_gym_s_mean"]
    assert b["cost_rank_correlation"] > 0.3  # a task's cost repeats: the predictions rank it

    write_mode(tmp_path, "async", result)
    with (tmp_path / "trajectories.csv").open() as f:
        rows = {(int(r["group"]), int(r["sample"])): r["predicted_gym_s"] for r in csv.DictReader(f)}
    for f in result.fates:
        assert rows[(f.group, f.sample)] == ("" if f.predicted_gym_s is None else str(f.predicted_gym_s))


def test_a_cards_task_costs_are_the_first_predictions(pool):
    gym = CostlyTaskGym(max_turns=1, tasks=4)
    config = RunConfig(mode="sync", steps=2, batch_groups=2, group_size=2)
    result = run(gym, ReplayPolicy(gym, FAST, skill=0.0, timeout_rate=0.0, seed=1), pool, config,
                 task_costs={"toy/0": 0.5, "toy/1": 0.5, "toy/2": 0.5, "toy/3": 0.5})  # fmt: skip
    first = min(f.group for f in result.fates)
    assert {f.predicted_gym_s for f in result.fates if f.group == first} == {0.5}  # the card's, before anything ran
    assert all(f.predicted_gym_s is not None for f in result.fates)
