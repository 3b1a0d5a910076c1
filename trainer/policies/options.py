"""Options of the torch policies (`tiny`, `hf`, `vllm`): typed from Python, or text from the policy
spec, `--policy tiny:minibatches=8,epochs=2`, `--policy hf:PATH@cuda:lr=1e-5,tis_cap=none` or
`--policy vllm:PATH@cuda:0,cuda:1:top_p=0.95,stop=</answer>`; the engine's (ENGINE_OPTIONS) are
the vllm policy's alone.
Each is checked here, so a bad one is named the same way whichever way it came:

    policy option minibatches=0 must be at least 1

Text is read by the gyms' parser (gyms/options.py: numbers, whole numbers, flags, an empty value
refused); the ranges below are the policies' own, and their errors show the value as given.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gyms.options import OptionParser

_POLICY = OptionParser("policy")
_error = _POLICY.error


def _number(option: str, value: object) -> float:
    if not math.isfinite(number := _POLICY.number(option, value)):
        raise _error(option, value, "must be a finite number")
    return number


def _positive(option: str, value: object) -> float:
    if (number := _number(option, value)) <= 0:
        raise _error(option, value, "must be positive")
    return number


def _non_negative(option: str, value: object) -> float:
    if (number := _number(option, value)) < 0:
        raise _error(option, value, "must be 0 or more")
    return number


def _clip_eps(option: str, value: object) -> float:
    if not 0 < (number := _number(option, value)) < 1:
        raise _error(option, value, "must lie between 0 and 1 (the ratio is clipped to [1 - eps, 1 + eps])")
    return number


def _cap(option: str, value: object) -> float | None:
    if value is None or str(value).strip().lower() == "none":
        return None
    if (number := _number(option, value)) < 1:
        raise _error(option, value, "must be at least 1 (a lower cap down-weights on-policy tokens), or none for plain PPO")
    return number


def _whole(option: str, value: object) -> int:
    if (number := _POLICY.whole_number(option, value)) < 1:
        raise _error(option, value, "must be at least 1")
    return number


def _probability(option: str, value: object) -> float:
    if not 0 < (number := _number(option, value)) <= 1:
        raise _error(option, value, "must lie in (0, 1]")
    return number


def _strings(option: str, value: object) -> tuple[str, ...]:
    """Stop strings: a sequence from Python, or `|`-separated text from a spec."""
    items = tuple(value) if isinstance(value, (list, tuple)) else tuple(str(value).split("|"))
    if not all(isinstance(item, str) and item for item in items):
        raise _error(option, value, "must be non-empty strings, separated by | in a spec (stop=</answer>|\\n\\n)")
    return items


def _dtype(option: str, value: object) -> str:
    if value not in ("auto", "float32", "bfloat16", "float16"):
        raise _error(option, value, "must be auto, float32, bfloat16 or float16")
    return str(value)


def _level(option: str, value: object) -> str:
    if value not in ("token", "sequence"):
        raise _error(option, value, "must be token or sequence")
    return str(value)


CHECKS: dict[str, Callable[[str, object], object]] = {
    "max_new_tokens": _whole,
    "temperature": _positive,
    "lr": _positive,
    "clip_eps": _clip_eps,
    "kl_coef": _non_negative,
    "tis_cap": _cap,
    "level": _level,
    "minibatches": _whole,
    "epochs": _whole,
    "grad_accum": _whole,
    "drop_zero_advantage": _POLICY.flag,
    # the context in tokens: the tiny model's size (default 256), or a cap on an hf model's own; a
    # multi-turn episode ends where its next turn would not fit (docs/architecture.md)
    "max_len": _whole,
    # the vllm policy's engine and sampling (ENGINE_OPTIONS)
    "top_p": _probability,
    "stop": _strings,
    "ignore_eos": _POLICY.flag,
    "dtype": _dtype,
    "kv_cache_mb": _whole,
    "max_model_len": _whole,
}
ENGINE_OPTIONS = ("top_p", "stop", "ignore_eos", "dtype", "kv_cache_mb", "max_model_len")


def location(rest: str, policy: str) -> tuple[str, str, str]:
    """PATH, DEVICES and OPTIONS of an `hf:` or `vllm:` spec's REST: PATH[@DEVICES][:OPTIONS].
    Options follow the last colon only if they read KEY=VALUE: a path or a device (cuda:0) may
    hold a colon."""
    if not rest:
        raise ValueError(f"the {policy} policy needs a model directory: --policy {policy}:PATH")
    where, sep, text = rest.rpartition(":")
    if not (sep and "=" in text):
        where, text = rest, ""
    path, _, devices = where.partition("@")
    return path, devices, text


def engine_only(options: dict[str, object]) -> dict[str, object]:
    """The options of a `vllm` policy, whose context is its engine's."""
    if "max_len" in options:
        raise ValueError("policy option max_len sizes a tiny or hf policy's context: the vllm engine's is max_model_len")
    return options


def torch_only(options: dict[str, object]) -> dict[str, object]:
    """The options of a `tiny` or `hf` policy, which has no vLLM engine to take the others."""
    engine = [name for name in options if name in ENGINE_OPTIONS]
    if engine:
        raise ValueError(f"policy option {engine[0]} is an option of the vllm engine: use --policy vllm:MODEL_DIR:{engine[0]}=...")
    return options


def checked(**options: object) -> dict[str, object]:
    """The options as their types, each checked; an unknown name is refused."""
    unknown = sorted(set(options) - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown policy option {unknown[0]!r}: use one of {', '.join(CHECKS)}")
    return {name: CHECKS[name](name, value) for name, value in options.items()}


def parse(text: str) -> dict[str, object]:
    """`KEY=VALUE,KEY=VALUE` from a policy spec, checked."""
    options: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"policy option {item!r} is not KEY=VALUE (options read like minibatches=4,epochs=2)")
        if key.strip() in options:
            raise ValueError(f"policy option {key.strip()} is given twice in {text!r}")
        options[key.strip()] = value.strip()
    return checked(**options)
