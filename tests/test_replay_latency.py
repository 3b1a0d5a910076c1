"""The replay-latency gym (harness/replay_latency.py): a cost card's step times, slept, with each
candidate's own outcome, the same draws for the same seed, and a real benchmark on it."""

from __future__ import annotations

import json
import random
import statistics
import time
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, harness

from gyms import Outcome, make
from gyms.conformance import check_gym
from gyms.registry import load_class
from harness.costcard import CostCard, save
from harness.replay_latency import CHOICES, ReplayLatencyGym
from harness.sim.distribution import Distribution

PATH = "harness.replay_latency:ReplayLatencyGym"


def write_card(path: Path, service: list[float], by_expect: dict[str, list[float]] | None = None,
               turns: tuple[float, ...] = (0.5, 0.25, 0.25)) -> Path:  # fmt: skip
    """A card in card.json's format, as `harness benchmark` and `harness gyms profile` write it."""
    card = CostCard(gym="synthetic", source="test", tools={}, service_s=Distribution.of(service), turns=turns,
                    error_rate=0.0, timeout_rate=None, workers=1, calls=len(service),
                    by_expect={k: Distribution.of(v) for k, v in (by_expect or {}).items()})  # fmt: skip
    save(card, path)
    return path


def delays(gym: ReplayLatencyGym) -> dict[str, list[float]]:
    """Every delay the gym would wait, by its candidates' kinds: every answer of every task at every turn."""
    found: dict[str, list[float]] = {}
    for task in gym.tasks():
        for kind, per_turn in gym.open(task).answers.values():
            found.setdefault(kind, []).extend(per_turn)
    return found


@pytest.fixture
def quick_card(tmp_path: Path) -> Path:
    """Milliseconds: a pass, a fail and a hang each with a time of its own."""
    return write_card(tmp_path / "card.json", [0.01, 0.02, 0.03],
                      {"pass": [0.01, 0.011], "fail": [0.02, 0.021], "timeout": [0.05]})  # fmt: skip


def test_delays_follow_the_cards_distribution(tmp_path):
    service = [random.Random(7).expovariate(1 / 0.4) for _ in range(200)]  # a skewed card, as gym steps are
    gym = ReplayLatencyGym(card=str(write_card(tmp_path / "card.json", service)), tasks=300)
    drawn = [d for ds in delays(gym).values() for d in ds]
    assert len(drawn) == 300 * 2 * CHOICES * 3
    assert set(drawn) <= set(service)  # each one of the card's values
    assert statistics.fmean(drawn) == pytest.approx(statistics.fmean(service), rel=0.03)
    assert statistics.quantiles(drawn, n=20)[-1] == pytest.approx(statistics.quantiles(service, n=20)[-1], rel=0.1)


def test_a_pass_takes_a_passs_time_where_the_card_has_one(quick_card):
    gym = ReplayLatencyGym(card=str(quick_card), tasks=20)
    by_kind = delays(gym)
    assert set(by_kind["pass"]) == {0.01, 0.011}
    assert set(by_kind["fail"]) == {0.02, 0.021}
    assert set(by_kind["timeout"]) == {0.05}
    assert gym.step_timeout_s == pytest.approx(0.05 + 1.0)


def test_a_card_from_a_run_offers_no_hangs_of_their_own(tmp_path):
    """A run's card has its hangs inside its one distribution: a separate hang would count them twice."""
    gym = ReplayLatencyGym(card=str(write_card(tmp_path / "card.json", [0.1, 0.2])), tasks=2)
    assert {c.expect for c in gym.candidates(gym.tasks()[0], random.Random(0))} == {"pass", "fail"}
    assert set(delays(gym)["pass"]) <= {0.1, 0.2}


def test_outcomes_follow_the_candidates(quick_card):
    gym = ReplayLatencyGym(card=str(quick_card), tasks=1)
    task = gym.tasks()[0]
    for candidate in gym.candidates(task, random.Random(0)):
        result = gym.open(task).step(candidate.action)
        assert result.outcome is (Outcome.PASS if candidate.expect == "pass" else Outcome.FAIL), candidate
        assert result.reward == (1.0 if candidate.expect == "pass" else 0.0)
        assert bool(result.info.get("timed_out")) == (candidate.expect == "timeout")
    started = time.monotonic()
    unknown = gym.open(task).step("an answer no candidate gave")
    assert unknown.outcome is Outcome.FAIL and time.monotonic() - started < 0.01  # at once, nothing to wait
    assert "Not one of this emulated gym's answers" in unknown.observation


