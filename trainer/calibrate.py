"""Measure a hardware profile: time a real policy's generation, training and weight sync.

`harness calibrate` runs a few GRPO steps of a `tiny`, `hf` or `vllm` policy and fits the
per-token costs that the replay policy emulates. Each step generates one batch (prompts x
samples, all requests at once, so an engine that batches continuously serves them together:
the throughput, `generate_s_per_token`), then one request alone (the per-sequence rate,
`decode_s_per_token`: a sequence decodes a token at a time however empty the engine),
trains on it with random rewards and publishes the weights. The prompts are a gym's own task
prompts where one is named, so prompt lengths are the gym's; the vllm policy is asked for
responses of a fixed length (`ignore_eos`), so the measured throughput is at a known, realistic
length. The profile records its own measurements, so a reader can check the fit.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace

from gyms import Task
from trainer.policies.profiles import PREFILL_SHARE, HardwareProfile
from trainer.policies.model_policy import ModelPolicy
from trainer.types import Group, Request, Trajectory, Turn


def synthetic_prompts(count: int, chars: int, seed: int = 0) -> list[str]:
    """Prompts of random lower-case words, for a calibration with no gym."""
    rng = random.Random(seed)
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(chars)) for _ in range(count)]


def calibrate(
    policy: ModelPolicy, name: str, prompts: Sequence[str], *, steps: int = 3, batch: int = 4, group: int = 4,
    prompt_source: str = "synthetic",
) -> HardwareProfile:  # fmt: skip
    if not prompts:
        raise ValueError("calibrate needs at least one prompt")
    rng = random.Random(0)
    gen_s = gen_tokens = train_s = train_tokens = prompt_tokens = decode_s = decode_tokens = 0.0
    updates: list[float] = []
    for step in range(steps + 1):  # step 0 warms up caches and kernels, and is not counted
        tasks = [Task(f"calibrate/{i}", rng.choice(prompts)) for i in range(batch)]
        start = time.perf_counter()
        gens = policy.generate([Request.first(t) for t in tasks for _ in range(group)], policy.version)
        generated = time.perf_counter() - start
        groups = []
        for i, task in enumerate(tasks):
            mine = gens[i * group : (i + 1) * group]
            rewards = [rng.random() for _ in mine]
            mean = statistics.fmean(rewards)
            trajs = [Trajectory(task.id, i, policy.version, [Turn(g, reward=r)])
                     for g, r in zip(mine, rewards)]  # fmt: skip
            groups.append(Group(i, task.id, policy.version, trajs, [r - mean for r in rewards]))
        # one request alone: the per-sequence decode rate (latency-bound), beside the full batch's throughput
        start = time.perf_counter()
        [alone] = policy.generate([Request.first(tasks[0])], policy.version)
        alone_s = time.perf_counter() - start
        start = time.perf_counter()
        policy.train_step(groups)
        trained = time.perf_counter() - start
        start = time.perf_counter()
        policy.update_weights()
        updated = time.perf_counter() - start
        if step == 0:
            continue
        decode_s += alone_s
        decode_tokens += len(alone.response_tokens)
        gen_s += generated
        gen_tokens += sum(len(g.response_tokens) for g in gens)
        prompt_tokens += sum(len(g.prompt_tokens) for g in gens)
        train_s += trained
        train_tokens += sum(len(g.prompt_tokens) + len(g.response_tokens) for g in gens)
        updates.append(updated)
    described = policy.describe()
    engine = f"{described['engine']}, " if "engine" in described else ""
    device = described.get("engine_device") or described.get("device")
    samples = steps * batch * group
    return replace(
        HardwareProfile(
            name=name,
            description=f"measured: {engine}{policy.name} policy ({described.get('parameters')} parameters, "
            f"{described.get('dtype')}) on {device}",
            generate_s_per_token=gen_s / max(gen_tokens, 1),
            train_s_per_token=train_s / max(train_tokens, 1),
            update_weights_s=statistics.fmean(updates),
            decode_s_per_token=decode_s / max(decode_tokens, 1),
            response_tokens=round(gen_tokens / samples),
            prompt_tokens=round(prompt_tokens / samples),
        ),
        sources={
            "measurement": f"harness calibrate: {steps} measured steps (after one warm-up) of "
            f"{batch} prompts x {group} samples, prompts {prompt_source}; generate {gen_s:.3f} s for "
            f"{gen_tokens:.0f} tokens ({gen_tokens / max(gen_s, 1e-9):.0f} tokens/s), actor_train "
            f"{train_s:.3f} s for {train_tokens:.0f} tokens ({train_tokens / max(train_s, 1e-9):.0f} tokens/s), "
            f"update_weights {', '.join(f'{u:.3f}' for u in updates)} s; one request alone {decode_s:.3f} s for "
            f"{decode_tokens:.0f} tokens ({decode_tokens / max(decode_s, 1e-9):.0f} tokens/s per sequence)",
            "prefill": f"not calibrated: every prompt here is a first turn's, so prefill is {PREFILL_SHARE} x the "
            "measured generate_s_per_token (HardwareProfile's default), charged only to later turns' prompt growth",
            "policy": ", ".join(f"{k} {v}" for k, v in described.items()),
        },
    )
