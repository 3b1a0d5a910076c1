"""Policies found through the `heavygym.policies` entry-point group: a new engine is one module
with a factory and one entry point, and a broken one fails alone. Real distributions on the
path, in a fresh interpreter, as an installed package is seen."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import with_path

from trainer.policies import make_policy
from trainer.policies.profiles import ZERO
from trainer.policies.registry import registered


def distribution(root: Path, name: str, entry_points: str, module: str) -> Path:
    """An installed distribution `name` (a dist-info with its entry points, and its module)."""
    dist = root / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    (root / f"{name}.py").write_text(textwrap.dedent(module))
    return root


def python(code: str, *dirs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **with_path(*dirs)}, timeout=120)  # fmt: skip


def test_the_builtin_policies_are_registered():
    assert set(registered()) >= {"replay", "tiny", "hf", "vllm"}
    assert make_policy("tiny:minibatches=2", None, ZERO).describe()["policy"] == "tiny"  # type: ignore[arg-type]


@pytest.mark.parametrize("spec,says", [
    ("gpt", "unknown policy 'gpt'. Installed policies: hf, replay, tiny, vllm"),
    ("tinyy", "Did you mean 'tiny'?"),
    ("replay:fast", "the replay policy takes no options"),
    ("hf", "the hf policy needs a model directory: --policy hf:PATH"),
])  # fmt: skip
def test_a_bad_spec_names_what_to_write(spec, says):
    with pytest.raises(ValueError, match=says.replace("?", r"\?").replace(".", r"\.")):
        make_policy(spec, None, ZERO)  # type: ignore[arg-type]


def test_a_new_engine_is_one_module_and_one_entry_point(tmp_path):
    plugin = distribution(tmp_path / "echo", "heavygym_echo", "[heavygym.policies]\necho = heavygym_echo:make\n", """
        from trainer.policies.replay import ReplayPolicy

        class Echo(ReplayPolicy):
            name = "echo"

        def make(rest, context):
            context.on_real_hardware("echo") if rest == "real" else None
            return Echo(context.gym, context.profile, seed=context.seed)
    """)
    broken = distribution(tmp_path / "broken", "heavygym_brokenpolicy",
                          "[heavygym.policies]\nbroken = heavygym_brokenpolicy:make\n",
                          "import a_module_that_does_not_exist\n")  # fmt: skip
    run = python("""
        from gyms import make
        from trainer.policies import make_policy
        from trainer.policies.profiles import ZERO
        print(make_policy("echo", make("math"), ZERO, seed=3).describe()["policy"])
        try:
            make_policy("broken", None, ZERO)
        except RuntimeError as exc:
            print(exc)
        print(make_policy("tiny", None, ZERO).describe()["policy"])  # the others still load
    """, plugin, broken)
    assert run.returncode == 0, run.stderr
    echo, failed, tiny = run.stdout.strip().splitlines()
    assert echo == "echo" and tiny == "tiny"
    assert failed.startswith("policy 'broken' (heavygym_brokenpolicy:make) failed to load: ModuleNotFoundError")


def test_a_new_engine_for_a_real_model_is_an_engine_and_a_factory(tmp_path):
    """An `Engine` composed with a `Learner` by `ModelPolicy`: the policy keeps the versions."""
    plugin = distribution(tmp_path / "canned", "heavygym_canned", "[heavygym.policies]\ncanned = heavygym_canned:make\n", """
        from trainer.policies.engine import Engine
        from trainer.policies.learner import Learner
        from trainer.policies.model_policy import ModelPolicy
        from trainer.policies.tiny_model import ByteTokenizer, TinyLM
        from trainer.types import Generation

        class Canned(Engine):  # answers "x" to everything, with the weights it was last given
            def __init__(self, learner):
                self.learner, self.held = learner, None

            def generate(self, requests, version, events):
                assert version == self.held
                return [Generation("x", self.learner.prompt_ids(r), [ord("x")], [0.0], version)
                        for r in requests]

            def snapshot(self):
                return self.learner.weights()

            def load(self, weights, version):
                self.held = version

        def make(rest, context):
            learner = Learner(TinyLM(ByteTokenizer.vocab_size, 16, 1, 2, 64), ByteTokenizer(),
                              logits=lambda m, ids: m(ids), max_len=64, max_new_tokens=4)
            return ModelPolicy("canned", learner, Canned(learner))
    """)  # fmt: skip
    run = python("""
        from gyms import Task
        from trainer.policies import make_policy
        from trainer.policies.profiles import ZERO
        from trainer.types import Request
        policy = make_policy("canned", None, ZERO)
        version = policy.acquire()
        [gen] = policy.generate([Request.first(Task("t", "1 + 1 = "))], version)
        policy.release(version)
        print(policy.describe()["policy"], gen.text, gen.version, policy.update_weights(), policy.engine.held)
    """, plugin)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["canned", "x", "0", "1", "1"]
