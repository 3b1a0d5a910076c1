"""Find policies by name through the `heavygym.policies` entry-point group, as gyms are found
(gyms/registry.py).

A policy spec is NAME[:REST]. The entry point NAME is a factory `(rest, context) -> Policy`:
REST is the spec after the first colon (a model path, devices, options), `context` what every
policy may need. The built-in replay, tiny, hf and vllm are registered there too
(pyproject.toml), so a new engine is one module with a factory and one entry point. Listing
names imports nothing; a factory that fails to import is an error for that policy alone.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points

from gyms import Gym
from trainer.policies import options
from trainer.policies.base import Policy
from trainer.policies.profiles import HardwareProfile

ENTRY_POINT_GROUP = "heavygym.policies"
EXAMPLES = ("replay, tiny:minibatches=8,epochs=2, hf:PATH[@DEVICE][:OPTIONS], "
            "vllm:PATH[@ENGINE_DEVICE[,LEARNER_DEVICE]][:OPTIONS]")  # fmt: skip


@dataclass(frozen=True)
class PolicyContext:
    gym: Gym | None  # None: prompts only (harness calibrate)
    profile: HardwareProfile  # the emulated stages' times (replay)
    seed: int = 0
    placement: str | None = None  # where emulated stages run (replay); None: the policy's default
    overrides: Mapping[str, object] = field(default_factory=dict)  # options from Python, over the spec's

    def options(self, text: str) -> dict[str, object]:
        """KEY=VALUE,... of a spec (trainer/policies/options.py), then the overrides."""
        return {**(options.parse(text) if text else {}), **self.overrides}

    def on_real_hardware(self, name: str) -> None:
        """For a policy whose stages run for real: a placement is not its to take."""
        if self.placement is not None:
            raise ValueError(f"placement is an option of the replay policy: {name!r} runs its stages on real hardware")


Factory = Callable[[str, PolicyContext], Policy]


def registered() -> dict[str, str]:
    """Every registered policy name and its factory ("module:attr"), without importing any."""
    return dict(sorted((ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)))


def make_policy(
    spec: str, gym: Gym | None, profile: HardwareProfile, seed: int = 0, placement: str | None = None,
    overrides: Mapping[str, object] | None = None,
) -> Policy:  # fmt: skip
    """The policy of a spec, e.g. `replay`, `tiny:minibatches=8,epochs=2`, `hf:PATH@cuda` or
    `vllm:PATH@cuda:0,cuda:1:top_p=0.9` (devices default to cpu; one device for the vllm policy
    puts engine and learner together). OPTIONS: trainer/policies/options.py; `overrides` (from
    Python) replace the spec's. `placement`: the replay policy's (colocated or disaggregated)."""
    name, _, rest = spec.partition(":")
    factories = registered()
    if name not in factories:
        close = difflib.get_close_matches(name, list(factories), n=2)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"unknown policy {spec!r}.{hint} Installed policies: {', '.join(factories) or 'none'}; "
                         f"for example {EXAMPLES}")  # fmt: skip
    (entry,) = entry_points(group=ENTRY_POINT_GROUP, name=name)
    try:
        factory: Factory = entry.load()
    except Exception as exc:  # a broken plugin is named, and only it fails
        raise RuntimeError(f"policy {name!r} ({entry.value}) failed to load: {type(exc).__name__}: {exc}") from exc
    return factory(rest, PolicyContext(gym, profile, seed, placement, dict(overrides or {})))