def test_turns_are_at_most_the_cards(tmp_path):
    gym = ReplayLatencyGym(card=str(write_card(tmp_path / "card.json", [0.001], turns=(0.4, 0.3, 0.2, 0.1))))
    assert gym.max_turns == 4 and gym.turns == pytest.approx((0.5, 0.25, 0.125, 0.125))
    episode = gym.open(gym.tasks()[0])
    results = [episode.step("emulated fail answer 0") for _ in range(4)]
    assert [r.done for r in results] == [False, False, False, True] and results[-1].truncated


def test_waiting_uses_no_cpu(tmp_path):
    gym = ReplayLatencyGym(card=str(write_card(tmp_path / "card.json", [0.4])), tasks=1)
    episode = gym.open(gym.tasks()[0])
    wall, cpu = time.monotonic(), time.process_time()
    episode.step("emulated fail answer 3")
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    assert wall >= 0.4
    assert cpu < 0.05 * wall, (cpu, wall)  # a spinning wait would take all of it


def test_draws_are_a_function_of_the_seed_task_answer_and_turn(tmp_path):
    card = str(write_card(tmp_path / "card.json", [i / 100 for i in range(100)]))
    first, again, other = (ReplayLatencyGym(card=card, tasks=8, seed=s) for s in ("0", "0", "1"))
    tables = [first.open(t).answers for t in first.tasks()]
    assert [again.open(t).answers for t in reversed(again.tasks())][::-1] == tables  # whatever the order
    assert [other.open(t).answers for t in other.tasks()] != tables
    table = tables[0]
    assert len({d for _, ds in table.values() for d in ds}) > 20  # not one delay for every answer


def test_it_passes_the_conformance_check(quick_card):
    report = check_gym(make(PATH, card=str(quick_card), tasks="2"), workers=4)
    assert report.ok, report.violations
    assert report.tasks == 2 and not report.not_applicable


@pytest.mark.parametrize("options, says", [
    ({}, "-o card=PATH"),
    ({"card": "/nonexistent/card.json"}, "card='/nonexistent/card.json': no such file; pass a run's card.json"),
    ({"card": "MALFORMED"}, "is not a cost card (KeyError: 'turns'); pass a run's card.json"),
    ({"card": "GOOD", "tasks": "0"}, "replay-latency gym option tasks=0 must be at least 1"),
])  # fmt: skip
def test_a_missing_or_bad_card_is_one_error_naming_the_fix(tmp_path, options, says):
    (tmp_path / "bad.json").write_text(json.dumps({"service_s": {}}))
    good = write_card(tmp_path / "card.json", [0.1])
    given = {k: {"MALFORMED": str(tmp_path / "bad.json"), "GOOD": str(good)}.get(v, v) for k, v in options.items()}
    with pytest.raises(ValueError) as caught:
        ReplayLatencyGym(**given)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_it_is_registered_under_its_name():
    entries = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["heavygym.gyms"]
    assert entries["replay-latency"] == PATH
    assert load_class(PATH).name == "replay-latency"  # the registry refuses a name that differs


@pytest.mark.slow
def test_a_benchmark_runs_on_it_with_a_pool_of_32_workers(tmp_path):
    """`harness benchmark` end to end: 32 gym worker processes, both modes, the prediction."""
    card = write_card(tmp_path / "card.json", [0.05, 0.1, 0.2, 0.4])
    out = harness("benchmark", "--gym", PATH, "-o", f"card={card}", "-o", "tasks=8", "--gym-workers", "32",
                  "--steps", "2", "--batch", "2", "--group", "2", "--target", "1x4", "--results", str(tmp_path),
                  "--json", timeout=240)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    assert summary["gym"] == "replay-latency" and summary["gym_workers"] == 32
    assert summary["tools"]["latency"] == "emulated (slept, not checked)"
    assert set(summary["modes"]) == {"sync", "async"}
    assert summary["gym_pool"]["calls"] > 0 and summary["gym_pool"]["errors"] == 0
    assert "plan" in summary["predicted"], summary["predicted"]
    run_dir = next((tmp_path / "runs").iterdir())
    spans = [json.loads(line) for line in (run_dir / "timeline.jsonl").read_text().splitlines()]
    served = [s["end"] - s["start"] for s in spans if s["kind"] == "gym_step"]
    assert served and min(served) >= 0.05  # each step waited one of the card's delays, at least
