from __future__ import annotations

import random
import re
import threading
from pathlib import Path

import pytest
import torch

from gyms import Task
from trainer.policies import make_policy
from trainer.policies.profiles import A3_QWEN3_4B, BUILTIN, H100_QWEN3_4B, load_profile
from trainer.policies.learner import Learner
from trainer.policies.model_policy import ModelPolicy
from trainer.policies.torch_engine import TorchEngine
from trainer.policies.torch_lm import hf_policy, tiny_policy
from trainer.types import Group, Request, Trajectory, Turn

TASK = Task("t/0", "2 + 2 = ", reference="4")


def one_group(policy: ModelPolicy, version: int, rewards: list[float]) -> Group:
    gens = policy.generate([Request.first(TASK)] * len(rewards), version)
    trajs = []
    for gen, r in zip(gens, rewards):
        traj = Trajectory(TASK.id, 0, version, [Turn(gen, reward=r)])
        trajs.append(traj)
    mean = sum(rewards) / len(rewards)
    return Group(0, TASK.id, version, trajs, [r - mean for r in rewards])


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama and a character tokenizer, built in code (nothing is downloaded)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("hf-tiny")
    vocab = {chr(i): i - 32 for i in range(32, 127)}
    for special in ("\n", "<unk>", "</s>"):
        vocab[special] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.decoder = decoders.Fuse()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", unk_token="<unk>").save_pretrained(path)
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, eos_token_id=vocab["</s>"],
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(path)
    return path


@pytest.fixture(params=["tiny", "hf"])
def policy(request, hf_dir) -> ModelPolicy:
    torch.manual_seed(0)
    if request.param == "tiny":
        return tiny_policy(seed=0, max_new_tokens=8)
    return hf_policy(str(hf_dir), max_new_tokens=8, max_len=64)


def test_behaviour_logprobs_match_the_learner_before_training(policy):
    group = one_group(policy, 0, [1.0, 0.0, 0.0, 1.0])
    gen = group.trajectories[0].turns[0].generation
    assert len(gen.logprobs) == len(gen.response_tokens) > 0
    ids, mask, behaviour, _ = policy.learner.batch([(*group.trajectories[0].sequence(), 1.0)])
    learner = policy.learner.token_logprobs(policy.learner.model.eval(), ids)
    assert torch.allclose(learner[mask.bool()], behaviour[mask.bool()], atol=1e-4)


def test_a_train_step_moves_the_learner_not_the_published_engine(policy):
    before = [p.detach().clone() for p in policy.learner.model.parameters()]
    stats = policy.train_step([one_group(policy, 0, [1.0, 0.0, 0.0, 1.0])])
    assert stats["tokens"] > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.learner.model.parameters()))
    engine0 = policy.engine.versions[0]
    assert all(torch.equal(a, b) for a, b in zip(before, engine0.parameters()))
    assert policy.update_weights() == 1
    assert all(torch.equal(a, b) for a, b in zip(policy.learner.model.parameters(), policy.engine.versions[1].parameters()))


def test_pinned_versions_stay_until_released():
    policy = tiny_policy(seed=0, max_new_tokens=4)
    pinned = policy.acquire()
    policy.update_weights()
    policy.update_weights()
    assert set(policy.engine.versions) == {0, 2}  # 1 was never pinned
    policy.generate([Request.first(TASK)], pinned)  # the old version still serves
    policy.release(pinned)
    assert set(policy.engine.versions) == {2}


GATE_S = 30.0  # a bound for a broken build only: each wait ends as soon as its event happens


class PausedPublication(ModelPolicy):
    """Pauses `update_weights` between the new engine's insert and the version bump (the bump
    sets `version`) until `resume` is set, and says so with `paused`."""

    def __init__(self) -> None:
        from trainer.policies.tiny_model import ByteTokenizer, TinyLM

        torch.manual_seed(0)
        model = TinyLM(ByteTokenizer.vocab_size, 16, 1, 2, 64)
        self.paused, self.resume = threading.Event(), threading.Event()
        learner = Learner(model, ByteTokenizer(), logits=lambda m, ids: m(ids), max_len=64, max_new_tokens=4)
        super().__init__("tiny", learner, TorchEngine(learner))

    @property
    def version(self) -> int:
        return self._version

    @version.setter
    def version(self, value: int) -> None:
        if value > 0:
            self.paused.set()
            self.resume.wait(GATE_S)
        self._version = value


