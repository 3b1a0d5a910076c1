"""`harness`: the command line of heavygym. This module is its table of contents: each command
lives in a module of its own under harness/commands/, its options come from harness/options.py,
and what it prints from harness/console.py.

Commands import what only they need (torch, matplotlib) when they run, so that every command
starts quickly, and so do the gym pool's workers, which import this module again (spawn).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

import typer
from rich.markup import escape
from typer._click.exceptions import ClickException, NoArgsIsHelpError  # typer's own click (pyproject.toml)

from harness import errors
from harness.commands import (benchmark, calibrate, gyms, images, leaderboard, metrics, plan, report, serve, simulate,
                              tasks, tiny_model)  # fmt: skip
from harness.console import err
from harness.errors import BenchmarkInterrupted
from harness.options import WrappedHelp

app = typer.Typer(
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False, cls=WrappedHelp,
    rich_markup_mode=None,  # help wrapped to the terminal by click, not cut with '…' in rich's columns
    epilog="Exit codes: 0 done; 1 a check failed; 2 an error (one line on stderr names the file or value and "
    "the fix); 130 interrupted (Ctrl-C).",
)  # fmt: skip
app.add_typer(gyms.gyms_app, name="gyms")
app.add_typer(images.images_app, name="images")
for command in (benchmark.benchmark, report.report, leaderboard.leaderboard, metrics.metrics, calibrate.calibrate,
                simulate.simulate, serve.serve, plan.plan, tasks.tasks):  # fmt: skip
    app.command()(command)
app.command("tiny-model")(tiny_model.tiny_model)


def restore_ctrl_c() -> None:
    """Make Ctrl-C raise KeyboardInterrupt even when SIGINT was ignored at start-up.

    A non-interactive shell starts background jobs (`make test &`, CI runners, scripts) with
    SIGINT ignored; the ignore is inherited across exec, and Python then installs no handler of
    its own, so a SIGINT would be dropped and the run would go on as if never interrupted.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> None:
    restore_ctrl_c()
    try:
        code = app(standalone_mode=False)  # usage errors come here, to be one line like every other
    except NoArgsIsHelpError as exc:  # `harness`, `harness gyms`: the help itself
        exc.show()
        sys.exit(exc.exit_code)
    except ClickException as exc:  # a bad option or value: what, and where the help is
        where = f" (see {exc.ctx.command_path} --help)" if getattr(exc, "ctx", None) else ""
        err.print(f"[red]error:[/] {escape(exc.format_message())}{where}", soft_wrap=True, highlight=False)
        sys.exit(exc.exit_code)
    except BenchmarkInterrupted as exc:
        err.print(f"[yellow]{escape(str(exc))}[/]", soft_wrap=True)
        sys.exit(errors.INTERRUPTED)
    except Exception as exc:  # the one error boundary of every command: a line, never a traceback
        if os.environ.get(errors.SHOW_TRACEBACK) == "1":
            traceback.print_exc()
        err.print(f"[red]error:[/] {escape(errors.error_line(exc))}", soft_wrap=True, highlight=False)
        sys.exit(errors.FAILED)
    sys.exit(code or 0)  # a check's verdict (typer.Exit(1)), --help's 0
