"""Where heavygym keeps what it computes once and reuses: on the host, private to the user,
never inside a sandbox. `$XDG_CACHE_HOME/heavygym/<name>` (else `~/.cache/heavygym/<name>`),
or the folder an environment variable names."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_dir(name: str, env: str | None = None) -> Path:
    explicit = os.environ.get(env) if env else None
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "heavygym" / name


def write_json_atomically(path: Path, blob: Any) -> None:
    """Write `blob` as JSON to `path`, so that a reader sees the old file or the whole new one
    (another worker may be writing the same key); folders are made mode 700. Raises OSError."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(blob, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
