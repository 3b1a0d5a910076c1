"""`harness calibrate`: time a real policy's stages into a hardware profile (trainer/calibrate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness import outputs
from harness.console import console
from harness.errors import start_gym
from harness.options import Batch, Group, GymOptions, parse_options


def calibrate(
    policy: Annotated[str, typer.Option(help="tiny, hf:PATH[@DEVICE] (cuda, npu, cpu) or "
                                        "vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]], with options as in benchmark.")] = "tiny",
    name: Annotated[str, typer.Option(help="The profile's name.")] = "calibrated",
    out: Annotated[Path, typer.Option(help="Where the profile JSON is written.")] = Path("profile.json"),
    steps: Annotated[int, typer.Option(min=1, help="Measured steps (after one warm-up step).")] = 3,
    batch: Batch = 4,
    group: Group = 4,
    gym: Annotated[Optional[str], typer.Option(help="Prompt with this gym's tasks (their real lengths); "
                                               "default: synthetic prompts of --prompt-chars.")] = None,
    gym_option: GymOptions = None,
    prompt_chars: Annotated[int, typer.Option(min=1, help="Length of the synthetic prompts.")] = 64,
    response_tokens: Annotated[Optional[int], typer.Option(
        min=1, help="Tokens per response (max_new_tokens); the vllm engine then generates exactly this many "
        "(ignore_eos). Default: the policy's max_new_tokens.")] = None,
) -> None:
    """Time a real policy's generation, training and weight sync; write a hardware profile."""
    from trainer.calibrate import calibrate as measure
    from trainer.calibrate import synthetic_prompts
    from trainer.policies import make_policy
    from trainer.policies.profiles import ZERO
    from trainer.policies.model_policy import ModelPolicy

    if policy.startswith("vllm:"):  # a fixed length: the engine's throughput at a known response length
        overrides: dict[str, object] = {"ignore_eos": True}
    else:
        overrides = {}
    if response_tokens is not None:
        overrides["max_new_tokens"] = response_tokens
    if gym is not None:
        prompts = [t.prompt for t in start_gym(gym, parse_options(gym_option)).tasks()]
        source = f"the {gym} gym's {len(prompts)} task prompts"
    else:
        prompts, source = synthetic_prompts(batch, prompt_chars), f"synthetic, {prompt_chars} characters"
    outputs.check_writable(out.parent, outputs.MB, "pass --out FILE in a writable directory")
    model = make_policy(policy, None, ZERO, overrides=overrides)  # type: ignore[arg-type]  (no gym: prompts only)
    if not isinstance(model, ModelPolicy):
        raise typer.BadParameter("calibrate a real model: tiny, hf:PATH or vllm:PATH", param_hint="--policy")
    console.print(f"calibrating {policy}: {steps} steps of {batch} x {group} samples, prompts {source}")
    profile = measure(model, name, prompts, steps=steps, batch=batch, group=group, prompt_source=source)
    with outputs.naming(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        profile.save(out)
    console.print(
        f"generate {profile.generate_s_per_token * 1e3:.3f} ms/token ({1 / profile.generate_s_per_token:.0f} tokens/s, "
        f"one sequence alone {1 / (profile.decode_s_per_token or 1e-9):.0f} tokens/s, "
        f"{profile.response_tokens} tokens per response), actor_train {profile.train_s_per_token * 1e3:.3f} ms/token, "
        f"update_weights {profile.update_weights_s:.3f} s"
    )
    console.print(f"written: {out} (use it with harness benchmark --profile {out})")
