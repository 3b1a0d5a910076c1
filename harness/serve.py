"""`harness serve`: one gym, its pool, and OpenEnv's server in front of them (docs/openenv.md).

There is no authentication: on loopback (the default) only this machine's users can connect.
Another --host exposes the gym to the network, so the command says so on stderr and asks for
a reverse proxy or a firewall in front of it; it does not refuse, since a cluster's private
network is a common home for an environment server.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
from collections.abc import Callable
from contextlib import closing

from gyms.base import Gym
from gyms.openenv.adapter import INSTALL_HINT
from gyms.pool import GymPool
from harness.errors import MissingExtra

DEFAULT_IDLE_TIMEOUT_S = 900.0  # a model's turn (generation) may take minutes; a vanished client does not hold forever


def require_openenv() -> None:
    try:
        import openenv.core  # noqa: F401
    except ImportError:  # a missing extra is the user's to install, not a bug: one line with the install
        raise MissingExtra(f"harness serve needs OpenEnv, which is not installed: {INSTALL_HINT}") from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str) -> str | None:
    if is_loopback(host):
        return None
    return (f"warning: --host {host} serves the gym beyond this machine, and harness serve has no "
            "authentication: anyone who reaches the port can run answers in its sandboxes and use its CPUs. "
            "Put it behind a reverse proxy that authenticates, or a firewall.")  # fmt: skip


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (port 0: one the system picks), bound before the server starts, so the
    address printed is the one that serves."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}; pick another --port "
                      "(0 lets the system choose)") from None  # fmt: skip
    return sock


def serve(
    gym: Gym,
    host: str,
    port: int,
    workers: int | None,
    max_sessions: int | None,
    idle_timeout_s: float | None,
    split: str,
    seed: int,
    say: Callable[[str], None],
) -> None:
    """Serve `gym` until interrupted; the pool (and every episode's work directory) goes with it."""
    require_openenv()
    import uvicorn

    from gyms.openenv.server import MAX_PAYLOAD_BYTES, ServedGym, build_app

    sock = bind(host, port)
    with closing(sock), GymPool(workers, step_timeout_s=gym.step_timeout_s, answer_keys=gym.answer_keys()) as pool:
        served = ServedGym(gym, pool, split, seed)
        sessions = max_sessions or 4 * pool.workers
        app = build_app(served, sessions, idle_timeout_s)
        url = f"{host}:{sock.getsockname()[1]}" if ":" not in host else f"[{host}]:{sock.getsockname()[1]}"
        say(f"serving gym {gym.name} ({len(served.tasks)} {split} tasks) as an OpenEnv environment at "
            f"http://{url} (WebSocket ws://{url}/ws): {pool.workers} gym workers, at most {sessions} sessions")
        config = uvicorn.Config(app, log_level="warning", ws_max_size=MAX_PAYLOAD_BYTES, timeout_graceful_shutdown=5)
        # uvicorn shuts down on SIGINT or SIGTERM, then raises the signal again: either is the
        # normal way to stop a server, so it ends here, and the pool's clean-up runs.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            uvicorn.Server(config).run(sockets=[sock])
        except KeyboardInterrupt:
            pass
    say("stopped: every session closed, every work directory removed")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
