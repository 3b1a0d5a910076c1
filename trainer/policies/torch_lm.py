"""Policies backed by a real torch language model: `tiny` (built in code) and `hf` (transformers).

The learner and the rollout engine are separate copies of the model, as in a real system; the
engine keeps one copy per live weight version (at most max_staleness + 1 are pinned at once),
and `update_weights` copies the learner's weights into a new engine version.
Sampling recomputes the full sequence each token (no KV cache): simple, and fast enough for
the small models these backends run on CPU; large-model rollouts belong to a serving engine.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch.nn import functional as F

from trainer.losses import clip_stats, grpo_loss, ratio_and_weights
from trainer.policies import options
from trainer.policies.base import Policy
from trainer.types import Generation, Group, Request

if TYPE_CHECKING:
    from trainer.policies.registry import PolicyContext


class Tokenizer(Protocol):
    eos_id: int
    pad_id: int

    def encode(self, text: str) -> list[int]: ...
    def decode(self, tokens: list[int]) -> str: ...
    def prompt(self, text: str) -> list[int]:
        """The tokens the model is prompted with: `text` in the model's chat format, if it has one."""
        ...


LogitsFn = Callable[[Any, torch.Tensor], torch.Tensor]


class TorchPolicy(Policy):
    def __init__(
        self,
        name: str,
        model: torch.nn.Module,
        tokenizer: Tokenizer,
        *,
        logits: LogitsFn,
        max_len: int,
        max_new_tokens: int = 32,
        temperature: float = 1.0,
        lr: float = 1e-3,
        clip_eps: float = 0.2,
        kl_coef: float = 0.0,
        tis_cap: float | None = 2.0,
        level: str = "token",
        minibatches: int = 4,
        epochs: int = 1,
        grad_accum: int = 1,
        drop_zero_advantage: bool = True,
        device: str = "cpu",
        seed: int = 0,
    ) -> None:
        super().__init__()
        options.checked(
            max_new_tokens=max_new_tokens, temperature=temperature, lr=lr, clip_eps=clip_eps, kl_coef=kl_coef,
            tis_cap=tis_cap, level=level, minibatches=minibatches, epochs=epochs, grad_accum=grad_accum,
            drop_zero_advantage=drop_zero_advantage,
        )  # fmt: skip
        if max_new_tokens >= max_len:
            raise ValueError(
                f"policy option max_new_tokens={max_new_tokens} leaves no room for the prompt in the model's "
                f"{max_len} tokens of context: use fewer"
            )
        self.name = name
        self.tokenizer = tokenizer
        self.device = torch.device(device)
        self.learner = model.to(self.device)
        self._logits = logits
        self.max_len = max_len
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.loss_options = {"clip_eps": clip_eps, "kl_coef": kl_coef, "tis_cap": tis_cap, "level": level}
        # Each train step makes minibatches x epochs optimizer steps against one proximal policy,
        # so the clip bounds how far the whole step moves it.
        self.minibatches = minibatches
        self.epochs = epochs
        self.grad_accum = grad_accum  # micro-batches per minibatch, their gradients summed: less memory, same step
        self.drop_zero_advantage = drop_zero_advantage
        self._shuffle = torch.Generator().manual_seed(seed)
        self.optimizer = torch.optim.AdamW(self.learner.parameters(), lr=lr)
        self.reference = self._frozen_copy() if kl_coef else None
        self._generator = torch.Generator(device=self.device).manual_seed(seed)
        self._start_engine()

    def _start_engine(self) -> None:
        """The rollout engine at version 0: here a frozen copy per live version."""
        self._engines = {0: self._frozen_copy()}  # version -> rollout weights, under `_lock`

    def _refresh_engine(self) -> None:
        """Give the engine the learner's weights as the current version (before any rollout)."""
        with self._lock:
            self._engines[self.version] = self._frozen_copy()

    def _frozen_copy(self) -> torch.nn.Module:
        clone = copy.deepcopy(self.learner).eval()
        for p in clone.parameters():
            p.requires_grad_(False)
        return clone

    # -- rollout ---------------------------------------------------------------------------

    @torch.no_grad()
    def generate(self, requests: Sequence[Request], version: int) -> list[Generation]:
        # One engine: concurrent callers take turns (one call each, not batched together), and
        # holding `_lock` keeps the version's weights from being freed mid-call.
        with self._lock, self._engine_call(version):
            engine = self._engines[version]
            results: dict[int, Generation] = {}
            # Requests with the same prompt (a GRPO group) are sampled as one batch.
            by_prompt: dict[str, list[int]] = {}
            for i, r in enumerate(requests):
                by_prompt.setdefault(r.prompt, []).append(i)
            for prompt, indices in by_prompt.items():
                for i, gen in zip(indices, self._sample(engine, version, prompt, len(indices))):
                    results[i] = gen
            return [results[i] for i in range(len(requests))]

    def _sample(self, engine: torch.nn.Module, version: int, prompt: str, n: int) -> list[Generation]:
        budget = self.max_len - self.max_new_tokens
        prompt_tokens = self.tokenizer.prompt(prompt)[-budget:]  # keep the end of long conversations
        ids = torch.tensor([prompt_tokens] * n, device=self.device)
        tokens: list[list[int]] = [[] for _ in range(n)]
        logprobs: list[list[float]] = [[] for _ in range(n)]
        alive = torch.ones(n, dtype=torch.bool, device=self.device)
        for _ in range(self.max_new_tokens):
            logp = F.log_softmax(self._logits(engine, ids)[:, -1] / self.temperature, dim=-1)
            nxt = torch.multinomial(logp.exp(), 1, generator=self._generator).squeeze(1)
            for row in alive.nonzero().flatten().tolist():
                tokens[row].append(int(nxt[row]))
                logprobs[row].append(float(logp[row, nxt[row]]))
            alive &= nxt != self.tokenizer.eos_id
            if not alive.any():
                break
            ids = torch.cat([ids, nxt.unsqueeze(1)], dim=1)
        return [
            Generation(self.tokenizer.decode(t), prompt_tokens, t, lp, version) for t, lp in zip(tokens, logprobs)
        ]

    # -- learning --------------------------------------------------------------------------

    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        rows, stats = self._rows(groups)
        if not rows:  # nothing to learn from: no optimizer step, and the same keys as a step
            nothing = clip_stats(torch.zeros(0, 0), torch.zeros(0), torch.zeros(0, 0), self.loss_options["clip_eps"])
            return {"loss": 0.0, "tokens": 0.0, "optimizer_steps": 0.0, **nothing, **stats}
        ids, mask, behaviour, advantages = self._batch(rows)
        # No dropout: the ratio must compare weights, not dropout masks (the engine samples in eval mode too).
        self.learner.eval()
        with torch.no_grad():
            proximal = self._token_logprobs(self.learner, ids)
            ref_logp = self._token_logprobs(self.reference, ids) if self.reference is not None else None
        losses, seen = [], []
        for _ in range(self.epochs):
            order = torch.randperm(len(rows), generator=self._shuffle)
            for idx in order.tensor_split(min(self.minibatches, len(rows))):
                self.optimizer.zero_grad(set_to_none=True)
                loss = 0.0
                for part in idx.tensor_split(min(self.grad_accum, len(idx))):
                    logp = self._token_logprobs(self.learner, ids[part])
                    part_loss = grpo_loss(
                        logp, behaviour[part], advantages[part], mask[part], proximal_logp=proximal[part],
                        ref_logp=None if ref_logp is None else ref_logp[part], **self.loss_options,
                    ) * self._share(part, idx, mask)  # fmt: skip
                    part_loss.backward()
                    loss += float(part_loss.detach())
                    ratio, _ = ratio_and_weights(logp.detach(), behaviour[part], proximal[part],
                                                 self.loss_options["tis_cap"])  # fmt: skip
                    seen.append((ratio, advantages[part], mask[part]))
                torch.nn.utils.clip_grad_norm_(self.learner.parameters(), 1.0)
                self.optimizer.step()
                losses.append(loss)
        ratios, advs, masks = (torch.cat(parts) for parts in zip(*seen))
        return {
            "loss": sum(losses) / len(losses),
            "tokens": float(mask.sum()),
            "optimizer_steps": float(len(losses)),
            **clip_stats(ratios, advs, masks, self.loss_options["clip_eps"]),
            **stats,
        }

    def _share(self, part: torch.Tensor, minibatch: torch.Tensor, mask: torch.Tensor) -> float:
        """The weight of a micro-batch's mean loss in its minibatch's: its share of the trained
        tokens (level token) or of the sequences (level sequence), so the summed gradients are
        the whole minibatch's."""
        if self.loss_options["level"] == "token":
            return float(mask[part].sum() / mask[minibatch].sum().clamp(min=1))
        return len(part) / len(minibatch)

    def _rows(self, groups: Sequence[Group]) -> tuple[list[tuple[Generation, float]], dict[str, float]]:
        """One row (generation, advantage) per turn. A group whose advantages are all zero carries
        no signal; with drop_zero_advantage it is left out of the loss and its normaliser (DAPO's
        dynamic sampling, without resampling)."""
        rows: list[tuple[Generation, float]] = []
        zero_groups = tokens = left_out = 0
        for group in groups:
            mine = [(turn.generation, a) for traj, a in zip(group.trajectories, group.advantages) for turn in traj.turns]
            count = sum(len(g.response_tokens) for g, _ in mine)
            tokens += count
            if not any(group.advantages):
                zero_groups += 1
                if self.drop_zero_advantage:
                    left_out += count
                    continue
            rows += mine
        return rows, {
            "groups_zero_advantage": float(zero_groups),
            "tokens_left_out_fraction": left_out / tokens if tokens else 0.0,
        }

    def _batch(self, rows: list[tuple[Generation, float]]) -> tuple[torch.Tensor, ...]:
        """Right-padded sequences; mask and behaviour logprobs aligned to predicted tokens."""
        width = max(len(g.prompt_tokens) + len(g.response_tokens) for g, _ in rows)
        ids = torch.full((len(rows), width), self.tokenizer.pad_id, dtype=torch.long)
        mask = torch.zeros(len(rows), width - 1)
        behaviour = torch.zeros(len(rows), width - 1)
        for i, (g, _) in enumerate(rows):
            seq = g.prompt_tokens + g.response_tokens
            ids[i, : len(seq)] = torch.tensor(seq)
            start = len(g.prompt_tokens) - 1  # position whose prediction is the first response token
            mask[i, start : start + len(g.response_tokens)] = 1
            behaviour[i, start : start + len(g.response_tokens)] = torch.tensor(g.logprobs)
        advantages = torch.tensor([a for _, a in rows], dtype=torch.float32)
        return ids.to(self.device), mask.to(self.device), behaviour.to(self.device), advantages.to(self.device)

    def _token_logprobs(self, model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(self._logits(model, ids)[:, :-1] / self.temperature, dim=-1)
        return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)

    def supervised_warmup(self, pairs: Sequence[tuple[str, str]], steps: int, batch: int = 32) -> float:
        """Teach the model a format by cross-entropy on (prompt, response) pairs; returns the last loss."""
        rng = torch.Generator().manual_seed(0)
        loss = torch.tensor(0.0)
        for _ in range(steps):
            picks = torch.randint(len(pairs), (batch,), generator=rng).tolist()
            rows = []
            for k in picks:
                prompt, response = pairs[k]
                p = self.tokenizer.prompt(prompt)[-(self.max_len - self.max_new_tokens) :]
                r = self.tokenizer.encode(response)[: self.max_new_tokens - 1] + [self.tokenizer.eos_id]
                rows.append((Generation(response, p, r, [0.0] * len(r), self.version), 0.0))
            ids, mask, _, _ = self._batch(rows)
            loss = -(self._token_logprobs(self.learner, ids) * mask).sum() / mask.sum()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        self._refresh_engine()
        return float(loss.detach())

    # -- weight sync -----------------------------------------------------------------------

    def update_weights(self) -> int:
        engine = self._frozen_copy()
        with self._lock:  # the insert and the bump are one step: drop_unused sees both or neither
            self._engines[self.version + 1] = engine
            self.version += 1
            self.drop_unused()
            return self.version

    def drop_unused(self) -> None:
        with self._lock:
            keep = set(self._pins) | {self.version}
            for v in [v for v in self._engines if v not in keep]:
                del self._engines[v]

    def describe(self) -> dict[str, str]:
        params = sum(p.numel() for p in self.learner.parameters())
        return {**super().describe(), "parameters": str(params), "device": str(self.device)}


