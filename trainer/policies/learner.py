"""The learner of a real-model policy: a torch language model, its optimizer, the GRPO step with
the project's loss (trainer/losses.py) and the logprobs it is computed with.

Engines read what generation shares with training from here: the tokenizer, a request's prompt
ids (`prompt_ids`: the conversation's token sequence, never cut), `max_new_tokens` and the
temperature, so that an engine's behaviour logprobs are of the distribution the learner scores. They take the weights as copies
(`frozen_copy`, `weights`), so the learner can train on while an engine generates.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
from torch.nn import functional as F

from trainer.losses import clip_stats, grpo_loss, ratio_and_weights
from trainer.policies import options
from trainer.types import Group, Message, Request


class Template(Protocol):
    """A chat template at the token level (trainer/policies/chat.py)."""

    def first(self, text: str) -> list[int]:
        """The first prompt: `text` as the user's message, then the generation prompt."""
        ...

    def after_answer(self, message: Message) -> list[int]:
        """What follows an answer's end-of-sequence token: `message`, then the generation prompt."""
        ...


class Tokenizer(Protocol):
    eos_id: int
    pad_id: int
    template: Template

    def encode(self, text: str) -> list[int]: ...
    def decode(self, tokens: list[int]) -> str: ...


LogitsFn = Callable[[Any, torch.Tensor], torch.Tensor]  # (model, token ids) -> logits
# A training row: a trajectory's token ids, its trained spans (start, behaviour logprobs), its advantage.
Row = tuple[list[int], list[tuple[int, list[float]]], float]


