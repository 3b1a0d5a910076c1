"""How long the accelerator stages take in the simulator: generation, actor_train, update_weights.

From a hardware profile, the stages follow the replay policy: a response of mean x U(0.5, 1.5)
tokens (trainer/rules/answers.py), an engine call = call cost + per-token time x the response
tokens of its batch, or its longest response decoding alone where that is longer
(trainer/rules/batching.py) + the prefill of each request's prompt beyond
the first turn's, and actor_train = fixed + per-token time x the one sequence of every trained
trajectory (its last turn's prompt and response). A turn's prompt is the first prompt grown by
each turn before it: the mean response and the card's mean feedback tokens, by
trainer/rules/context.py (`prefill_s`, `train_s`): the costs are linear in tokens, so means
charge what the replay policy's drawn lengths charge on average.
From a run, they are that run's own span durations (see `from_run`), whose generate and
actor_train spans already hold what its growing prompts cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.rundir import Run
from harness.sim.distribution import Distribution
from trainer.policies.profiles import HardwareProfile
from trainer.rules.answers import RESPONSE_SPREAD
from trainer.rules.context import prefill_tokens, prompt_tokens_at, sequence_tokens


@dataclass(frozen=True)
class Stages:
    source: str
    generate_call_s: float  # per generation call, whatever its size
    response_s: Distribution  # per generated response; a call takes the sum over its requests
    train_fixed_s: Distribution  # per optimizer step
    train_s_per_token: float  # per token of a trained trajectory's one sequence, on one trainer
    update_weights_s: Distribution
    # The growing conversation (trainer/rules/context.py), from a profile; 0 from a run's spans
    prompt_tokens: int = 0  # an episode's first prompt
    response_tokens: float = 0.0  # a response's mean length, which the next turn's prompt adds
    prefill_s_per_token: float = 0.0  # per prompt token beyond the first prompt
    # A response's decode time alone over its response time in a full batch (the profile's
    # decode_s_per_token / generate_s_per_token): the latency-bound side of trainer/rules/batching.py.
    # 0: throughput-bound only (no per-sequence rate; a run's spans)
    decode_factor: float = 0.0

    def prefill_s(self, turn: int, feedback_tokens: float) -> float:
        """Turn `turn`'s (1-based) prefill beyond the first prompt's, in its engine call."""
        prompt = prompt_tokens_at(turn, self.prompt_tokens, self.response_tokens, feedback_tokens)
        return self.prefill_s_per_token * prefill_tokens(prompt, self.prompt_tokens)

    def train_s(self, turns: int, feedback_tokens: float) -> float:
        """Training a trajectory of `turns` turns (its one sequence) on one trainer, beyond the step's fixed cost."""
        tokens = sequence_tokens(turns, self.prompt_tokens, self.response_tokens, feedback_tokens)
        return self.train_s_per_token * tokens


def from_profile(profile: HardwareProfile) -> Stages:
    mean = profile.response_tokens
    per_token = profile.generate_s_per_token
    low, high = RESPONSE_SPREAD
    return Stages(
        source=f"profile {profile.name} (emulated)",
        generate_call_s=profile.generate_call_s,
        response_s=Distribution.uniform(low * mean * per_token, high * mean * per_token),
        train_fixed_s=Distribution.constant(profile.train_step_s),
        train_s_per_token=profile.train_s_per_token,
        update_weights_s=Distribution.constant(profile.update_weights_s),
        prompt_tokens=profile.prompt_tokens,
        response_tokens=mean,
        prefill_s_per_token=profile.prefill_s_per_token or 0.0,
        decode_factor=(profile.decode_s_per_token or 0.0) / per_token if per_token > 0 else 0.0,
    )


def from_run(run: Run) -> Stages:
    """A run's own stage times, every mode together: actor_train and update_weights resampled
    from their spans. Generation as the batching rule charges it (trainer/rules/batching.py: a
    call costs a fixed part plus each of its requests' response time): the fixed part is the
    profile's per-call cost for an emulated run (the one figure the spans cannot tell apart),
    else 0 (a real engine serves one request per call), and a response takes the run's engine
    busy time (its `generate` spans, one per engine call) less those fixed parts, over the
    requests they answered, spread +-50 % as the replay policy spreads its response lengths.
    The requests are the `generate_request` spans; a run recorded before them (one engine call
    per group round) stepped each response once, so there they are its `gym_step` spans."""
    spans = [s for spans in run.spans.values() for s in spans]

    def durations(kind: str) -> list[float]:
        found = [s.duration for s in spans if s.kind == kind]
        if not found:
            raise ValueError(f"run {run.run_id} has no {kind} spans to simulate from")
        return found

    calls = durations("generate")
    requests = sum(s.kind == "generate_request" for s in spans) or len(durations("gym_step"))
    profile = run.summary.profile or {}
    call_s = float(profile.get("generate_call_s", 0.0)) if run.summary.emulated else 0.0
    per_response = max(0.0, sum(calls) - call_s * len(calls)) / requests
    low, high = RESPONSE_SPREAD
    return Stages(
        source=f"run {run.run_id} (its spans)",
        generate_call_s=call_s,
        response_s=Distribution.uniform(low * per_response, high * per_response),
        train_fixed_s=Distribution.of(durations("actor_train")),
        train_s_per_token=0.0,
        update_weights_s=Distribution.of(durations("update_weights")),
    )