class Announcing:
    """The policy's lock, setting `asked` when the thread named `who` asks for it (before it
    may block), so a test knows that thread has reached the lock."""

    def __init__(self, lock, who: str, asked: threading.Event) -> None:
        self.lock, self.who, self.asked = lock, who, asked

    def __enter__(self):
        if threading.current_thread().name == self.who:
            self.asked.set()
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


def test_a_release_while_a_version_is_published_never_frees_it():
    policy = PausedPublication()
    pinned = policy.acquire()
    policy._lock = Announcing(policy._lock, "releaser", policy.resume)  # resume once it is at the lock
    publisher = threading.Thread(target=policy.update_weights, name="publisher")
    publisher.start()
    assert policy.paused.wait(GATE_S)  # engine 1 inserted, version still 0

    def release() -> None:
        try:
            policy.release(pinned)  # frees what is neither pinned nor newest
        finally:
            policy.resume.set()  # it finished without reaching the lock: let the publisher go on

    releaser = threading.Thread(target=release, name="releaser")
    releaser.start()
    publisher.join(GATE_S)
    releaser.join(GATE_S)
    assert policy.version == 1 and set(policy.engine.versions) == {1}
    [gen] = policy.generate([Request.first(TASK)], policy.acquire())
    assert gen.version == 1


class OneSetOfWeights(TorchEngine):
    """A torch engine that holds one set of weights, as vLLM's does."""

    holds_one_version = True

    def load(self, weights: torch.nn.Module, version: int) -> None:
        self.versions = {version: weights}


class Swaps:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def engine_call(self, start: float, end: float, version: int) -> None:
        self.seen.append(("engine_call", version))

    def weight_sync(self, kind: str, start: float, end: float, version: int) -> None:
        self.seen.append((kind, version))


def test_any_engine_of_one_version_drains_then_swaps():
    """The rule lives in the policy: an engine only says it holds one version (the vllm policy's
    own test runs it on the real engine)."""
    torch.manual_seed(0)
    learner = tiny_policy(seed=0, max_new_tokens=4).learner
    policy = ModelPolicy("tiny", learner, OneSetOfWeights(learner))
    swaps = Swaps()
    with policy.reporting_to(swaps):
        running = policy.acquire()
        assert policy.update_weights() == 1 and set(policy.engine.versions) == {0}  # still serving the pinned one
        [gen] = policy.generate([Request.first(TASK)], running)
        assert gen.version == 0 and swaps.seen == [("engine_call", 0)]
        got: list[int] = []
        waiter = threading.Thread(target=lambda: got.append(policy.acquire()))
        waiter.start()  # a new group waits for the swap
        policy.release(running)  # the last old group ends: the swap happens here
        waiter.join(GATE_S)
        assert got == [1] and set(policy.engine.versions) == {1}
        assert swaps.seen[1:] == [("drain", 1), ("weight_load", 1)]
    policy.release(1)
    assert policy.update_weights() == 2 and set(policy.engine.versions) == {2}  # nothing pinned: loaded at once


def test_grpo_steps_raise_the_probability_of_rewarded_answers():
    torch.manual_seed(0)
    policy = tiny_policy(seed=0, lr=3e-3, max_new_tokens=1)
    request = Request.first(TASK)

    def p_target() -> float:
        ids = torch.tensor([policy.learner.tokenizer.encode(TASK.prompt) + [ord("4")]])
        return float(policy.learner.token_logprobs(policy.learner.model.eval(), ids)[0, -1].exp().detach())

    start = p_target()
    for _ in range(20):
        gens = policy.generate([request] * 16, policy.version)
        rewards = [1.0 if g.text == "4" else 0.0 for g in gens]
        if not any(rewards):
            gens[0] = type(gens[0])("4", gens[0].prompt_tokens, [ord("4")], [gens[0].logprobs[0]], policy.version)
            rewards[0] = 1.0
        mean = sum(rewards) / len(rewards)
        trajs = [Trajectory(TASK.id, 0, policy.version, [Turn(g, reward=r)])
                 for g, r in zip(gens, rewards)]  # fmt: skip
        policy.train_step([Group(0, TASK.id, policy.version, trajs, [r - mean for r in rewards])])
        policy.update_weights()
    assert p_target() > start + 0.2