class Learner:
    def __init__(
        self,
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
        self.tokenizer = tokenizer
        self.device = torch.device(device)
        self.model = model.to(self.device)
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
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.reference = self.frozen_copy() if kl_coef else None

    # -- what engines take -------------------------------------------------------------------

    def prompt_ids(self, request: Request) -> list[int] | None:
        """The request's prompt ids: the first prompt in the chat template, or the previous turn's
        prompt and response ids as sampled, closed with the end-of-sequence token if the response
        ran out of tokens before it, then the feedback and the generation prompt. None where they
        and `max_new_tokens` would outgrow the context: a prompt is never cut."""
        previous = request.previous
        if previous is None:
            ids = self.tokenizer.template.first(request.messages[0].content)
        else:
            eos = self.tokenizer.eos_id
            closed = previous.response_tokens[-1:] == [eos]
            ids = [*previous.prompt_tokens, *previous.response_tokens, *([] if closed else [eos]),
                   *self.tokenizer.template.after_answer(request.messages[-1])]  # fmt: skip
        return ids if len(ids) + self.max_new_tokens <= self.max_len else None

    def next_token_logprobs(self, model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
        """Log-probabilities of each row's next token under `model`, at the sampling temperature."""
        return F.log_softmax(self._logits(model, ids)[:, -1] / self.temperature, dim=-1)

    def frozen_copy(self) -> torch.nn.Module:
        clone = copy.deepcopy(self.model).eval()
        for p in clone.parameters():
            p.requires_grad_(False)
        return clone

    def weights(self) -> list[tuple[str, torch.Tensor]]:
        """A copy of the model's tensors by name."""
        return [(name, t.detach().clone()) for name, t in self.model.state_dict().items()]

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    # -- learning --------------------------------------------------------------------------

    def train_step(self, groups: Sequence[Group]) -> dict[str, float]:
        rows, stats = self._rows(groups)
        if not rows:  # nothing to learn from: no optimizer step, and the same keys as a step
            nothing = clip_stats(torch.zeros(0, 0), torch.zeros(0), torch.zeros(0, 0), self.loss_options["clip_eps"])
            return {"loss": 0.0, "tokens": 0.0, "learner_tokens": 0.0, "optimizer_steps": 0.0, **nothing, **stats}
        ids, mask, behaviour, advantages = self.batch(rows)
        # No dropout: the ratio must compare weights, not dropout masks (the engine samples in eval mode too).
        self.model.eval()
        with torch.no_grad():
            proximal = self.token_logprobs(self.model, ids)
            ref_logp = self.token_logprobs(self.reference, ids) if self.reference is not None else None
        losses, seen = [], []
        for _ in range(self.epochs):
            order = torch.randperm(len(rows), generator=self._shuffle)
            for idx in order.tensor_split(min(self.minibatches, len(rows))):
                self.optimizer.zero_grad(set_to_none=True)
                loss = 0.0
                for part in idx.tensor_split(min(self.grad_accum, len(idx))):
                    logp = self.token_logprobs(self.model, ids[part])
                    part_loss = grpo_loss(
                        logp, behaviour[part], advantages[part], mask[part], proximal_logp=proximal[part],
                        ref_logp=None if ref_logp is None else ref_logp[part], **self.loss_options,
                    ) * self._share(part, idx, mask)  # fmt: skip
                    part_loss.backward()
                    loss += float(part_loss.detach())
                    ratio, _ = ratio_and_weights(logp.detach(), behaviour[part], proximal[part],
                                                 self.loss_options["tis_cap"])  # fmt: skip
                    seen.append((ratio, advantages[part], mask[part]))
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.optimizer.step()
                losses.append(loss)
        ratios, advs, masks = (torch.cat(parts) for parts in zip(*seen))
        return {
            "loss": sum(losses) / len(losses),
            "tokens": float(mask.sum()),
            # every token the learner runs over once per pass (prompt, feedback and template too)
            "learner_tokens": float(sum(len(seq) for seq, _, _ in rows)),
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

    def _rows(self, groups: Sequence[Group]) -> tuple[list[Row], dict[str, float]]:
        """One row per trajectory: its one token sequence, the spans of it to train (each turn's
        response) and its advantage. A group whose advantages are all zero carries no signal;
        with drop_zero_advantage it is left out of the loss and its normaliser (DAPO's dynamic
        sampling, without resampling)."""
        rows: list[Row] = []
        zero_groups = tokens = left_out = 0
        for group in groups:
            mine = [(*traj.sequence(), a) for traj, a in zip(group.trajectories, group.advantages)]
            mine = [row for row in mine if row[0]]  # a trajectory whose first turn did not fit has no tokens
            count = sum(len(logprobs) for _, spans, _ in mine for _, logprobs in spans)
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

    def batch(self, rows: Sequence[Row]) -> tuple[torch.Tensor, ...]:
        """Right-padded sequences; mask and behaviour logprobs aligned to predicted tokens: the
        mask is 1 on each trained span's tokens (the responses) and 0 on prompt, feedback,
        template and padding."""
        width = max(len(ids) for ids, _, _ in rows)
        ids = torch.full((len(rows), width), self.tokenizer.pad_id, dtype=torch.long)
        mask = torch.zeros(len(rows), width - 1)
        behaviour = torch.zeros(len(rows), width - 1)
        for i, (seq, spans, _) in enumerate(rows):
            ids[i, : len(seq)] = torch.tensor(seq)
            for start, logprobs in spans:
                first = start - 1  # the position whose prediction is the span's first token
                mask[i, first : first + len(logprobs)] = 1
                behaviour[i, first : first + len(logprobs)] = torch.tensor(logprobs)
        advantages = torch.tensor([a for _, _, a in rows], dtype=torch.float32)
        return ids.to(self.device), mask.to(self.device), behaviour.to(self.device), advantages.to(self.device)

    def token_logprobs(self, model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
        """Each predicted token's log-probability under `model`, at the sampling temperature."""
        logp = F.log_softmax(self._logits(model, ids)[:, :-1] / self.temperature, dim=-1)
        return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)

    def supervised_warmup(self, pairs: Sequence[tuple[str, str]], steps: int, batch: int = 32) -> float:
        """Teach the model a format by cross-entropy on (prompt, response) pairs; returns the last loss.
        The KL reference, if any, becomes the warmed-up model: RL starts from it, and a penalty
        toward the model before the warm-up would pull the policy back out of the format."""
        rng = torch.Generator().manual_seed(0)
        budget = self.max_len - self.max_new_tokens
        prompts = [self.tokenizer.template.first(prompt) for prompt, _ in pairs]
        fitting = [k for k, ids in enumerate(prompts) if len(ids) <= budget]
        if not fitting:
            raise ValueError(f"no format example's prompt fits the model's context ({budget} tokens besides the response)")
        loss = torch.tensor(0.0)
        for _ in range(steps):
            picks = torch.randint(len(fitting), (batch,), generator=rng).tolist()
            rows: list[Row] = []
            for k in (fitting[p] for p in picks):
                r = self.tokenizer.encode(pairs[k][1])[: self.max_new_tokens - 1] + [self.tokenizer.eos_id]
                rows.append((prompts[k] + r, [(len(prompts[k]), [0.0] * len(r))], 0.0))  # `batch` reads the span only
            ids, mask, _, _ = self.batch(rows)
            loss = -(self.token_logprobs(self.model, ids) * mask).sum() / mask.sum()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        if self.reference is not None:
            self.reference = self.frozen_copy()
        return float(loss.detach())
