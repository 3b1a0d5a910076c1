"""The rules the runtime and the simulator share (trainer/rules/), on their own."""

from __future__ import annotations

import pytest

from harness.sim.engine import BatchingEngine
from trainer.buffer import ReadyBuffer
from trainer.policies.profiles import H100_QWEN3_4B, HardwareProfile
from trainer.rules.batching import call_seconds, next_call
from trainer.rules.buffer import ERRORED_STREAK_LIMIT, Books, BufferRules, admits

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
