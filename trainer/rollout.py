"""Rollout workers: generate a group, run every episode in the gym pool, return the group.

A worker pins the newest policy version when it starts a group and uses it for every turn
of every episode in the group; it releases the version when the group is done.

Besides `generate` and `gym_step`, a worker records the spans the wait attribution follows
(trainer/attribution.py): `gym_queue` on resource "gym-queue" (an answer from its submit to the
pool until a worker starts it) and `group` on resource "groups" (from admission to the put into
the ready buffer, for groups with trainable samples: the trainer never waits for any other).
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from gyms import Episode, Gym, Outcome, Task
from gyms.pool import SlotPool, StepCall
from trainer.buffer import ReadyBuffer, Stopped
from trainer.losses import group_advantages
from trainer.policies.base import Policy
from trainer.timeline import Timeline
from trainer.types import Group, Request, Trajectory, Turn, next_prompt


class TaskSampler:
    """Tasks in a seeded shuffled order, cycling; the same sequence for sync and async runs."""

    def __init__(self, tasks: Sequence[Task], seed: int) -> None:
        if not tasks:
            raise ValueError("the gym has no tasks to train on")
        order = list(tasks)
        random.Random(seed).shuffle(order)
        self._cycle = itertools.cycle(order)
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def next(self) -> tuple[int, Task]:
        with self._lock:
            return next(self._ids), next(self._cycle)


@dataclass
class Rollout:
    gym: Gym
    pool: SlotPool  # any executor's pool (gyms/executors.py)
    policy: Policy
    buffer: ReadyBuffer
    timeline: Timeline
    tasks: TaskSampler
    group_size: int
    engine_lock: threading.Lock  # one rollout engine: generation calls take turns
    depth_series: list[tuple[float, int]]

    def worker(self) -> None:
        """One rollout worker's loop, until the run stops."""
        try:
            while True:
                self.buffer.admit()
                started = self.timeline.now()
                group_id, task = self.tasks.next()
                version = self.policy.acquire()
                try:
                    group = self._group(group_id, task, version)
                except Stopped:
                    self.buffer.abandon(self.group_size)
                    return
                finally:
                    self.policy.release(version)
                if group.trajectories:  # before the put, so that it never follows the trainer's wake-up
                    self.timeline.add("groups", "group", started, self.timeline.now(), version, group=group_id)
                self.buffer.put(group)
                self.depth_series.append((self.timeline.now(), self.buffer.depth()))
        except Stopped:
            return
        except Exception as exc:  # a crashed worker must fail the run, not hang it
            self.buffer.fail(exc)

    def _group(self, group_id: int, task: Task, version: int) -> Group:
        trajs = [Trajectory(task.id, group_id, version) for _ in range(self.group_size)]
        prompts = [task.prompt] * self.group_size
        episodes: list[Episode] = [self.gym.open(task) for _ in trajs]
        todo = list(range(self.group_size))
        while todo:
            turn = len(trajs[todo[0]].turns) + 1  # every sample still going is at the same turn
            requests = [Request(task, prompts[i], turn, group_id, i) for i in todo]
            gens = self._generate(requests, version, group_id, turn)
            pending = {}
            for i, gen in zip(todo, gens):
                trajs[i].turns.append(Turn(prompts[i], gen, version))
                pending[self.pool.submit(episodes[i], gen.text)] = i
            todo = []
            for call, i in self._completed(pending):
                episodes[i] = call.episode
                done = trajs[i].turns[-1]
                done.observation, done.reward, done.outcome = (
                    call.result.observation,
                    call.result.reward,
                    call.result.outcome,
                )
                at = self.timeline.at
                where = {"group": group_id, "sample": i, "turn": turn}
                self.timeline.add("gym-queue", "gym_queue", at(call.submitted_at), at(call.started_at), version, **where)
                self.timeline.add(f"gym-{call.worker}", "gym_step", at(call.started_at), at(call.finished_at), version,
                                  **where)  # fmt: skip
                if call.result.done:
                    call.episode.close()
                else:
                    prompts[i] = next_prompt(prompts[i], done.generation.text, done.observation)
                    todo.append(i)
        trainable = [t for t in trajs if t.outcome is not Outcome.ERROR]
        errors = [t.turns[-1].observation for t in trajs if t.outcome is Outcome.ERROR]
        rewards = torch.tensor([t.reward for t in trainable], dtype=torch.float32)
        advantages = group_advantages(rewards).tolist() if len(trainable) > 1 else [0.0] * len(trainable)
        return Group(
            group_id, task.id, version, trainable, advantages, errored=len(errors), error=errors[0] if errors else ""
        )

    def _generate(self, requests: list[Request], version: int, group: int, turn: int) -> list:
        with self.engine_lock:
            if self.buffer.stopping:
                raise Stopped
            with self.policy.accelerator():  # colocated: wait for training to give it up
                if self.buffer.stopping:
                    raise Stopped
                with self.timeline.span("rollout", "generate", version, group=group, turn=turn):
                    return self.policy.generate(requests, version)

    def _completed(self, pending: dict[cf.Future[StepCall], int]):
        """Yield (call, index) as gym steps finish; on stop, leave the rest to close themselves."""
        while pending:
            done, _ = cf.wait(pending, timeout=0.1, return_when=cf.FIRST_COMPLETED)
            if self.buffer.stopping:
                for future in pending:
                    future.add_done_callback(_close_episode)
                raise Stopped
            for future in done:
                yield future.result(), pending.pop(future)


def _close_episode(future: cf.Future[StepCall]) -> None:
    if not future.cancelled():
        future.result().episode.close()
