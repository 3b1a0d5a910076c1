"""`harness serve`: a gym as an OpenEnv environment (harness/serve.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from harness import outputs
from harness import serve as serving
from harness.console import err
from harness.errors import start_gym
from harness.options import GymArgument, GymOptions, GymWorkers, SandboxBackend, Seed, Split, parse_options


def serve(
    gym: GymArgument,
    gym_option: GymOptions = None,
    host: Annotated[str, typer.Option(help="Address to listen on. Anything but loopback is reachable by others, "
                                      "with no authentication (docs/openenv.md).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: one the system picks; printed).")] = 8000,
    gym_workers: GymWorkers = None,
    max_sessions: Annotated[Optional[int], typer.Option(min=1, help="Concurrent sessions; one more is refused as "
                                                        "busy (default: 4 per gym worker).")] = None,
    idle_timeout: Annotated[float, typer.Option(min=1, help="Seconds a session may stay silent before it is "
                                                "closed.")] = serving.DEFAULT_IDLE_TIMEOUT_S,
    split: Split = "train",
    seed: Seed = 0,
    sandbox: SandboxBackend = None,
    tasks_file: Annotated[Optional[Path], typer.Option(help="Also write the gym's tasks, with its known answers "
                                                       "(the answer key), as a tasks file for the openenv gym "
                                                       "(-o tasks=FILE), then serve.")] = None,
) -> None:
    """Serve a gym as an OpenEnv environment (HTTP and WebSocket reset/step/state), each step
    checked in the gym pool's sandboxes, until Ctrl-C."""
    serving.require_openenv()
    warning = serving.exposure_warning(host)
    if warning:
        err.print(f"[yellow]{escape(warning)}[/]", soft_wrap=True)
    chosen = start_gym(gym, parse_options(gym_option), split, sandbox)
    if tasks_file is not None:
        from gyms.openenv.adapter import tasks_file_lines

        outputs.write_text(tasks_file, "\n".join(tasks_file_lines(chosen, split)) + "\n")
    serving.serve(chosen, host, port, gym_workers, max_sessions, idle_timeout, split, seed,
                  say=lambda line: err.print(line, soft_wrap=True, highlight=False, markup=False))  # fmt: skip
