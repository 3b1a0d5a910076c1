"""The rules the runtime and the simulator share (trainer/rules/), on their own."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from toy_gyms import ToyGym

from gyms import Candidate, Task
from harness.sim.engine import BatchingEngine
from harness.sim.stages import from_profile
from trainer.buffer import ReadyBuffer
from trainer.policies.profiles import A3_QWEN3_4B, H100_QWEN3_4B, ZERO, HardwareProfile, load_profile
from trainer.policies.replay import ReplayPolicy
from trainer.rules.answers import RESPONSE_SPREAD, AnswerMix, response_tokens
from trainer.rules.batching import call_seconds, joins, next_call, work_seconds
from trainer.rules.buffer import ERRORED_STREAK_LIMIT, Books, BufferRules, admits
from trainer.types import Request

# -- the admission rule is one function -------------------------------------------------------


def test_admission_rule_is_the_synchronous_barrier_at_staleness_0():
    assert admits(started=3, wasted=0, trainer_version=0, max_staleness=0, batch_groups=4)
    assert not admits(started=4, wasted=0, trainer_version=0, max_staleness=0, batch_groups=4)
    assert admits(started=4, wasted=1, trainer_version=0, max_staleness=0, batch_groups=4)  # a wasted group is replaced
    assert admits(started=4, wasted=0, trainer_version=1, max_staleness=0, batch_groups=4)


def test_ready_buffer_admits_what_the_rule_admits():
    buffer = ReadyBuffer(batch_groups=2, group_size=1, max_staleness=1)
    started = 0
    while admits(started, 0, 0, 1, 2):
        buffer.admit()  # would block forever if the buffer's rule were stricter
        started += 1
    assert started == 4 and buffer.accounting.generated == 4


# -- staleness drops and the books ------------------------------------------------------------

RULES = BufferRules(batch_groups=2, group_size=4, max_staleness=1, oversample=1)


def test_over_sampling_admits_that_many_more_groups():
    books = Books()
    while RULES.admits(books, trainer_version=0):
        books = books.admitted(1, RULES.group_size)
    assert books.started == (0 + 1 + 1) * 2 + 1 and books.accounting.generated == 5 * 4
    assert RULES.room(Books(), trainer_version=0) == 5 and RULES.room(books, trainer_version=1) == 2


def test_a_group_more_than_max_staleness_behind_is_stale():
    assert not RULES.is_stale(group_version=2, trainer_version=3)
    assert RULES.is_stale(group_version=1, trainer_version=3)
    assert BufferRules(2, 4, max_staleness=0).is_stale(group_version=2, trainer_version=3)  # sync


def test_every_trajectory_ends_in_one_count_and_wasted_groups_free_admission():
    books = Books().admitted(4, group_size=4)
    books = books.completed(trainable=3, errored=1)  # one episode hit an infrastructure error
    books = books.completed(trainable=0, errored=4)  # wasted: never to be trained
    books = books.completed(trainable=4, errored=0).dropped_stale(4)  # wasted too
    books = books.trained([(1, 3)]).stopped_with(abandoned=4)
    accounting = books.accounting
    assert (accounting.generated, accounting.trained, accounting.dropped_stale, accounting.errored,
            accounting.in_flight) == (16, 3, 4, 5, 4)  # fmt: skip
    assert accounting.balanced() and books.wasted == 2
    assert books.staleness_histogram() == {1: 3}
    assert books.trained([(0, 4), (2, 1), (0, 4)]).staleness_histogram() == {0: 8, 1: 3, 2: 1}
    assert admits(books.started, books.wasted, 0, 0, batch_groups=3)  # 4 started, 2 of them wasted


def test_a_streak_of_fully_errored_groups_means_the_gym_is_broken():
    books = Books()
    for _ in range(ERRORED_STREAK_LIMIT - 1):
        books = books.completed(trainable=0, errored=4)
    assert not RULES.gym_is_broken(books)
    assert not RULES.gym_is_broken(books.completed(trainable=1, errored=3).completed(trainable=0, errored=4))
    assert RULES.gym_is_broken(books.completed(trainable=0, errored=4))
    wide = BufferRules(batch_groups=ERRORED_STREAK_LIMIT + 2, group_size=4, max_staleness=1)
    assert not wide.gym_is_broken(books.completed(trainable=0, errored=4))  # a batch's worth at least


def test_bad_buffer_settings_are_refused():
    with pytest.raises(ValueError, match="max_staleness and oversample must be >= 0"):
        BufferRules(2, 4, max_staleness=-1)


# -- continuous batching ----------------------------------------------------------------------


def test_a_call_takes_every_waiting_request():
    waiting = ["a", "b", "c"]
    assert next_call(waiting) == (["a", "b", "c"], [])


SLOW_CALLS = HardwareProfile("slow-calls", "a call cost of its own", generate_s_per_token=3e-4, train_s_per_token=1e-6,
                             update_weights_s=0.01, generate_call_s=0.05)  # fmt: skip


@pytest.mark.parametrize("profile", [H100_QWEN3_4B, SLOW_CALLS])
def test_a_call_lasts_the_profiles_generation_time_of_its_batchs_tokens(profile):
    """The replay policy charges a call of 3 requests of 512 tokens what the profile charges
    1536 tokens: batching saves the per-call cost alone."""
    tokens = 3 * 512
    assert call_seconds(profile.generate_call_s, profile.generate_s_per_token * tokens) == profile.generate_s(tokens)


def test_the_simulated_engine_batches_by_the_rule():
    engine = BatchingEngine[str](call_s=0.5)
    engine.ask("first", 1.0)
    assert engine.start(now=0.0) == 1.5  # alone: it found the engine idle
    engine.ask("second", 1.0)
    engine.ask("third", 2.0)  # both arrive during the first call, and share the next
    assert engine.finish() == ["first"]
    assert engine.start(now=1.5) == 1.5 + call_seconds(0.5, 3.0)
    assert engine.finish() == ["second", "third"] and engine.busy == 1.5 + 3.5


def test_a_call_is_throughput_or_latency_bound_whichever_is_longer():
    assert work_seconds([(1.0, 0.0), (2.0, 0.0)]) == 3.0  # no per-sequence rate: the sum, as before
    assert work_seconds([(0.1, 5.0), (0.2, 4.0)]) == 5.0  # a small batch: its longest decode alone
    assert work_seconds([(3.0, 2.0), (3.0, 2.5)]) == 6.0  # a full batch: throughput


def test_a_request_joins_a_latency_bound_call_only():
    assert joins(start=0.0, now=1.0, call_s=0.0, response_s=0.5, decode_end=5.0)  # the engine has room
    assert not joins(start=0.0, now=1.0, call_s=0.0, response_s=6.0, decode_end=5.0)  # full: next call
    assert not joins(start=0.0, now=1.0, call_s=0.0, response_s=6.0, decode_end=0.0)  # no per-sequence rate


def test_the_simulated_engine_lets_requests_join_a_latency_bound_call():
    engine = BatchingEngine[str](call_s=0.0)
    engine.ask("first", 0.1, 4.0, now=0.0)
    assert engine.start(now=0.0) == 4.0  # alone: as long as its decode
    assert engine.ask("second", 0.1, 4.0, now=1.0)  # joins, and its decode moves the end
    assert engine.end == 5.0 and engine.busy == 5.0
    assert not engine.ask("third", 0.1, 1.0, now=1.0, may_join=False)  # held back (colocated training)
    assert engine.finish() == ["first", "second"] and engine.waiting[0][0] == "third"


def test_a_profile_without_a_per_sequence_rate_loads_and_charges_as_before(tmp_path):
    from dataclasses import asdict

    data = asdict(SLOW_CALLS)
    del data["decode_s_per_token"]  # a profile saved before the field
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    old = load_profile(str(path))
    assert old.decode_s_per_token is None and old.decode_s(1000) == 0.0
    assert from_profile(old).decode_factor == 0.0
    assert from_profile(A3_QWEN3_4B).decode_factor > 1  # one sequence alone is slower per token than a full batch


# -- the replay policy's answers --------------------------------------------------------------


class HangingToyGym(ToyGym):
    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [*super().candidates(task, rng), Candidate("sleep:9", "timeout", "hang")]


def test_replay_mix_is_what_the_replay_policy_picks():
    """The mix a cost card is weighted to (harness/gymcost.py) is the policy's own."""
    gym = HangingToyGym()
    task = gym.tasks()[0]
    kinds = {c.action: c.expect for c in gym.candidates(task, random.Random(0))}
    policy = ReplayPolicy(gym, ZERO, seed=5)
    picks = Counter(kinds[g.text] for g in policy.generate([Request.first(task)] * 20_000, 0))
    for kind, share in AnswerMix().shares({c.expect for c in gym.candidates(task, random.Random(0))}).items():
        assert picks[kind] / 20_000 == pytest.approx(share, abs=0.01)


