"""Rollout threads: run a group's episodes through the policy and the gym pool, return the group.

A rollout thread owns one group at a time: it pins the newest policy version when it starts the group,
every turn of every episode uses it, and it releases the version when the group is done. Each
episode is a state machine of its own, on a thread of its own: it asks the policy for its
next turn as soon as its own gym step returns, with no barrier between the episodes of a
round; the group is done when its last episode ends. Requests of every episode of every thread
reach the policy concurrently, and the policy serialises or batches them (one engine).

Besides `gym_step`, a rollout thread records the spans the wait attribution follows
(trainer/attribution.py), each naming its group, sample and turn: `generate_request` on
resource "generate-requests" (an episode's request from asking to its answer, the wait for the
engine included), `gym_queue` on "gym-queue" (an answer from its submit to the pool until a
worker starts it), and `group` on "groups" (from admission to the put into the ready buffer,
for groups with trainable samples: the trainer never waits for any other). The engine's own
calls are the policy's to report (`Policy.reporting_to`): the pipeline records them as
`generate` on "rollout".

Each trajectory carries its task's predicted gym time as its group started (`CostPredictor`, by
trainer/rules/cost.py's rule), and the predictor learns from the group's trajectories when the
group ends, so a prediction never saw the trajectory it predicts.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import itertools
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


from gyms import Episode, Gym, Outcome, Task
from gyms.steps import StepCall
from trainer.buffer import ReadyBuffer, Stopped
from trainer.advantages import group_advantages
from trainer.policies.base import Policy
from trainer.rules.context import feedback_tokens
from trainer.rules.cost import CostBook
from trainer.rules.schedule import DEFAULT_SCHEDULE, slow_first, step_priority
from trainer.step_pool import StepPool
from trainer.timeline import Timeline
from trainer.types import Generation, Group, Message, Request, Trajectory, Turn

# The observation of a turn that was never generated: the conversation outgrew the context.
CONTEXT_FULL = "the conversation would outgrow the model's context: the episode ends here, as a fail"


class TaskSampler:
    """Tasks in a seeded shuffled order, cycling; the same sequence for sync and async runs.
    Seed None keeps the tasks' own order (a re-simulation replays a run's recorded order). With a
    `reorder`, the order is drawn in blocks of `block` tasks, each block in the order `reorder`
    gives it when its first task is drawn (cost-aware's slow-first starts)."""

    def __init__(
        self, tasks: Sequence[Task], seed: int | None, block: int = 1,
        reorder: Callable[[list[Task]], list[Task]] | None = None,
    ) -> None:  # fmt: skip
        if not tasks:
            raise ValueError("the gym has no tasks to train on")
        order = list(tasks)
        if seed is not None:
            random.Random(seed).shuffle(order)
        self._order = order
        self._cycle = itertools.cycle(order)
        self._block = block if reorder is not None else 1
        self._reorder = reorder
        self._drawn: list[Task] = []  # what is left of the current block, in draw order
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def first(self, draws: int) -> list[Task]:
        """The tasks of the first `draws` draws (each once; whole blocks), without drawing them."""
        return self._order[: -(-draws // self._block) * self._block]

    def next(self) -> tuple[int, Task]:
        with self._lock:
            if not self._drawn:
                block = list(itertools.islice(self._cycle, self._block))
                self._drawn = self._reorder(block) if self._reorder is not None else block
            return next(self._ids), self._drawn.pop(0)


def slow_first_sampler(tasks: Sequence[Task], seed: int, block: int, costs: CostPredictor) -> TaskSampler:
    """The cost-aware sampler: the seeded order in blocks of `block`, each predicted-slowest first."""
    return TaskSampler(tasks, seed, block, lambda drawn: slow_first(drawn, lambda t: costs.predict(t.id)))


class CostPredictor:
    """Each task's predicted gym time (trainer/rules/cost.py), learned as the run's groups finish:
    one `CostBook` under a lock, since every rollout thread predicts and observes."""

    def __init__(self, card: Mapping[str, float] | None = None) -> None:
        self._book = CostBook(card or {})
        self._lock = threading.Lock()

    def predict(self, task_id: str) -> float | None:
        with self._lock:
            return self._book.predict(task_id)

    def observe(self, task_id: str, trajectories: Sequence[Trajectory]) -> None:
        """A finished group's trajectories; the errored ones are left out (the rule's docstring says why)."""
        times = [t.gym_s for t in trajectories if t.outcome is not Outcome.ERROR]
        with self._lock:
            self._book = self._book.observed(task_id, times)


@dataclass
class Rollout:
    gym: Gym
    pool: StepPool  # any executor's pool (gyms/executors.py)
    policy: Policy
    buffer: ReadyBuffer
    timeline: Timeline
    tasks: TaskSampler
    group_size: int
    depth_series: list[tuple[float, int]]
    costs: CostPredictor = field(default_factory=CostPredictor)
    schedule: str = DEFAULT_SCHEDULE  # trainer/rules/schedule.py: cost-aware orders the gym queue

    def thread(self) -> None:
        """One rollout thread's loop, until the run stops."""
        prefix = threading.current_thread().name
        with cf.ThreadPoolExecutor(self.group_size, thread_name_prefix=prefix) as episodes:
            try:
                while True:
                    admitted = self.buffer.admit()
                    started = self.timeline.now()
                    group_id, task = self.tasks.next()
                    version = self.policy.acquire()
                    self.buffer.pinned(admitted, version)
                    try:
                        group = self._group(episodes, group_id, task, version)
                    finally:
                        self.policy.release(version)
                    if group.trajectories:  # before the put, so that it never follows the trainer's wake-up
                        self.timeline.add("groups", "group", started, self.timeline.now(), version, group=group_id)
                    self.buffer.put(group)
                    self.depth_series.append((self.timeline.now(), self.buffer.depth()))
            except Stopped:
                return
            except Exception as exc:  # a crashed thread must fail the run, not hang it
                self.buffer.fail(exc)

    def _group(self, episodes: cf.Executor, group_id: int, task: Task, version: int) -> Group:
        """The group's episodes, to their ends; on stop, its trajectories as far as they got
        are abandoned (in flight) and `Stopped` is raised."""
        predicted = self.costs.predict(task.id)  # before any of the group ran
        trajs = [Trajectory(task.id, group_id, version, sample=i, prompt=task.prompt, predicted_gym_s=predicted)
                 for i in range(self.group_size)]  # fmt: skip
        running = [episodes.submit(self._episode, task, traj) for traj in trajs]
        first, _ = cf.wait(running, return_when=cf.FIRST_EXCEPTION)
        raised = [e for e in map(cf.Future.exception, first) if e is not None]
        crash = next((e for e in raised if not isinstance(e, Stopped)), None)
        if crash is not None:
            self.buffer.fail(crash)  # the other episodes stop at their next request or gym step
        cf.wait(running)  # before the version is released: no episode still generates with it
        for r in running:
            if isinstance(r.exception(), Stopped):
                self.buffer.abandon(trajs)
                raise Stopped
            r.result()  # a crash: the run has failed with it
        self.costs.observe(task.id, trajs)
        trainable = [t for t in trajs if t.outcome is not Outcome.ERROR]
        errored = [t for t in trajs if t.outcome is Outcome.ERROR]
        rewards = [t.reward for t in trainable]
        advantages = group_advantages(rewards) if len(trainable) > 1 else [0.0] * len(trainable)
        return Group(group_id, task.id, version, trainable, advantages, errored)

    def _episode(self, task: Task, traj: Trajectory) -> None:
        """One episode, turn by turn into `traj`: generate, step in the gym, and again until it
        ends, or until its next turn would not fit the model's context (the model's fail)."""
        group_id, sample, version = traj.group_id, traj.sample, traj.version
        episode: Episode = self.gym.open(task)
        request = Request.first(task, group_id, sample)
        while True:
            where = {"group": group_id, "sample": sample, "turn": request.turn}
            try:
                gen = self._generate(request, version, where)
            except BaseException:
                self.pool.close_episode(episode)  # not in the pool: nobody else will
                raise
            if gen.context_full:
                self.pool.close_episode(episode)
                traj.turns.append(Turn(gen, CONTEXT_FULL))
                return
            call = self._step(episode, gen.text, traj)  # on stop, the pool's call closes the episode
            episode, result = call.episode, call.result
            role = self.gym.feedback_role
            traj.turns.append(Turn(gen, result.observation, result.reward, result.outcome, role))
            traj.gym_s += call.finished_at - call.started_at
            at = self.timeline.at
            self.timeline.add("gym-queue", "gym_queue", at(call.submitted_at), at(call.started_at), version, **where)
            grows = None if result.done else feedback_tokens(result.observation)  # the next prompt's growth
            self.timeline.add(f"gym-{call.worker}", "gym_step", at(call.started_at), at(call.finished_at), version,
                              **where, feedback_tokens=grows)  # fmt: skip
            if result.done:  # closed by the pool's worker, where its files are
                return
            request = request.then(gen, Message(role, result.observation))

    def _generate(self, request: Request, version: int, where: dict[str, int]) -> Generation:
        if self.buffer.stopping:
            raise Stopped
        asked = self.timeline.now()
        [gen] = self.policy.generate([request], version)
        self.timeline.add("generate-requests", "generate_request", asked, self.timeline.now(), version, **where)
        if self.buffer.stopping:
            raise Stopped
        return gen

    def _step(self, episode: Episode, action: str, traj: Trajectory) -> StepCall:
        """The gym step of `action`; on stop, leave it to close its episode when it returns."""
        priority = step_priority(traj.version, traj.predicted_gym_s) if self.schedule == "cost-aware" else None
        future = self.pool.submit(episode, action, priority)
        while True:
            try:
                return future.result(timeout=0.1)
            except cf.TimeoutError:
                if self.buffer.stopping:
                    future.add_done_callback(functools.partial(_close_episode, self.pool))
                    raise Stopped from None


def _close_episode(pool: StepPool, future: cf.Future[StepCall]) -> None:
    if not future.cancelled() and future.exception() is None:
        pool.close_episode(future.result().episode)
