"""Command outputs quoted in a Markdown file, kept true: every predicted figure the README quotes
sits in such a block, whose opening marker names the command that prints it.

    <!-- output of: harness simulate --run RUN --target 8x192 --results results -->
    ```text
    ...what the command prints on stdout...
    ```
    <!-- end of output -->

`check(path)` runs each command and returns the blocks whose text differs (tests/test_readme_outputs.py
fails on any); `write(path)` rewrites them (`python -m harness.readme_outputs README.md`). Commands
run from the file's directory with `harness` as this interpreter's, with wide columns so that no
line wraps.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_BLOCK = re.compile(r"<!-- output of: (?P<command>harness [^\n]*?) -->\n```text\n(?P<text>.*?)```\n<!-- end of output -->",
                    re.DOTALL)  # fmt: skip


@dataclass(frozen=True)
class Block:
    command: str
    quoted: str  # the text in the file
    printed: str  # what the command prints now


def run(command: str, cwd: Path) -> str:
    """The command's stdout; its failure is an error naming it."""
    args = shlex.split(command)[1:]
    env = {**os.environ, "COLUMNS": "1000", "HEAVYGYM_TRACEBACK": "0"}
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    if done.returncode != 0:
        raise ValueError(f"`{command}` exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    return [Block(m["command"], m["text"], run(m["command"], path.parent)) for m in _BLOCK.finditer(text)]


def check(path: Path) -> list[Block]:
    """The blocks whose quoted text is not what their command prints now."""
    return [b for b in blocks(path) if b.quoted != b.printed]


def write(path: Path) -> int:
    """Rewrite every block with what its command prints now; returns how many changed."""
    text = path.read_text()
    changed = 0

    def fresh(match: re.Match[str]) -> str:
        nonlocal changed
        printed = run(match["command"], path.parent)
        changed += printed != match["text"]
        return f"<!-- output of: {match['command']} -->\n```text\n{printed}```\n<!-- end of output -->"

    path.write_text(_BLOCK.sub(fresh, text))
    return changed


if __name__ == "__main__":
    for name in sys.argv[1:] or ["README.md"]:
        print(f"{name}: {write(Path(name))} block(s) rewritten")
