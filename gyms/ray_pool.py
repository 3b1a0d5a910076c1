"""RayGymPool: the gym pool's workers as Ray actors, placed across a cluster by resources.

Same interface and promises as `gyms.pool.GymPool` (the queue, accounting and replacement
are shared): a worker is an actor that steps pickled episodes on its own main thread, one
at a time. An actor asks for one CPU (one sandboxed step at a time) and, when some node
advertises the custom resource `gym:<name>`, one unit of it as well: advertising it pins the
gym to the nodes that have its tools (`ray start --resources '{"gym:verilog": 8}'`).
Actors are spread over the nodes. An actor or node that dies turns its call into an `error`
outcome and is replaced wherever resources allow.

An episode's files stay on the node that made them: its next turn runs on that node (see
`gyms.pool._Jobs`), and a finished episode is closed there. A stopped actor's sandboxes (a warm
checker, a step cut off by a host timeout) are killed, and the work directories it made are
removed, on its node by a task sent there (those of open episodes stay until the pool closes,
as with `GymPool`). Ray is imported only here, so the local executor needs none.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from gyms.base import Episode, StepResult
from gyms.pool import (
    START_TIMEOUT_S, Held, Job, SlotPool, WorkerStartFailed, answer, default_workers, failed, step_here,
)  # fmt: skip
from gyms.registry import load_class, make
from gyms.docker_sandbox import ENV_POOL, identity, remove_containers_of
from gyms.sandbox import ENV_BACKEND, ENV_IMAGE, alive, hide_from_sandboxes, kill_sandboxes_of, remove_workdirs_of

CPUS_PER_WORKER = 1
CLEANUP_TIMEOUT_S = 15.0


def pin_resource(gym_name: str) -> str:
    """The custom resource a node advertises to host workers of this gym."""
    return f"gym:{gym_name}"


class GymWorker:
    """One gym worker, run as a Ray actor (`ray.remote(GymWorker)` in the pool)."""

    def __init__(self, gym: str, options: dict[str, str]) -> None:
        import ray

        # A node without the gym fails here, at start-up, not mid-run.
        hide_from_sandboxes(*make(gym, **options).answer_keys())
        node_id = ray.get_runtime_context().get_node_id()
        self._where = (node_label(ray.util.get_node_ip_address(), node_id), node_id, os.getpid())

    def where(self) -> tuple[str, str, int]:
        """The node's label and id, and this actor's process id there."""
        return self._where

    def step(self, episode: Episode, action: str | None) -> tuple[Any, ...]:
        return step_here(episode, action)


def clean_up_after(pid: int, held: Held) -> tuple[int, int]:
    """Run on a stopped actor's node: wait for its process to end, then kill the sandboxes it
    left (as root they outlive it, see `gyms.sandbox.kill_sandboxes_of`) and remove the work
    directories it made, except the `held` ones; returns how many of each."""
    deadline = time.monotonic() + CLEANUP_TIMEOUT_S - 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = kill_sandboxes_of(pid, spare=held.uids)
    remove_containers_of(pid)  # the docker backend's warm container, on this node's daemon
    return killed, remove_workdirs_of(pid, keep=held.paths)


@dataclass(frozen=True)
class _Actor:
    handle: Any
    node_id: str
    pid: int


def node_label(ip: str, node_id: str) -> str:
    """A node as reports show it: its address, and a short id (nodes can share an address)."""
    return f"{ip}/{node_id[:8]}"


class RayGymPool(SlotPool[_Actor]):
    """Gym workers as Ray actors. `address`: a running cluster (`ray start --head` prints it);
    None starts a one-node Ray here with this machine's cores, and stops it on close."""

    def __init__(
        self,
        gym: str,
        gym_options: dict[str, str] | None = None,
        workers: int | None = None,
        step_timeout_s: float = 10.0,
        address: str | None = None,
    ) -> None:
        import ray

        self._ray = ray
        self._gym, self._options = gym, dict(gym_options or {})
        self._owns_connection = connect(address)
        try:
            self.resources = _pinned(pin_resource(load_class(gym).name))
            capacity = self._capacity()
            if capacity < 1:
                raise ValueError(f"no live Ray node can host a gym worker (one needs {self._needs()}); "
                                 "start worker nodes with `ray start --address HEAD:PORT --num-cpus N`")  # fmt: skip
            if workers is not None and workers > capacity:
                raise ValueError(f"{workers} gym workers asked for, but the Ray cluster has room for {capacity} "
                                 f"(each needs {self._needs()}); add nodes or lower --gym-workers")  # fmt: skip
            self._actor = ray.remote(GymWorker)
            self._clean_up_after = ray.remote(clean_up_after)
            super().__init__(workers or capacity, step_timeout_s)
        except BaseException:
            self._disconnect()
            raise

    def close(self) -> None:
        super().close()
        self._disconnect()

    # -- the executor ------------------------------------------------------------------------

    def _start(self) -> tuple[_Actor, str]:
        ray = self._ray
        # max_concurrency 1: steps run one at a time on the actor's main thread (math-verify's signals need it)
        # The sandbox chosen here (--sandbox, `use_backend`) goes with each actor: a cluster's
        # workers do not inherit this process's environment. Unset, no runtime env is asked for.
        chosen = {k: os.environ[k] for k in (ENV_BACKEND, ENV_IMAGE) if os.environ.get(k)}
        if chosen.get(ENV_BACKEND) == "docker":  # the actors of a node share the pool's directory
            chosen[ENV_POOL] = identity()
        actor = self._actor.options(
            num_cpus=CPUS_PER_WORKER, resources=self.resources, max_concurrency=1, max_restarts=0,
            scheduling_strategy="SPREAD", **({"runtime_env": {"env_vars": chosen}} if chosen else {}),
        ).remote(self._gym, self._options)  # fmt: skip
        hello = actor.where.remote()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ray.wait([hello], timeout=1.0)[0]:  # short waits: close() must not wait a minute
            if self._closed or time.monotonic() > deadline:
                ray.kill(actor)
                raise WorkerStartFailed(
                    f"no Ray node had room for a gym worker ({self._needs()}) within {START_TIMEOUT_S:.0f} s"
                )
        try:
            label, node_id, pid = ray.get(hello)
        except ray.exceptions.RayError as exc:
            ray.kill(actor)
            raise WorkerStartFailed(f"the gym worker actor died at start-up: {_last_line(exc)}") from None
        return _Actor(actor, node_id, pid), label

    def _call(self, worker: _Actor, job: Job) -> tuple[Episode, StepResult, bool]:
        exceptions = self._ray.exceptions
        try:
            ref = worker.handle.step.remote(job.episode, job.action)
        except Exception as exc:  # the gym's episode is not picklable
            return *failed(job, f"the episode could not be sent to a worker: {exc!r}"), False
        try:
            reply = self._ray.get(ref, timeout=self.host_timeout_s)
        except exceptions.GetTimeoutError:
            return *failed(job, f"host timeout: no answer from the gym worker in {self.host_timeout_s:.0f} s"), True
        except exceptions.RayActorError as exc:  # the actor, or its node, died
            return *failed(job, f"gym worker died during the step: {_death(exc)}"), True
        except exceptions.RayError as exc:  # the answer did not come back (it does not pickle)
            return *failed(job, f"the worker's answer could not be read: {_last_line(exc)}"), False
        return *answer(job, reply), False

    def _stop(self, worker: _Actor, held: Held) -> None:
        try:
            self._ray.kill(worker.handle, no_restart=True)
        except Exception:  # already gone with its node
            pass
        self._on_node_of(worker, held)

    def _release(self, worker: _Actor) -> None:
        self._on_node_of(worker, Held())

    def _on_node_of(self, worker: _Actor, held: Held) -> None:
        """Clean up after a stopped actor on its node, keeping `held`."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        # No CPU asked: the node is full of gym workers. A dead node fails the task at once.
        on_its_node = NodeAffinitySchedulingStrategy(worker.node_id, soft=False)
        cleanup = self._clean_up_after.options(num_cpus=0, scheduling_strategy=on_its_node).remote(worker.pid, held)
        try:
            ray.get(cleanup, timeout=CLEANUP_TIMEOUT_S)
        except ray.exceptions.RayError:  # the node is gone, and its processes with it
            pass

    # -- the cluster -------------------------------------------------------------------------

    def _needs(self) -> dict[str, float]:
        return {"CPU": CPUS_PER_WORKER, **self.resources}

    def _capacity(self) -> int:
        """How many workers the live nodes can hold at once."""
        room = 0
        for node in self._ray.nodes():
            if node["Alive"]:
                have = node["Resources"]
                room += int(min(have.get(name, 0.0) // amount for name, amount in self._needs().items()))
        return room

    def _disconnect(self) -> None:
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns_connection = False


def connect(address: str | None) -> bool:
    """Connect this process to Ray; True when it was not connected before (then it disconnects
    on close). Without an address, start a one-node Ray with this machine's cores."""
    import ray

    if ray.is_initialized():
        return False
    if address is None:
        ray.init(address="local", include_dashboard=False, num_cpus=default_workers())  # new, even if RAY_ADDRESS
        return True
    _check_reachable(address)
    try:
        ray.init(address=address, include_dashboard=False)
    except (ConnectionError, RuntimeError) as exc:  # no cluster there; a Ray or Python version mismatch
        raise ValueError(f"cannot connect to Ray at {address!r}: {exc}") from None
    return True


def _check_reachable(address: str) -> None:
    """A quick look before ray.init, which retries an unreachable address for minutes."""
    if address in ("auto", "local"):
        return  # Ray finds (or fails to find) the cluster on this machine at once
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--ray-address is HOST:PORT (what `ray start --head` prints) or 'auto', got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ValueError(
            f"Ray is not reachable at {address} ({exc.strerror or exc}); start the head node with "
            "`ray start --head` and pass the address it prints, or check the firewall"
        ) from None


def _pinned(resource: str) -> dict[str, float]:
    """Ask for the gym's resource only when some node advertises it (the user pinned the gym)."""
    import ray

    return {resource: 1.0} if ray.cluster_resources().get(resource, 0.0) >= 1 else {}


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _death(exc: BaseException) -> str:
    """Ray's reason, e.g. 'The actor died because its node has died.'"""
    lines = [line.strip() for line in str(exc).splitlines()]
    return next((line for line in lines if line.startswith("The actor died because")), _last_line(exc))
