"""Hardware profiles: how long the accelerator stages take, for the replay policy.

The replay policy runs the gym for real but only *emulates* generation, training and weight
sync by waiting the time a profile predicts, so a CPU machine can measure how well the
pipeline hides gym work. Each figure names its source; where a source gives no token counts,
the assumption used to turn a stage time into a per-token cost is written beside it.
Reports label these stages "emulated" and name the profile.

Model of a stage:
    generate       = generate_call_s + the larger of
                       generate_s_per_token * the batch's response tokens (throughput-bound: a full
                         batch's cost per token) + prefill_s_per_token * prompt tokens beyond the first turn's
                       decode_s_per_token * the longest response's tokens (latency-bound: one sequence
                         decodes a token at a time however empty the engine; None: not modelled)
    actor_train    = train_step_s    + train_s_per_token    * (prompt + response) tokens
    update_weights = update_weights_s
A multi-turn episode's prompt grows by each turn's response and feedback (trainer/rules/context.py);
the figures were measured on first-turn prompts (`prompt_tokens`), whose prefill is inside them,
so only the growth beyond that prompt is charged prefill, and training counts one sequence per
trajectory (its last turn's prompt and response).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from trainer.rules.context import prefill_tokens

# Why 0.1: prefill is compute-bound and batched over the whole prompt, roughly an order of magnitude
# faster per token than decoding, which is bound by memory bandwidth one token at a time.
PREFILL_SHARE = 0.1


@dataclass(frozen=True)
class HardwareProfile:
    name: str
    description: str
    generate_s_per_token: float
    train_s_per_token: float
    update_weights_s: float
    generate_call_s: float = 0.0
    train_step_s: float = 0.0
    response_tokens: int = 768  # typical response length the replay policy emulates
    prompt_tokens: int = 256
    sources: dict[str, str] = field(default_factory=dict)
    # Per prompt token beyond the first turn's. None: PREFILL_SHARE x generate_s_per_token (no
    # source publishes a prefill rate; profiles saved before this field read the same way).
    prefill_s_per_token: float | None = None
    # One sequence decoding alone, per token (trainer/rules/batching.py: a call lasts at least its
    # longest response at this rate). None: throughput-bound only, as profiles saved before this field.
    decode_s_per_token: float | None = None

    def __post_init__(self) -> None:
        if self.prefill_s_per_token is None:
            object.__setattr__(self, "prefill_s_per_token", PREFILL_SHARE * self.generate_s_per_token)

    def generate_s(self, response_tokens: int) -> float:
        return self.generate_call_s + self.generate_s_per_token * response_tokens

    def request_s(self, prompt_tokens: int, response_tokens: int) -> float:
        """One request's share of an engine call, beyond the call's fixed cost: its response
        tokens, and the prefill of its prompt tokens beyond the first turn's."""
        prefill = (self.prefill_s_per_token or 0.0) * prefill_tokens(prompt_tokens, self.prompt_tokens)
        return self.generate_s_per_token * response_tokens + prefill

    def decode_s(self, response_tokens: int) -> float:
        """A response decoding alone, at the per-sequence rate; 0 where the profile has none."""
        return (self.decode_s_per_token or 0.0) * response_tokens

    def actor_train_s(self, tokens: int) -> float:
        return self.train_step_s + self.train_s_per_token * tokens

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")


ASYNC_GRPO_ARTICLE = "AsyncGRPO: Eliminating GPU Idle Bubbles in Environment-Heavy RL Post-Training (article)"
NPU_STUDY = "[NPU][Spike] Fully-Async training: Qwen3-4B GRPO on NPU (slime-based study on Ascend A3)"

