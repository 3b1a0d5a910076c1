"""Multi-turn episodes driven turn by turn, and the checks of token-in/token-out that both the
torch policies (tests/test_multi_turn.py) and the vLLM engine (tests/test_vllm_policy.py) must
pass: each turn's prompt ids are the previous turn's prompt and response ids as sampled, the
end-of-sequence token where the response lacked it, then the template's ids of the feedback;
and the learner's logprobs over the whole sequence are the engine's on every trained token."""

from __future__ import annotations

import torch

from gyms import Gym, Task
from trainer.policies.model_policy import ModelPolicy
from trainer.rollout import CONTEXT_FULL
from trainer.types import Message, Request, Trajectory, Turn


def episode(policy: ModelPolicy, gym: Gym, task: Task) -> Trajectory:
    """One episode as trainer/rollout.py runs it (generate, step, the feedback as the next
    message), on one pinned version, without a pool or a clock."""
    version = policy.acquire()
    try:
        traj = Trajectory(task.id, 0, version, prompt=task.prompt)
        running = gym.open(task)
        request = Request.first(task, 0, 0)
        while True:
            [gen] = policy.generate([request], version)
            if gen.context_full:
                traj.turns.append(Turn(gen, CONTEXT_FULL))
                running.close()
                return traj
            result = running.step(gen.text)
            traj.turns.append(Turn(gen, result.observation, result.reward, result.outcome, gym.feedback_role))
            if result.done:
                running.close()
                return traj
            request = request.then(gen, Message(gym.feedback_role, result.observation))
    finally:
        policy.release(version)


def check_prompts_extend_the_sequence(policy: ModelPolicy, traj: Trajectory) -> None:
    """Turn k's prompt ids: turn k-1's prompt + response ids (+ EOS if it was not sampled) + the
    template's ids of the feedback message and the generation prompt."""
    tok = policy.learner.tokenizer
    for before, now in zip(traj.turns, traj.turns[1:]):
        a = before.generation
        closed = a.response_tokens[-1:] == [tok.eos_id]
        expected = [*a.prompt_tokens, *a.response_tokens, *([] if closed else [tok.eos_id]),
                    *tok.template.after_answer(Message(before.role, before.observation))]  # fmt: skip
        assert now.generation.prompt_tokens == expected
    traj.check_token_prefix()


def check_learner_matches_the_engine(policy: ModelPolicy, traj: Trajectory, atol: float = 1e-4) -> None:
    """The learner's logprobs on every trained token of the trajectory's one sequence are the
    behaviour logprobs the engine sampled them with."""
    ids, mask, behaviour, _ = policy.learner.batch([(*traj.sequence(), 1.0)])
    with torch.no_grad():
        learner = policy.learner.token_logprobs(policy.learner.model.eval(), ids)
    trained = mask.bool()
    assert int(trained.sum()) == sum(len(t.generation.response_tokens) for t in traj.turns)
    assert torch.allclose(learner[trained], behaviour[trained], atol=atol), float((learner - behaviour)[trained].abs().max())


def retokenize(policy: ModelPolicy) -> None:
    """Make `policy` build later prompts as a string-keeping trainer does: decode the conversation
    so far to text and encode it again, then append the feedback. The checks above must fail."""
    learner = policy.learner
    honest = learner.prompt_ids

    def prompt_ids(request: Request) -> list[int] | None:
        if request.previous is None:
            return honest(request)
        before = request.previous
        text = learner.tokenizer.decode(before.prompt_tokens + before.response_tokens)
        return learner.tokenizer.encode(text) + learner.tokenizer.template.after_answer(request.messages[-1])

    learner.prompt_ids = prompt_ids  # type: ignore[method-assign]
