"""Multi-turn episodes under the replay policy: its emulated prompt grows by each turn's response
and feedback (trainer/rules/context.py), so prefill and training grow with the turns, and the
cost cards, the simulator, the planner and the replay-latency gym count the same growth."""

from __future__ import annotations

import dataclasses
import json
import math
import time

import pytest

from gyms import Outcome, make
from gyms.pool import GymPool
from harness.costcard import CostCard, save
from harness.gymcost import measure
from harness.plan import Cluster, sizing_rule
from harness.replay_latency import ReplayLatencyGym
from harness.sim.distribution import Distribution
from harness.sim.pipeline import SimConfig, simulate
from harness.sim.stages import Stages, from_profile
from recording_policy import RecordingReplay
from trainer.metrics import summarize
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import H100_QWEN3_4B, HardwareProfile
from trainer.policies.replay import ReplayPolicy
from trainer.rules.context import TEMPLATE_TOKENS, feedback_tokens
from trainer.types import Message, Request

FAST = HardwareProfile("test-fast", "test", 1e-5, 1e-5, 0.01, response_tokens=100, prompt_tokens=10)


def estimate(text: str) -> int:
    """The rule, written out: 4 characters a token, and 9 tokens of template per message."""
    return math.ceil(len(text) / 4) + 9


@pytest.fixture(scope="module")
def math_run():
    """A real multi-turn run: the math gym's checker, three turns at most, a weak replay policy."""
    gym = make("math", max_turns=3, size=16)
    policy = RecordingReplay(gym, FAST, skill=0.3, seed=3)
    with GymPool(workers=2, step_timeout_s=gym.step_timeout_s) as pool:
        result = run(gym, policy, pool, RunConfig(mode="async", steps=4, batch_groups=2, group_size=4, max_staleness=1))
    return policy, result


def test_a_multi_turn_replay_run_passes_the_prefix_check_and_its_prompts_grow(math_run):
    policy, result = math_run
    multi_turn = [t for _, g in policy.trained for t in g.trajectories if len(t.turns) > 1]
    assert multi_turn, "the test needs episodes that span several turns"
    assert summarize(result)["multi_turn"]["prefix_match_rate"] == 1.0
    for traj in multi_turn:
        assert traj.turns[0].generation.prompt_tokens == [0] * FAST.prompt_tokens
        for before, now in zip(traj.turns, traj.turns[1:]):
            sequence = before.generation.prompt_tokens + before.generation.response_tokens
            assert now.generation.prompt_tokens[: len(sequence)] == sequence
            assert len(now.generation.prompt_tokens) == len(sequence) + estimate(before.observation)
            assert estimate(before.observation) > TEMPLATE_TOKENS  # the math gym says why it failed


def test_gym_steps_record_the_feedback_that_grows_the_next_prompt(math_run):
    policy, result = math_run
    observations = {(t.group_id, t.sample, n): turn for _, g in policy.trained for t in g.trajectories
                    for n, turn in enumerate(t.turns, 1)}  # fmt: skip
    steps = [s for s in result.timeline.spans if s.kind == "gym_step" and (s.group, s.sample, s.turn) in observations]
    went_on = [s for s in steps if s.turn < len([k for k in observations if k[:2] == (s.group, s.sample)])]
    assert went_on
    for s in steps:
        turn = observations[(s.group, s.sample, s.turn)]
        expected = estimate(turn.observation) if s in went_on else None
        assert s.feedback_tokens == expected


def test_training_counts_one_sequence_per_trajectory(math_run):
    policy, result = math_run
    trained = [g for _, g in policy.trained]
    tokens = ReplayPolicy(policy.gym, FAST).train_step(trained)["tokens"]
    last = [t.turns[-1].generation for g in trained for t in g.trajectories]
    every_turn = [t.generation for g in trained for tr in g.trajectories for t in tr.turns]
    assert tokens == sum(len(g.prompt_tokens) + len(g.response_tokens) for g in last)
    assert tokens < sum(len(g.prompt_tokens) + len(g.response_tokens) for g in every_turn)  # the prefix once
    per_step = [r.stats["tokens"] for r in result.steps]
    assert sum(per_step) == tokens


