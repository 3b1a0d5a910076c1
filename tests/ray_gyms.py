"""Toy gyms for the Ray executor's tests; Ray workers import this module (tests/ on PYTHONPATH)."""

from __future__ import annotations

import random

from toy_gyms import ToyEpisode, ToyGym

from gyms import Candidate, Episode, Task, Verdict


class NodeEpisode(ToyEpisode):
    """Ends every feedback with the Ray node that ran the step, so a test can see where turns ran."""

    def evaluate(self, action: str) -> Verdict:
        import ray

        verdict = super().evaluate(action)
        node = ray.get_runtime_context().get_node_id()
        return Verdict(verdict.reward, verdict.outcome, f"{verdict.feedback} [node {node}]", verdict.info)


class NodeGym(ToyGym):
    """Wrong first answers are slow, so turns of different episodes interleave on the workers."""

    name = "node-toy"

    def open(self, task: Task) -> Episode:
        return NodeEpisode(task, self.max_turns)

    def candidates(self, task: Task, rng: random.Random) -> list[Candidate]:
        return [Candidate("pass", "pass", "reference"), Candidate("sleep:0.05", "fail", "slow-wrong")]


class PinnedGym(NodeGym):
    """A gym whose workers only nodes advertising `gym:pinned-toy` may host."""

    name = "pinned-toy"


def node_of(observation: str) -> str:
    return observation.rsplit("[node ", 1)[1].rstrip("]")
