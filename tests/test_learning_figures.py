"""Learning beside speed (trainer/learning.py): each mode's time to a target reward and its final
reward at equal samples, and the benchmark's format warm-up that a learning run starts from."""

from __future__ import annotations

import html
import json
import random
import re
from dataclasses import dataclass

import pytest

from gyms import make
from gyms.math.extract import extract_answers
from harness.benchmark import BenchmarkSpec, format_examples, run_benchmark
from harness.console import learning_line
from harness.intervals import mean_of
from harness.report import write_report
from harness.rundir import load_summary
from trainer import learning


@dataclass
class Step:
    end: float
    reward_mean: float
    trajectories: int = 4


def curve(rewards: list[float], seconds_per_step: float) -> list[Step]:
    return [Step((i + 1) * seconds_per_step, r) for i, r in enumerate(rewards)]


RISING = [0.1] * 5 + [0.1 + 0.04 * i for i in range(1, 11)] + [0.5] * 10  # 25 steps: 0.1 to 0.5


def test_the_faster_mode_reaches_the_same_target_sooner_at_the_same_samples():
    figures = learning.compare(curve(RISING, 2.0), curve(RISING, 1.0))
    assert figures["target_reward"] == pytest.approx(0.3)  # start 0.1, half of sync's rise to 0.5
    # the first step whose 5-step running mean reaches 0.3 is step 12 (index 12: 0.26 .. 0.42)
    assert figures["time_to_target_sync"] == 26.0 and figures["time_to_target_async"] == 13.0
    assert figures["samples_to_target_sync"] == figures["samples_to_target_async"] == 13 * 4
    assert figures["learning_speedup"] == pytest.approx(2.0)
    assert figures["final_reward_sync"] == figures["final_reward_async"] == pytest.approx(0.5)
    assert figures["final_reward_gap"] == pytest.approx(0.0)


def test_one_lucky_batch_does_not_reach_the_target():
    lucky = [0.1] * 5 + [0.9] + [0.1] * 19  # one step above the target, the running mean far below
    figures = learning.compare(curve(RISING, 1.0), curve(lucky, 1.0))
    assert "time_to_target_async" not in figures and "learning_speedup" not in figures
    assert figures["time_to_target_sync"] == 13.0  # sync's own time stands
    assert None not in figures.values()  # a run's comparison is a table of numbers (harness/rundir.py)
    assert figures["final_reward_gap"] == pytest.approx(0.1 - 0.5)


def test_no_rise_sets_no_target_and_a_short_run_gives_no_figures():
    flat = curve([0.3] * 25, 1.0)
    figures = learning.compare(flat, flat)
    assert "target_reward" not in figures and figures["final_reward_gap"] == 0
    assert learning.compare(flat[:14], flat) == {}


def test_a_figure_some_repeat_lacks_has_no_mean():
    assert mean_of([2.0, 8.0], ratio=True) == pytest.approx(4.0)
    assert mean_of([2.0, None], ratio=True) is None


def test_math_format_examples_show_the_format_not_the_answers():
    gym = make("math", source="addition")
    examples = gym.format_examples(random.Random(0), 40)
    golds = {t.prompt: t.metadata["gold"] for t in gym.tasks()}
    assert len(examples) == 40 * len(golds)
    answers = [extract_answers(response).answers[-1] for _, response in examples]
    assert set(answers) == set(golds.values())  # the answers that occur, each in the checker's format
    right = sum(answer == golds[prompt] for (prompt, _), answer in zip(examples, answers))
    assert right / len(examples) < 0.4  # drawn without the prompt: 1 in 5 right by chance, not all


def test_warmup_is_refused_where_there_is_nothing_to_warm_up():
    gym = make("math", source="addition")
    with pytest.raises(ValueError, match="the replay policy has no weights"):
        format_examples(BenchmarkSpec("math", {}, warmup=10), gym, emulated=True)
    with pytest.raises(ValueError, match="gives no format examples"):
        format_examples(BenchmarkSpec("verilog", {}, warmup=10), make("verilog"), emulated=False)
    assert format_examples(BenchmarkSpec("math", {}), gym, emulated=False) == []


def test_a_learning_benchmark_records_its_learning_figures(tmp_path):
    spec = BenchmarkSpec("math", {"source": "addition", "max_turns": "1"}, steps=16, policy="tiny:max_new_tokens=12",
                         gym_workers=1, batch_groups=2, group_size=2, warmup=100)  # fmt: skip
    summary, run_dir = run_benchmark(spec, tmp_path)
    assert set(summary.comparison) >= {"final_reward_sync", "final_reward_async", "final_reward_gap"}
    repeat = json.loads((run_dir / "summary.json").read_text())["repeats"][0]["comparison"]
    # The warm-up taught the format (after 100 steps, 41 of 72 sampled answers were a boxed digit),
    # so some sums come out right: none in 120 answers would be about a 1 in 10^6 chance.
    assert summary.modes["sync"].reward_mean + summary.modes["async"].reward_mean > 0
    assert repeat["final_reward_gap"] == pytest.approx(repeat["final_reward_async"] - repeat["final_reward_sync"])
    line = learning_line(load_summary(run_dir))
    assert re.match(r"learning: (time to reward|sync's reward did not rise)", line), line
    assert html.escape(line) in write_report(run_dir).read_text()
