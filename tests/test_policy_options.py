"""The torch policies' training options, from Python and from a `--policy` spec."""

from __future__ import annotations

import pytest

from trainer.policies import make_policy
from trainer.policies.profiles import ZERO
from trainer.policies.torch_lm import tiny_policy


def test_a_spec_sets_the_training_options():
    policy = make_policy("tiny:minibatches=2,epochs=3,tis_cap=none,drop_zero_advantage=off,lr=0.01", None, ZERO)
    assert (policy.learner.minibatches, policy.learner.epochs, policy.learner.drop_zero_advantage) == (2, 3, False)
    assert policy.learner.loss_options["tis_cap"] is None
    assert policy.learner.optimizer.param_groups[0]["lr"] == 0.01


def test_defaults_make_several_minibatches_against_one_proximal_policy():
    policy = make_policy("tiny", None, ZERO)
    assert (policy.learner.minibatches, policy.learner.epochs, policy.learner.drop_zero_advantage) == (4, 1, True)
    assert policy.learner.loss_options["tis_cap"] == 2.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tiny:minibatches=0", "policy option minibatches='0' must be at least 1"),
        ("tiny:epochs=1.5", "policy option epochs='1.5' must be a whole number"),
        ("tiny:clip_eps=1.5", "clip_eps='1.5' must lie between 0 and 1"),
        ("tiny:tis_cap=0.5", "tis_cap='0.5' must be at least 1 .* or none for plain PPO"),
        ("tiny:lr=nan", "lr='nan' must be a finite number"),
        ("tiny:level=batch", "level='batch' must be token or sequence"),
        ("tiny:drop_zero_advantage=maybe", "must be true or false"),
        ("tiny:drop_zero_advantage=", "policy option drop_zero_advantage='' must be true or false"),
        ("tiny:epochs=", "policy option epochs='' must be a whole number"),
        ("tiny:minibatch=4", "unknown policy option 'minibatch': use one of .*minibatches"),
        ("tiny:minibatches", "'minibatches' is not KEY=VALUE"),
        ("tiny:epochs=1,epochs=2", "policy option epochs is given twice"),
    ],
)
def test_a_bad_option_is_named_with_its_fix(spec, message):
    with pytest.raises(ValueError, match=message):
        make_policy(spec, None, ZERO)


def test_python_callers_get_the_same_checks():
    with pytest.raises(ValueError, match="policy option minibatches=0 must be at least 1"):
        tiny_policy(minibatches=0)


def test_hf_options_follow_the_last_colon_and_a_path_keeps_its_own():
    # the path reaches the loader whole, the options are parsed (and checked first)
    with pytest.raises(ValueError, match=r"no model directory at /no/such:model:"):
        make_policy("hf:/no/such:model@cpu:minibatches=2", None, ZERO)
    with pytest.raises(ValueError, match=r"no model directory at /no/such:model:"):
        make_policy("hf:/no/such:model", None, ZERO)
    with pytest.raises(ValueError, match="minibatches='0' must be at least 1"):
        make_policy("hf:/no/such/model:minibatches=0", None, ZERO)
    # the vllm policy loads its learner's model the same way: the same line, before any engine starts
    with pytest.raises(ValueError, match=r"^no model directory at /no/such/model: pass a local directory"):
        make_policy("vllm:/no/such/model", None, ZERO)


def test_max_len_sizes_a_torch_policy_s_context_and_the_vllm_engine_names_its_own():
    policy = make_policy("tiny:max_len=1024", None, ZERO)
    assert policy.learner.max_len == 1024
    with pytest.raises(ValueError, match="the vllm engine's is max_model_len"):
        make_policy("vllm:/no/such/model:max_len=512", None, ZERO)
