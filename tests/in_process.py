"""`harness ARGS` inside the test process: no interpreter start-up, same exit codes and output."""

from __future__ import annotations

import sys

import pytest

from harness.cli import main


def harness_here(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `harness ARGS`."""
    monkeypatch.setattr(sys, "argv", ["harness", *args])
    monkeypatch.setenv("COLUMNS", "1000")  # one line stays one line
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