@pytest.mark.parametrize("kinds, shares", [
    ({"pass", "fail", "timeout"}, {"pass": 0.5, "timeout": 0.02, "fail": 0.48}),
    ({"pass", "fail"}, {"pass": 0.5, "fail": 0.5}),
    ({"fail", "timeout"}, {"timeout": 0.52, "fail": 0.48}),  # no known-good answer: the roll goes on
    ({"pass", "timeout"}, {"pass": 0.98, "timeout": 0.02}),  # no known-bad answer: a known-good one
    ({"timeout"}, {"timeout": 1.0}),
])  # fmt: skip
def test_a_task_without_some_kind_gives_its_share_to_another(kinds, shares):
    assert AnswerMix().shares(kinds) == pytest.approx(shares)


def test_shares_are_what_pick_gives_even_past_certainty():
    """skill + timeout_rate over 1: the hangs get only what the good answers leave."""
    mix, rng = AnswerMix(skill=0.9, timeout_rate=0.2), random.Random(1)
    candidates = [Candidate("good", "pass", "reference"), Candidate("hang", "timeout", "hang")]
    picks = Counter(mix.pick(candidates, rng).expect for _ in range(20_000))
    assert mix.shares({"pass", "timeout"}) == pytest.approx({"pass": 0.9, "timeout": 0.1})
    assert picks["timeout"] / 20_000 == pytest.approx(0.1, abs=0.01)


def test_bad_answer_mixes_are_refused():
    with pytest.raises(ValueError, match="skill and timeout_rate are probabilities in"):
        AnswerMix(skill=1.5)


def test_responses_spread_alike_in_the_policy_and_the_simulator():
    low, high = RESPONSE_SPREAD
    rng = random.Random(0)
    lengths = [response_tokens(512, rng) for _ in range(5000)]
    assert low * 512 <= min(lengths) < max(lengths) <= high * 512
    assert response_tokens(0, rng) == 1  # a profile without responses still answers
    simulated = from_profile(H100_QWEN3_4B).response_s
    per_token = H100_QWEN3_4B.generate_s_per_token
    assert simulated.values[0] > low * 512 * per_token and simulated.values[-1] < high * 512 * per_token
    assert simulated.mean == pytest.approx(512 * per_token)