def test_hf_policy_names_a_bad_path(tmp_path):
    # not a Hub repo id (transformers' "Repo id must be in the form ..."): nothing is downloaded
    with pytest.raises(ValueError, match="^no model directory at /nonexistent/model: pass a local directory holding "
                       "a saved transformers model .*nothing is downloaded at run time$"):  # fmt: skip
        hf_policy("/nonexistent/model")
    with pytest.raises(ValueError, match=f"^{re.escape(str(tmp_path))} holds no config.json, so no saved transformers model: pass"):
        hf_policy(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError):  # transformers' own word on a config that is not a model's
        hf_policy(str(tmp_path))


def test_make_policy_rejects_unknown_names():
    with pytest.raises(ValueError, match="Installed policies: hf, replay, tiny, vllm; for example replay, tiny:"):
        make_policy("gpt", None, H100_QWEN3_4B)  # type: ignore[arg-type]


def test_profiles_reproduce_their_published_figures():
    # A3 setup 1 and setup 2 actor_train times are fitted exactly
    assert A3_QWEN3_4B.actor_train_s(32 * (256 + 768)) == pytest.approx(9.9)
    assert A3_QWEN3_4B.actor_train_s(256 * (256 + 1536)) == pytest.approx(81.1)
    # generation: setup 2's sync batch throughput-bound, setup 1's latency-bound (its longest response alone)
    assert A3_QWEN3_4B.generate_s(256 * 1365) == pytest.approx(97.2)
    assert A3_QWEN3_4B.decode_s_per_token * 1004 == pytest.approx(18.7)
    assert H100_QWEN3_4B.generate_s(16 * 512) == pytest.approx(1.5)
    assert H100_QWEN3_4B.actor_train_s(16 * 768) == pytest.approx(2.0)
    for profile in BUILTIN.values():
        assert profile.name in BUILTIN and (profile.sources or profile.name == "zero")


def test_profiles_load_by_name_or_file(tmp_path):
    assert load_profile("a3-qwen3-4b") is A3_QWEN3_4B
    H100_QWEN3_4B.save(tmp_path / "p.json")
    assert load_profile(str(tmp_path / "p.json")) == H100_QWEN3_4B
    with pytest.raises(ValueError, match="unknown hardware profile 'b200'"):
        load_profile("b200")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="is not a hardware profile"):
        load_profile(str(tmp_path / "bad.json"))


def test_replay_policy_picks_candidates_with_the_given_skill():
    from toy_gyms import ToyGym

    from trainer.policies.replay import ReplayPolicy

    gym = ToyGym()
    policy = ReplayPolicy(gym, load_profile("zero"), skill=0.25, seed=random.Random(0).randint(0, 99))
    task = gym.tasks()[0]
    texts = [g.text for g in policy.generate([Request.first(task)] * 400, 0)]
    assert 0.15 < texts.count("pass") / 400 < 0.35


def test_the_qwen3_4b_shape_has_qwen3_4b_s_parameter_count():
    """`harness tiny-model --shape qwen3-4b` times a profile at a real model's cost: its config must
    be Qwen3-4B's (4.02 B parameters, tied embeddings), counted here on the meta device."""
    from transformers import Qwen3ForCausalLM

    from trainer.policies.tiny_hf import SHAPES, model_config, tokenizer

    config = model_config(tokenizer(), **SHAPES["qwen3-4b"])
    with torch.device("meta"):
        model = Qwen3ForCausalLM(config)
    assert sum(p.numel() for p in model.parameters()) == 4_022_468_096
    assert (config.vocab_size, config.dtype) == (151936, torch.bfloat16)


def test_the_kl_reference_is_the_model_after_the_format_warm_up():
    """RL starts from the warmed-up model: a reference taken before the warm-up would pull the
    policy back out of the format it was taught."""
    policy = tiny_policy(seed=0, kl_coef=0.1)
    before = [p.clone() for p in policy.learner.reference.parameters()]
    policy.supervised_warmup([("What is 1 + 1?", "\\boxed{2}")], steps=3, batch=4)
    reference, model = policy.learner.reference, policy.learner.model
    assert any(not torch.equal(a, b) for a, b in zip(before, reference.parameters()))  # it moved with the model
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), reference.parameters()))
    assert not any(p.requires_grad for p in reference.parameters())
    assert tiny_policy(seed=0).learner.reference is None  # no KL term, no reference
