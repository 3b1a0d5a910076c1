"""The Ray executor on a real Ray cluster of several nodes on this machine (ray.cluster_utils).

One cluster for the module: a head without CPUs (where the trainer sits) and two worker nodes
of two CPUs each; the first also advertises `gym:pinned-toy`. The fixture always shuts Ray
down: a killed driver leaves worker processes behind.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import ray
from conftest import harness
from ray.cluster_utils import Cluster
from ray_gyms import NodeGym, PinnedGym, node_of
from recording_policy import RecordingReplay
from toy_gyms import FilesGym

from gyms import Outcome
from gyms.base import GYM_EXCEPTION
from gyms.executors import make_pool
from gyms.pool import GymPoolBroken
from gyms.ray_pool import RayGymPool
from harness.benchmark import BenchmarkSpec, run_benchmark
from trainer.pipeline import RunConfig, run
from trainer.policies.profiles import HardwareProfile
from trainer.policies.replay import ReplayPolicy

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
WORKER_NODES = ({"num_cpus": 2, "resources": {"gym:pinned-toy": 2}}, {"num_cpus": 2})
# Small but non-zero stage times, so rollout and training overlap in async mode.
FAST = HardwareProfile("test-fast", "test", 1e-5, 1e-5, 0.01, response_tokens=100, prompt_tokens=10)


class LocalCluster:
    """A Ray cluster of several nodes on this machine, that remembers how each node was made."""

    def __init__(self) -> None:
        # Health checks every second, three misses: a killed node is declared dead in seconds, not ~30 s.
        fast_checks = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": False, "_system_config": fast_checks})  # fmt: skip
        self.args: dict[str, dict] = {}  # node id -> add_node arguments

    @property
    def address(self) -> str:
        return self.cluster.address

    def add(self, args: dict) -> None:
        node = self.cluster.add_node(**args)
        self.args[node.node_id] = args
        self.cluster.wait_for_nodes()

    def node_id(self, label: str) -> str:
        """The node a pool's placement label (ip/short id) names."""
        return next(n for n in self.args if label.endswith("/" + n[:8]))

    def kill(self, node_id: str) -> dict:
        """Kill a worker node as a crash would; returns the arguments it was made with."""
        node = next(n for n in self.cluster.worker_nodes if n.node_id == node_id)
        self.cluster.remove_node(node, allow_graceful=False)
        return self.args.pop(node_id)


@pytest.fixture(scope="module")
def cluster():
    with pytest.MonkeyPatch.context() as env:
        # Ray workers inherit the nodes' environment: they must import tests/ray_gyms.py.
        env.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))
        local = LocalCluster()
        try:
            for args in WORKER_NODES:
                local.add(args)
            yield local
        finally:
            ray.shutdown()
            local.cluster.shutdown()




def spec(executor: str, address: str | None = None) -> BenchmarkSpec:
    return BenchmarkSpec(gym="math", gym_options={}, steps=3, batch_groups=2, group_size=2, profile="zero",
                         gym_workers=4, executor=executor, ray_address=address)  # fmt: skip