def tiny_policy(
    *, dim: int = 64, layers: int = 2, heads: int = 4, max_len: int = 256, seed: int = 0, **options: Any
) -> TorchPolicy:
    from trainer.policies.tiny_model import ByteTokenizer, TinyLM

    torch.manual_seed(seed)
    model = TinyLM(ByteTokenizer.vocab_size, dim, layers, heads, max_len)
    return TorchPolicy("tiny", model, ByteTokenizer(), logits=lambda m, ids: m(ids), max_len=max_len, seed=seed, **options)


class HFTokenizer:
    """Adapts a transformers tokenizer to the small protocol the policy needs."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.eos_id = tok.eos_token_id
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, tokens: list[int]) -> str:
        return self.tok.decode(tokens, skip_special_tokens=True)

    def prompt(self, text: str) -> list[int]:
        if not self.tok.chat_template:
            return self.encode(text)
        ids = self.tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
        return list(ids["input_ids"] if isinstance(ids, Mapping) else ids)


def hf_policy(path: str, *, device: str = "cpu", seed: int = 0, max_len: int | None = None, **options: Any) -> TorchPolicy:
    """Any transformers causal LM saved at `path` (a local directory: nothing is downloaded)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if device.startswith("npu"):
        import torch_npu  # noqa: F401  (registers the npu device with torch)
    torch.manual_seed(seed)
    try:
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except OSError as exc:
        raise ValueError(f"cannot load a transformers model from {path!r}: {exc}") from exc
    limit = max_len or min(getattr(model.config, "max_position_embeddings", 2048), 4096)
    return TorchPolicy(
        "hf", model, HFTokenizer(tok), logits=lambda m, ids: m(input_ids=ids).logits,
        max_len=limit, device=device, seed=seed, **options,
    )  # fmt: skip


def tiny_from_spec(rest: str, context: PolicyContext) -> TorchPolicy:
    """`tiny[:OPTIONS]` (registry.py)."""
    context.on_real_hardware("tiny")
    return tiny_policy(seed=context.seed, **options.torch_only(context.options(rest)))


def hf_from_spec(rest: str, context: PolicyContext) -> TorchPolicy:
    """`hf:PATH[@DEVICE][:OPTIONS]` (registry.py); the device defaults to cpu."""
    context.on_real_hardware("hf")
    path, device, text = options.location(rest, "hf")
    return hf_policy(path, device=device or "cpu", seed=context.seed, **options.torch_only(context.options(text)))
