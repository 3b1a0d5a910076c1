"""Measure a hardware profile: time a real policy's generation, training and weight sync.

`harness calibrate` runs a few GRPO steps of a `tiny` or `hf` policy on prompts of a chosen
length and fits the per-token costs that the replay policy emulates. The profile records
its own measurements, so a reader can check the fit.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import replace

from gyms import Task
from trainer.policies.profiles import HardwareProfile
from trainer.policies.torch_lm import TorchPolicy
from trainer.types import Group, Request, Trajectory, Turn


def calibrate(
    policy: TorchPolicy, name: str, *, steps: int = 3, batch: int = 4, group: int = 4, prompt_chars: int = 64
) -> HardwareProfile:
    rng = random.Random(0)
    alphabet = "abcdefghijklmnopqrstuvwxyz "
    gen_s = gen_tokens = train_s = train_tokens = prompt_tokens = 0.0
    updates: list[float] = []
    for step in range(steps + 1):  # step 0 warms up caches and kernels, and is not counted
        prompts = ["".join(rng.choice(alphabet) for _ in range(prompt_chars)) for _ in range(batch)]
        tasks = [Task(f"calibrate/{i}", p) for i, p in enumerate(prompts)]
        start = time.perf_counter()
        gens = policy.generate([Request(t, t.prompt, 1) for t in tasks for _ in range(group)], policy.version)
        generated = time.perf_counter() - start
        groups = []
        for i, task in enumerate(tasks):
            mine = gens[i * group : (i + 1) * group]
            rewards = [rng.random() for _ in mine]
            mean = statistics.fmean(rewards)
            trajs = [Trajectory(task.id, i, policy.version, [Turn(task.prompt, g, reward=r)])
                     for g, r in zip(mine, rewards)]  # fmt: skip
            groups.append(Group(i, task.id, policy.version, trajs, [r - mean for r in rewards]))
        start = time.perf_counter()
        policy.train_step(groups)
        trained = time.perf_counter() - start
        start = time.perf_counter()
        policy.update_weights()
        updated = time.perf_counter() - start
        if step == 0:
            continue
        gen_s += generated
        gen_tokens += sum(len(g.response_tokens) for g in gens)
        prompt_tokens += sum(len(g.prompt_tokens) for g in gens)
        train_s += trained
        train_tokens += sum(len(g.prompt_tokens) + len(g.response_tokens) for g in gens)
        updates.append(updated)
    described = policy.describe()
    return replace(
        HardwareProfile(
            name=name,
            description=f"measured: {policy.name} policy ({described.get('parameters')} parameters) "
            f"on {described.get('device')}",
            generate_s_per_token=gen_s / max(gen_tokens, 1),
            train_s_per_token=train_s / max(train_tokens, 1),
            update_weights_s=statistics.fmean(updates),
            response_tokens=round(gen_tokens / (steps * batch * group)),
            prompt_tokens=round(prompt_tokens / (steps * batch * group)),
        ),
        sources={
            "measurement": f"harness calibrate: {steps} measured steps (after one warm-up) of "
            f"{batch} prompts x {group} samples; generate {gen_s:.3f} s for {gen_tokens:.0f} tokens, "
            f"actor_train {train_s:.3f} s for {train_tokens:.0f} tokens, update_weights "
            f"{', '.join(f'{u:.3f}' for u in updates)} s",
        },
    )