def test_prefill_is_charged_only_beyond_the_first_prompt():
    profile = HardwareProfile("prefill", "test", 1e-3, 0.0, 0.0, response_tokens=1, prompt_tokens=100)
    assert profile.prefill_s_per_token == pytest.approx(1e-4)  # the default: a tenth of decoding's
    assert profile.request_s(100, 10) == pytest.approx(10 * 1e-3)
    assert profile.request_s(60, 10) == pytest.approx(10 * 1e-3)
    assert profile.request_s(150, 10) == pytest.approx(10 * 1e-3 + 50 * 1e-4)
    saved = {k: v for k, v in dataclasses.asdict(H100_QWEN3_4B).items() if k != "prefill_s_per_token"}
    assert HardwareProfile(**saved).prefill_s_per_token == pytest.approx(0.1 * H100_QWEN3_4B.generate_s_per_token)

    # the engine waits it: no decoding time, 0.02 s per prompt token beyond the first prompt
    slow_prefill = HardwareProfile("prefill", "test", 0.0, 0.0, 0.0, response_tokens=0, prompt_tokens=10,
                                   prefill_s_per_token=0.02)  # fmt: skip
    gym = make("math", max_turns=3, size=4)
    policy = ReplayPolicy(gym, slow_prefill, skill=0.0)
    task = gym.tasks()[0]
    first = Request.first(task, 0, 0)
    start = time.monotonic()
    [answer] = policy.generate([first], 0)
    first_s = time.monotonic() - start
    feedback = Message(gym.feedback_role, "x" * 200)  # 50 + 9 tokens
    start = time.monotonic()
    [later] = policy.generate([first.then(answer, feedback)], 0)
    later_s = time.monotonic() - start
    assert len(later.prompt_tokens) == 10 + 1 + 59  # a response of one token (mean 0), then the feedback
    assert first_s < 0.5
    assert later_s >= 60 * 0.02


def stages_with_growth(prefill_s_per_token: float) -> Stages:
    return Stages("test", 0.0, Distribution.constant(0.1), Distribution.constant(0.0), 0.001,
                  Distribution.constant(0.0), prompt_tokens=100, response_tokens=50,
                  prefill_s_per_token=prefill_s_per_token)  # fmt: skip


def card(turns: tuple[float, ...], feedback: float) -> CostCard:
    return CostCard("toy", "test", {}, Distribution.constant(0.5), turns, 0.0, 0.0, workers=1, calls=0,
                    feedback_tokens=feedback)  # fmt: skip


def test_the_simulator_charges_the_growing_prompt():
    stages = stages_with_growth(0.002)
    assert [stages.prefill_s(t, 20) for t in (1, 2, 3)] == pytest.approx([0.0, 0.002 * 70, 0.002 * 140])
    config = SimConfig(mode="sync", steps=4, batch_groups=2, group_size=4, gym_workers=8, placement="disaggregated")
    three_turns = simulate(card((0.0, 0.0, 1.0), 20), stages, config)
    # each of the 8 trajectories trains one sequence: 100 + 2 x (50 + 20) + 50 tokens at 1 ms
    assert [s.actor_train for s in three_turns.steps] == pytest.approx([8 * 0.001 * 290] * 4)
    one_turn = simulate(card((1.0,), 20), stages, config)
    assert [s.actor_train for s in one_turn.steps] == pytest.approx([8 * 0.001 * 150] * 4)
    # the prefill of turns 2 and 3 lengthens the rollout; without feedback the prompts grow less
    no_prefill = simulate(card((0.0, 0.0, 1.0), 20), stages_with_growth(0.0), config)
    no_feedback = simulate(card((0.0, 0.0, 1.0), 0), stages, config)
    train_wait = [summarize(r)["train_wait_mean"] for r in (no_prefill, no_feedback, three_turns)]
    assert train_wait[0] < train_wait[1] < train_wait[2]
    # the planner's pace counts the same growth
    cluster = Cluster(1, 2, 16, "disaggregated")
    paces = [sizing_rule(card((0.0, 0.0, 1.0), f), stages, cluster, 4, 4).step_time_s for f in (0, 200)]
    assert paces[0] < paces[1]


def test_stages_from_a_profile_carry_its_growth():
    stages = from_profile(H100_QWEN3_4B)
    assert stages.prefill_s_per_token == H100_QWEN3_4B.prefill_s_per_token
    assert stages.prompt_tokens == 256 and stages.response_tokens == 512
    assert stages.train_s(2, 49) == pytest.approx(H100_QWEN3_4B.train_s_per_token * (256 + 512 + 49 + 512))


def test_a_card_records_the_feedback_of_turns_that_go_on(tmp_path):
    measured = measure(make("math", max_turns=3, size=4), limit=2, workers=1)
    assert measured.feedback_tokens > TEMPLATE_TOKENS
    save(measured, tmp_path / "card.json")
    data = json.loads((tmp_path / "card.json").read_text())
    assert CostCard.from_json(data).feedback_tokens == pytest.approx(measured.feedback_tokens)
    del data["feedback_tokens"]  # a card written before the field
    assert CostCard.from_json(data).feedback_tokens == 0.0
    assert measure(make("math", max_turns=1, size=4), limit=2, workers=1).feedback_tokens == 0.0  # no turn goes on


def test_the_replay_latency_gym_gives_feedback_of_the_cards_size(tmp_path):
    path = tmp_path / "card.json"
    save(dataclasses.replace(card((0.5, 0.25, 0.25), 60.0), service_s=Distribution.constant(0.001)), path)
    gym = ReplayLatencyGym(card=str(path), tasks=2)
    task = gym.tasks()[0]
    kinds = {c.expect: c.action for c in gym.candidates(task, None)}
    failed = gym.open(task).step(kinds["fail"])
    assert failed.outcome is Outcome.FAIL and not failed.done
    assert feedback_tokens(failed.observation) == 60
    assert feedback_tokens(gym.open(task).step(kinds["pass"]).observation) < 60
