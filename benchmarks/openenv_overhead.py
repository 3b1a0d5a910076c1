"""What serving a gym over OpenEnv adds per step, and how many sessions one server carries.

Per gym (`null`: benchmarks/null_gym.py, whose check costs nothing, so the difference is all
transport; and `verilog`, a real simulation), one-turn episodes of the gym's reference answer,
timed four ways, interleaved sample by sample so that drift of this shared machine falls on
all alike:

- `in_process`: `GymPool.step` on a local pool (pickle to a worker, step, pickle back): the
  baseline, what `harness benchmark --gym GYM` pays;
- `websocket`: OpenEnv's client on a `/ws` session of `harness serve GYM`, the step alone
  (the session and its reset are made before the clock starts);
- `http`: one stateless `POST /step` naming the task (OpenEnv makes and closes an environment
  per request);
- `openenv_gym`: `GymPool.step` of the `openenv` gym pointed at the server, as `harness
  benchmark --gym openenv` pays it (its own worker hop, then the WebSocket, then the server's).

Then the null gym's throughput with N sessions stepping at once, each on a client thread of
this process (so the clients share the two cores with the server: the figure is a floor).

    .venv/bin/python benchmarks/openenv_overhead.py [--samples 200] [--verilog-samples 40] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)

from gyms import Gym, make  # noqa: E402
from gyms.openenv.client import GymClient  # noqa: E402
from gyms.openenv.protocol import AnswerAction  # noqa: E402
from gyms.pool import GymPool  # noqa: E402

GYMS = {"null": "null_gym:NullGym", "verilog": "verilog"}
WORKERS = 2


@contextmanager
def served(gym: str, max_sessions: int):
    harness = Path(sys.executable).parent / "harness"
    proc = subprocess.Popen([str(harness), "serve", gym, "--port", "0", "--gym-workers", str(WORKERS),
                             "--max-sessions", str(max_sessions)], stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if found := re.search(r"at (http://\S+) ", line):
                break
        else:
            raise RuntimeError("harness serve exited")
        url = found[1]
        while True:
            try:
                if requests.get(f"{url}/health", timeout=5).ok:
                    break
            except requests.ConnectionError:
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def reference(gym: Gym, task_id: str) -> str:
    task = next(t for t in gym.tasks() if t.id == task_id)
    return next(c.action for c in gym.candidates(task, random.Random(task.id)) if c.expect == "pass")


def quantiles(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"n": len(ms), "p50_ms": statistics.median(ordered), "p90_ms": ordered[int(0.9 * (len(ordered) - 1))],
            "mean_ms": statistics.fmean(ordered)}  # fmt: skip


def per_step(name: str, samples: int) -> dict:
    gym = make(GYMS[name])
    tasks = list(gym.tasks())[:8]
    answers = {t.id: reference(gym, t.id) for t in tasks}
    times: dict[str, list[float]] = {k: [] for k in ("in_process", "websocket", "http", "openenv_gym")}
    with served(GYMS[name], 4 * WORKERS) as url, GymPool(WORKERS, step_timeout_s=gym.step_timeout_s) as pool:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as listing:
            listing.writelines(json.dumps({"id": t.id, "reset": {"task_id": t.id}}) + "\n" for t in tasks)
        remote = make("openenv", url=url, tasks=listing.name)
        remote_tasks = {t.id: t for t in remote.tasks()}
        os.unlink(listing.name)
        with GymPool(WORKERS, step_timeout_s=remote.step_timeout_s) as remote_pool, \
                GymClient(base_url=url).sync() as env:  # fmt: skip
            for k in range(samples + 2):  # the first two of each are warm-up (worker start, caches)
                task = tasks[k % len(tasks)]
                answer = answers[task.id]
                t = time.perf_counter()
                call = pool.step(gym.open(task), answer)
                record(times, "in_process", t, k, call.result.reward)

                env.reset(task_id=task.id)
                t = time.perf_counter()
                result = env.step(AnswerAction(answer=answer))
                record(times, "websocket", t, k, result.reward)

                t = time.perf_counter()
                reply = requests.post(f"{url}/step", json={"action": {"answer": answer, "task_id": task.id}}, timeout=120)
                record(times, "http", t, k, reply.json()["reward"])

                t = time.perf_counter()
                call = remote_pool.step(remote.open(remote_tasks[task.id]), answer)
                record(times, "openenv_gym", t, k, call.result.reward)
    figures = {way: quantiles(ms) for way, ms in times.items()}
    base = figures["in_process"]["p50_ms"]
    for way in figures:
        figures[way]["added_p50_ms"] = figures[way]["p50_ms"] - base
    return figures


def record(times: dict[str, list[float]], way: str, started: float, k: int, reward: float | None) -> None:
    elapsed_ms = 1000 * (time.perf_counter() - started)
    if reward != 1.0:
        raise RuntimeError(f"{way}: the reference answer got reward {reward}")
    if k >= 2:
        times[way].append(elapsed_ms)


def throughput(levels: list[int], seconds: float) -> list[dict]:
    gym = make(GYMS["null"])
    task = gym.tasks()[0]
    answer = reference(gym, task.id)
    rows = []
    with served(GYMS["null"], max(levels)) as url:
        with GymClient(base_url=url).sync() as env:  # warm-up: the server's gym workers start on first use
            for _ in range(2 * WORKERS):
                env.reset(task_id=task.id)
                env.step(AnswerAction(answer=answer))
        for sessions in levels:
            clients = [GymClient(base_url=url).sync() for _ in range(sessions)]
            latencies: list[float] = []
            lock = threading.Lock()
            stop = time.perf_counter() + seconds

            def loop(env) -> None:  # type: ignore[no-untyped-def]
                mine = []
                while time.perf_counter() < stop:
                    env.reset(task_id=task.id)
                    t = time.perf_counter()
                    env.step(AnswerAction(answer=answer))
                    mine.append(1000 * (time.perf_counter() - t))
                with lock:
                    latencies.extend(mine)

            threads = [threading.Thread(target=loop, args=(c,)) for c in clients]
            began = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            wall = time.perf_counter() - began
            for c in clients:
                c.close()
            rows.append({"sessions": sessions, "episodes_per_s": len(latencies) / wall, **quantiles(latencies)})
            print(f"  {sessions:3d} sessions: {rows[-1]['episodes_per_s']:.0f} episodes/s, "
                  f"step p50 {rows[-1]['p50_ms']:.1f} ms", flush=True)  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200, help="Null-gym episodes per way")
    parser.add_argument("--verilog-samples", type=int, default=40, help="Verilog episodes per way")
    parser.add_argument("--sessions", default="1,2,4,8,16,32,64", help="Concurrent sessions to try")
    parser.add_argument("--seconds", type=float, default=10.0, help="Per concurrency level")
    parser.add_argument("--out", type=Path, help="Also write the figures as JSON here")
    args = parser.parse_args()

    figures: dict = {"cores": len(os.sched_getaffinity(0)), "gym_workers": WORKERS}
    for name, samples in (("null", args.samples), ("verilog", args.verilog_samples)):
        print(f"{name}: {samples} one-turn episodes per way", flush=True)
        figures[name] = per_step(name, samples)
        for way, q in figures[name].items():
            print(f"  {way:12s} p50 {q['p50_ms']:8.2f} ms  p90 {q['p90_ms']:8.2f} ms  "
                  f"added p50 {q['added_p50_ms']:+7.2f} ms", flush=True)  # fmt: skip
    print("null gym, concurrent WebSocket sessions:", flush=True)
    figures["concurrency"] = throughput([int(n) for n in args.sessions.split(",")], args.seconds)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