def test_a_ray_run_matches_the_local_executors_accounting(cluster, tmp_path):
    local, _ = run_benchmark(spec("local"), tmp_path)
    remote, run_dir = run_benchmark(spec("ray", cluster.address), tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["spec"]["executor"] == "ray"
    for mode in ("sync", "async"):
        here, there = local["modes"][mode], remote["modes"][mode]
        assert set(here) == set(there), "both executors report the same figures"
        for figures in (here, there):
            acc = figures["accounting"]
            assert acc["balanced"] is True
            assert acc["trained"] == 3 * 2 * 2 and acc["errored"] == 0
        if mode == "sync":
            assert here["staleness_histogram"] == there["staleness_histogram"] == {"0": 12}

        (host,) = here["gym_utilisation_by_node"].values()  # one node: the pool's own figure
        assert host["workers"] == pytest.approx(4)
        assert host["utilisation"] == pytest.approx(here["gym_utilisation"])
        nodes = there["gym_utilisation_by_node"]
        assert len(nodes) == 2, "four workers of one CPU need both two-CPU nodes"
        assert sum(n["workers"] for n in nodes.values()) == pytest.approx(4)
        weighted = sum(n["utilisation"] * n["workers"] for n in nodes.values()) / 4
        assert weighted == pytest.approx(there["gym_utilisation"])


def test_multi_turn_episodes_keep_one_version_and_one_node(cluster):
    gym = NodeGym(max_turns=3, tasks=4)
    policy = RecordingReplay(gym, FAST, skill=0.3, seed=1)
    config = RunConfig(mode="async", steps=5, batch_groups=2, group_size=4, max_staleness=1)
    with RayGymPool("ray_gyms:NodeGym", {"max_turns": "3", "tasks": "4"}, workers=4,
                    step_timeout_s=gym.step_timeout_s, address=cluster.address) as pool:  # fmt: skip
        result = run(gym, policy, pool, config)

    trajectories = [t for _, g in policy.trained for t in g.trajectories]
    assert any(len(t.turns) > 1 for t in trajectories), "the test needs episodes that span several turns"
    for trainer_version, group in policy.trained:
        for traj in group.trajectories:
            assert {turn.generation.version for turn in traj.turns} == {traj.version} == {group.version}
            assert 0 <= trainer_version - traj.version <= config.staleness
            # an episode's files live on the node of its first step: every turn runs there
            assert len({node_of(turn.observation) for turn in traj.turns}) == 1
    assert len({node_of(t.turns[0].observation) for t in trajectories}) == 2
    assert result.accounting.balanced(), result.accounting


def test_a_gym_that_nodes_advertise_runs_only_on_those_nodes(cluster):
    (pinned,) = [node for node, args in cluster.args.items() if "gym:pinned-toy" in args.get("resources", {})]
    gym = PinnedGym()
    with RayGymPool("ray_gyms:PinnedGym", step_timeout_s=gym.step_timeout_s, address=cluster.address) as pool:
        assert pool.resources == {"gym:pinned-toy": 1.0}
        assert pool.workers == 2, "the default size is the room the advertising nodes have"
        calls = [f.result() for f in [pool.submit(gym.open(gym.tasks()[0]), "sleep:0.05") for _ in range(6)]]
    assert {node_of(c.result.observation) for c in calls} == {pinned}
    with pytest.raises(ValueError, match="room for 2"):
        RayGymPool("ray_gyms:PinnedGym", workers=3, address=cluster.address)


def test_a_crash_or_a_hang_replaces_the_worker_and_a_gym_bug_does_not(cluster):
    gym = NodeGym()
    with RayGymPool("ray_gyms:NodeGym", workers=1, step_timeout_s=0.1, address=cluster.address) as pool:
        # host timeout: 0.1 s x 1.5 + 5 s
        actions = ("raise", "crash", "sleep:30", "pass")
        raised, crashed, hung, after = [pool.step(gym.open(gym.tasks()[0]), a) for a in actions]
        restarts, gym_exceptions = pool.stats.restarts, pool.stats.gym_exceptions
    assert raised.result.outcome is Outcome.FAIL and "a bug in the gym" in raised.result.info[GYM_EXCEPTION]
    assert gym_exceptions == 1
    assert crashed.result.outcome is Outcome.ERROR and "died" in crashed.result.info["error"]
    assert hung.result.outcome is Outcome.ERROR and "host timeout" in hung.result.info["error"]
    assert after.result.outcome is Outcome.PASS
    assert restarts == 2


def test_a_dead_actor_leaves_no_sandboxed_process_on_its_node(cluster):
    gym = NodeGym()
    seconds = f"{600 + random.random():.6f}"  # names this test's process among all others
    with RayGymPool("ray_gyms:NodeGym", workers=1, address=cluster.address) as pool:
        call = pool.step(gym.open(gym.tasks()[0]), f"orphan:{seconds}")
        assert call.result.outcome is Outcome.ERROR and "died" in call.result.info["error"]
        left = subprocess.run(["pgrep", "-f", f"sleep {seconds}"], capture_output=True, text=True).stdout.split()
        assert left == [], "the dead actor's sandbox outlived it"


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids of their own need a root host")
def test_a_dead_actor_leaves_no_work_directory_on_its_node_but_what_open_episodes_hold(cluster):
    gym = FilesGym(tag=f"{random.randrange(10**9):09d}")
    pids: set[int] = set()
    with RayGymPool("toy_gyms:FilesGym", {"tag": gym.tag}, workers=1, address=cluster.address) as pool:
        kept = pool.step(gym.open(gym.tasks()[0]), "wrong")
        pids.add(kept.result.info["pid"])
        crashed = pool.step(gym.open(gym.tasks()[1]), "crash")  # dies with a sandbox running
        assert crashed.result.outcome is Outcome.ERROR and "died" in crashed.result.info["error"]
        assert gym.directories_left(pids) == [Path(kept.result.info["workdir"]).name]
        assert gym.processes_left(pids) == []
        finished = pool.step(kept.episode, "pass")  # the replacement, on the node with the files
        assert finished.result.outcome is Outcome.PASS, finished.result.observation
        pids.add(finished.result.info["pid"])
        pool.step(gym.open(gym.tasks()[2]), "wrong")  # left open at close
    assert gym.directories_left(pids) == []
    assert gym.processes_left(pids) == []


def test_workers_that_cannot_start_break_the_pool_with_the_reason(cluster):
    gym = NodeGym()
    with RayGymPool("ray_gyms:NodeGym", {"tasks": "many"}, workers=1, address=cluster.address) as pool:
        with pytest.raises(GymPoolBroken, match="3 times in a row: .*invalid literal for int"):
            pool.wait_started(300)  # what the benchmark waits for before it measures: no hang
        with pytest.raises(GymPoolBroken, match="3 times in a row: .*invalid literal for int"):
            pool.step(gym.open(gym.tasks()[0]), "pass")


def test_a_lost_node_turns_its_calls_into_errors_and_the_run_goes_on(cluster):
    gym = NodeGym(max_turns=2, tasks=4)
    config = RunConfig(mode="async", steps=8, batch_groups=2, group_size=4, max_staleness=1)
    killed: dict[str, dict] = {}  # node id -> how it was made
    try:
        with RayGymPool("ray_gyms:NodeGym", {"max_turns": "2", "tasks": "4"}, workers=2,
                        step_timeout_s=gym.step_timeout_s, address=cluster.address) as pool:  # fmt: skip

            def kill_a_worker_node(step) -> None:
                if step.step == 0:  # mid-run: rollout keeps submitting while the trainer is here
                    node = cluster.node_id(latest_node(pool, 0))
                    killed[node] = cluster.kill(node)

            result = run(gym, ReplayPolicy(gym, FAST, skill=0.3, seed=2), pool, config, on_step=kill_a_worker_node)
            (lost,) = killed
            # Ray declares the node dead after its health checks; the slot's new worker lands elsewhere.
            replaced = wait_for(lambda: all(not latest_node(pool, s).endswith(lost[:8]) for s in range(2)))
            after = [pool.step(gym.open(gym.tasks()[0]), "pass").result.outcome.value for _ in range(4)]
            stats = pool.stats
    finally:
        for args in killed.values():
            cluster.add(args)  # the next test finds the cluster as it was

    assert len(result.steps) == config.steps
    assert stats.errors >= 1 and stats.restarts >= 1
    assert result.accounting.errored >= 1
    assert result.accounting.balanced(), result.accounting
    assert replaced, "the lost node's gym worker was never replaced"
    assert after == ["pass"] * 4


def latest_node(pool: RayGymPool, slot: int) -> str:
    return [p for p in pool.worker_nodes if p.slot == slot][-1].node


def wait_for(condition: Callable[[], bool], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_harness_benchmark_runs_on_the_ray_cluster(cluster, tmp_path):
    out = harness("benchmark", "--gym", "math", "--executor", "ray", "--ray-address", cluster.address,
                  "--steps", "2", "--batch", "1", "--group", "2", "--profile", "zero", "--results", str(tmp_path),
                  env={"COLUMNS": "200"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "gym node (ray)" in out.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["spec"]["executor"] == "ray" and summary["gym_workers"] == 4
    for figures in summary["modes"].values():
        assert figures["accounting"]["balanced"] is True
        assert len(figures["gym_utilisation_by_node"]) == 2


def test_executor_choices_are_checked_with_the_fix_named():
    with pytest.raises(ValueError, match="unknown executor 'warp'; use one of: local, ray"):
        make_pool("warp", "math")
    with pytest.raises(ValueError, match="--ray-address needs --executor ray"):
        make_pool("local", "math", ray_address="10.0.0.1:6379")
    with pytest.raises(ValueError, match="HOST:PORT"):
        make_pool("ray", "math", ray_address="head-node")
    refused = harness("benchmark", "--gym", "math", "--executor", "warp", env={"COLUMNS": "200"})
    assert refused.returncode == 2 and "unknown executor 'warp'" in refused.stderr
    assert "benchmark gym" not in refused.stdout, "refused before the run starts"


def test_an_unreachable_cluster_is_one_clear_line(tmp_path):
    out = harness("benchmark", "--gym", "math", "--executor", "ray", "--ray-address", "127.0.0.1:1",
                  "--results", str(tmp_path), env={"COLUMNS": "200"})  # fmt: skip
    assert out.returncode == 2
    assert "Ray is not reachable at 127.0.0.1:1" in out.stderr and "ray start --head" in out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert not (tmp_path / "runs").exists(), "a run that cannot start leaves no run directory"