# Assumed token counts where the sources give none: prompts of 256 tokens, responses 3/4 of the cap.
H100_QWEN3_4B = HardwareProfile(
    name="h100-qwen3-4b",
    description="Qwen3-4B GRPO on H100 GPUs (emulated from published stage times)",
    # 16 rollouts in 1.5 s; with 512-token responses: 1.5 / (16 * 512)
    generate_s_per_token=1.5 / (16 * 512),
    # a gradient step on 16 rollouts in 2.0 s; 16 * (256 + 512) tokens
    train_s_per_token=2.0 / (16 * (256 + 512)),
    # not in the source: broadcasting 8 GB of bf16 weights over NVLink; assumed 0.5 s
    update_weights_s=0.5,
    response_tokens=512,
    sources={
        "generate": f"{ASYNC_GRPO_ARTICLE}: 'GPUs generate 16 rollouts in 1.5 seconds'; 512-token responses assumed",
        "train": f"{ASYNC_GRPO_ARTICLE}: 'compute gradients in 2.0 seconds' for those 16 rollouts",
        "update_weights": "assumption (no published figure): 0.5 s",
    },
)

# Two published points (gbs 32 at 1k and gbs 256 at 2k) fit train = a + b * tokens exactly.
_A3_TOKENS_SMALL = 32 * (256 + 768)  # 32,768
_A3_TOKENS_LARGE = 256 * (256 + 1536)  # 458,752
_A3_B = (81.1 - 9.9) / (_A3_TOKENS_LARGE - _A3_TOKENS_SMALL)
A3_QWEN3_4B = HardwareProfile(
    name="a3-qwen3-4b",
    description="Qwen3-4B GRPO on Ascend A3, TP 2, 2 actor + 2 rollout NPUs (emulated)",
    # Throughput: setup 2's sync batch (256 samples, responses up to 2k) took 97.2 s (its train_wait), a
    # throughput-bound call; responses assumed 2/3 of the cap (1,365 tokens, so the replay spread of
    # +-50 % reaches the cap): 97.2 / (256 * 1365)
    generate_s_per_token=97.2 / (256 * 1365),
    # One sequence alone: setup 1's sync batch (32 samples, up to 1k) took 18.7 s, a latency-bound call
    # as long as its longest response, whose expected length is 1,004 tokens (the largest of 32
    # draws of 683 x U(0.5, 1.5)): 18.7 / 1004, about 54 tokens/s per sequence
    decode_s_per_token=18.7 / 1004,
    train_s_per_token=_A3_B,
    train_step_s=9.9 - _A3_B * _A3_TOKENS_SMALL,
    update_weights_s=(1.7 + 1.6) / 2,
    response_tokens=768,
    sources={
        "generate": f"{NPU_STUDY}, setup 2 sync (32 x 8 samples, responses up to 2k): train_wait 97.2 s per "
        "batch, throughput-bound; responses assumed 2/3 of the cap",
        "decode": f"{NPU_STUDY}, setup 1 sync (8 x 4 samples, responses up to 1k): train_wait 18.7 s per batch, "
        "latency-bound: the longest of 32 responses (1,004 tokens expected) decoding alone",
        "train": f"{NPU_STUDY}: actor_train 9.9 s (setup 1, gbs 32, responses up to 1k) and "
        "81.1 s (setup 2, gbs 256, up to 2k); a two-point fit of fixed + per-token time",
        "update_weights": f"{NPU_STUDY}: 1.7 s (setup 1) and 1.6 s (setup 2); their mean",
    },
)

# No accelerator time at all: measures the pipeline's own overhead (benchmarks/).
ZERO = HardwareProfile(
    name="zero",
    description="no emulated accelerator time (orchestration overhead only)",
    generate_s_per_token=0.0,
    train_s_per_token=0.0,
    update_weights_s=0.0,
    response_tokens=0,
)

BUILTIN = {p.name: p for p in (H100_QWEN3_4B, A3_QWEN3_4B, ZERO)}
DEFAULT_PROFILE = H100_QWEN3_4B.name  # what benchmark, simulate and plan emulate unless told


def load_profile(name_or_path: str) -> HardwareProfile:
    """A built-in profile by name, or one written by `harness calibrate` (a JSON file)."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise ValueError(
            f"unknown hardware profile {name_or_path!r}: use one of {', '.join(BUILTIN)} "
            "or the path of a profile JSON written by `harness calibrate`"
        )
    try:
        data = json.loads(path.read_text())
        return HardwareProfile(**data)
    except (json.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"{path} is not a hardware profile: {exc}") from exc
