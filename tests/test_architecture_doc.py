"""docs/architecture.md's module tables match the tree: every module of gyms/, trainer/ and
harness/ is named there (itself, or its package), and every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text()
NAMED = set(re.findall(r"`((?:gyms|trainer|harness|tools)/[\w/.\-]*)`", DOC))


def named(module: Path) -> bool:
    parts = module.relative_to(ROOT).parts
    return "/".join(parts) in NAMED or any("/".join(parts[:i]) + "/" in NAMED for i in range(1, len(parts)))


def test_every_module_is_in_the_architecture():
    modules = [p for top in ("gyms", "trainer", "harness") for p in (ROOT / top).rglob("*.py") if p.name != "__init__.py"]
    assert len(modules) > 50
    assert [str(p.relative_to(ROOT)) for p in modules if not named(p)] == []


def test_every_path_the_architecture_names_exists():
    assert len(NAMED) > 50
    assert sorted(n for n in NAMED if not (ROOT / n.rstrip("/")).exists()) == []
