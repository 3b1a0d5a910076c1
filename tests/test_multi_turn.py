"""Multi-turn episodes as conversations with one token sequence (docs/architecture.md, "A
conversation is one token sequence"), on the torch engines: `tiny` (byte tokenizer, the plain
template) and `hf` with a tiny Qwen3 (the ChatML chat template, as vLLM serves it in
tests/test_vllm_policy.py). The math gym is real; its answers are checked by math-verify."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from episodes import check_learner_matches_the_engine, check_prompts_extend_the_sequence, episode, retokenize

from gyms import Outcome, Task, make
from gyms.pool import GymPool
from trainer.metrics import multi_turn
from trainer.pipeline import RunConfig, run
from trainer.policies.chat import ChatTemplate
from trainer.policies.model_policy import ModelPolicy
from trainer.policies.tiny_hf import build
from trainer.policies.torch_lm import hf_policy, tiny_policy
from trainer.rollout import CONTEXT_FULL
from trainer.types import Group, Message

@pytest.fixture(scope="module")
def qwen3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="module")
def math3():
    return make("math", source="addition", max_turns=3)


@pytest.fixture(scope="module")
def task(math3) -> Task:
    return math3.tasks()[-1]  # 78 characters: "Give your final answer ... \\boxed{<answer>}.\n2 + 2 = "


@pytest.fixture(params=["tiny", "hf-qwen3"])
def policy(request, qwen3_dir) -> ModelPolicy:
    if request.param == "tiny":
        return tiny_policy(seed=0, max_new_tokens=12, max_len=512)
    return hf_policy(str(qwen3_dir), max_new_tokens=12, max_len=512)


def test_a_three_turn_episode_is_one_token_sequence(policy, math3, task):
    traj = episode(policy, math3, task)
    assert [t.outcome for t in traj.turns] == [Outcome.FAIL] * 3  # an untrained model: three tries
    first = traj.turns[0].generation
    assert first.prompt_tokens == policy.learner.tokenizer.template.first(task.prompt)  # nothing cut or added
    check_prompts_extend_the_sequence(policy, traj)
    check_learner_matches_the_engine(policy, traj)
    assert traj.prefix_matches() == [True, True]
    roles = [m.role for m in traj.messages()]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]


def test_a_retokenizing_trainer_fails_the_checks(policy, math3, task):
    retokenize(policy)
    traj = episode(policy, math3, task)
    assert len(traj.turns) == 3
    assert traj.prefix_matches() != [True, True]
    with pytest.raises(AssertionError, match="re-tokenized"):
        traj.check_token_prefix()
    with pytest.raises(AssertionError):
        check_prompts_extend_the_sequence(policy, traj)


def test_the_learner_runs_each_token_once_per_step(math3, task):
    policy = tiny_policy(seed=0, max_new_tokens=12, max_len=512)
    trajs = [episode(policy, math3, task) for _ in range(2)]
    trajs[1].turns[-1].reward = 1.0  # two advantages of opposite sign: the group is trained
    stats = policy.train_step([Group(0, task.id, 0, trajs, [-1.0, 1.0])])
    sequences = [len(t.sequence()[0]) for t in trajs]
    per_turn = sum(len(t.generation.prompt_tokens) + len(t.generation.response_tokens) for traj in trajs for t in traj.turns)
    assert stats["learner_tokens"] == sum(sequences)  # linear: each trajectory's tokens once
    assert stats["learner_tokens"] < per_turn  # where a row per turn ran over each prefix again
    assert stats["tokens"] == sum(len(t.generation.response_tokens) for traj in trajs for t in traj.turns)


def test_a_conversation_that_outgrows_the_context_ends_as_a_fail(math3, task):
    # 78 prompt bytes + 12 answer bytes fit 100; the next turn adds the gym's feedback and does not.
    policy = tiny_policy(seed=0, max_new_tokens=12, max_len=100)
    traj = episode(policy, math3, task)
    assert len(traj.turns) == 2 and traj.context_full
    assert traj.turns[-1].observation == CONTEXT_FULL
    assert traj.outcome is Outcome.FAIL and traj.reward == 0.0
    assert traj.turns[0].generation.prompt_tokens == policy.learner.tokenizer.encode(task.prompt)  # never cut
    ids, spans = traj.sequence()
    assert len(spans) == 1 and len(ids) <= 100
    assert [m.role for m in traj.messages()] == ["user", "assistant", "user"]


@pytest.mark.parametrize("max_len, truncated", [(512, False), (100, True)])
def test_the_run_counts_multi_turn_trajectories_and_checks_every_prefix(math3, max_len, truncated):
    policy = tiny_policy(seed=0, max_new_tokens=12, max_len=max_len, drop_zero_advantage=False)
    with GymPool(workers=2, step_timeout_s=30) as pool:
        result = run(math3, policy, pool, RunConfig(mode="sync", steps=2, batch_groups=2, group_size=2))
    figures = multi_turn(result.steps)
    trajectories = 2 * 2 * 2  # two steps (the first is the warm-up) of 2 groups x 2, all multi-turn
    assert figures["trajectories"] == trajectories
    if truncated:
        assert figures["truncated_by_context"] == trajectories and figures["prefix_match_rate"] is None
    else:
        assert figures["truncated_by_context"] == 0 and figures["prefix_match_rate"] == 1.0
    assert figures["learner_tokens_per_step"] > 0


# -- the chat template, one message at a time ---------------------------------------------------

REFUSES_TOOL = (
    "{% for m in messages %}{% if m['role'] not in ('user', 'assistant', 'system') %}"
    "{{ raise_exception('unknown role') }}{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Renders an assistant message differently once a later message follows it (as templates that
# strip earlier reasoning do): a conversation in it cannot grow by appending ids.
RERENDERS = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if loop.last %}{{ m['content'] }}{% else %}[{{ m['content'] }}]{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tokenizer(qwen3_dir: Path, template: str | None = None):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(qwen3_dir)
    if template is not None:
        tok.chat_template = template
    return tok


def test_a_feedback_message_renders_as_the_template_renders_it_in_a_whole_conversation(qwen3_dir, task):
    tok = tokenizer(qwen3_dir)
    template = ChatTemplate(tok)
    answer = tok.encode("\\boxed{6}") + [tok.eos_token_id]  # an answer as sampled, ended by <|im_end|>
    for role in ("user", "tool"):
        turn2 = template.first(task.prompt) + answer + template.after_answer(Message(role, "Not correct."))
        whole = tok.apply_chat_template(
            [{"role": "user", "content": task.prompt}, {"role": "assistant", "content": "\\boxed{6}"},
             {"role": role, "content": "Not correct."}], add_generation_prompt=True,
        )  # fmt: skip
        assert turn2 == list(whole["input_ids"] if isinstance(whole, Mapping) else whole)
        assert f"<|im_start|>{role}\nNot correct.<|im_end|>\n<|im_start|>assistant\n" in tok.decode(turn2)


def test_a_role_the_template_refuses_is_rendered_as_the_user_s(qwen3_dir):
    template = ChatTemplate(tokenizer(qwen3_dir, REFUSES_TOOL))
    tool = template.after_answer(Message("tool", "Not correct."))
    assert tool == template.after_answer(Message("user", "Not correct."))


def test_a_template_that_rerenders_earlier_messages_is_refused_with_the_fix(qwen3_dir):
    template = ChatTemplate(tokenizer(qwen3_dir, RERENDERS))
    with pytest.raises(ValueError, match="renders earlier messages differently.*ChatML"):
        template.after_answer(Message("user", "Not correct."))
