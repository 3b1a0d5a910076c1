"""HeavyLib, the project's own Modelica component library, its interface summary for prompts,
and how libraries are found in a library root.

Tasks use HeavyLib instead of the Modelica Standard Library, which no package here ships.
A prompt that lets the model use HeavyLib lists the interface of the packages the task needs:
each class with its declarations (connectors, parameters, variables), without equations.
The summary is read from the .mo files, so it cannot drift from the library.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

LIBRARY_ROOT = Path(__file__).with_name("library")
LIBRARY_NAME = "HeavyLib"
PACKAGES = ("Electrical", "Translational", "Rotational", "Thermal", "Blocks")

_PACKAGE_HEADER = re.compile(r'^package (\w+)\s*("[^"]*")?', re.MULTILINE)
_CLASS = re.compile(
    r'^  ((?:partial )?(?:model|block|connector)) (\w+)\s*(=[^";]*)?("[^"]*")?;?\n(.*?)(?=^  (?:end \2;|\S))',
    re.MULTILINE | re.DOTALL,
)
_SECTION = re.compile(r"^\s*(?:initial )?(?:equation|algorithm)\b", re.MULTILINE)


def library_names(roots: Sequence[str]) -> dict[str, str]:
    """Top-level libraries in the roots (`Name/package.mo`, `Name 4.0.0/`, `Name.mo`) and their root.

    The first root that has a library wins, as on a MODELICAPATH.
    """
    found: dict[str, str] = {}
    for root in roots:
        for entry in sorted(Path(root).iterdir()):
            if entry.is_dir() and (entry / "package.mo").is_file():
                found.setdefault(entry.name.split(" ")[0], root)
            elif entry.suffix == ".mo" and entry.is_file():
                found.setdefault(entry.stem.split(" ")[0], root)
    return found


def summary(packages: Sequence[str]) -> str:
    """The interface of the named HeavyLib packages, one class per line."""
    unknown = sorted(set(packages) - set(PACKAGES))
    if unknown:
        raise ValueError(f"HeavyLib has no package(s) {', '.join(unknown)}; it has {', '.join(PACKAGES)}")
    return "\n".join(_package_summary(name) for name in packages)


@functools.cache
def _package_summary(package: str) -> str:
    text = (LIBRARY_ROOT / LIBRARY_NAME / f"{package}.mo").read_text()
    header = _PACKAGE_HEADER.search(text)
    description = f" {header.group(2)}" if header and header.group(2) else ""
    lines = [f"package {LIBRARY_NAME}.{package}{description}"]
    for kind, name, short, comment, body in _CLASS.findall(text):
        described = f" {comment}" if comment else ""
        if short:  # connector RealInput = input Real
            lines.append(f"  {kind} {name} {short.strip()}{described}")
            continue
        declarations = _SECTION.split(body)[0]
        members = [" ".join(d.split()) for d in declarations.split(";") if d.strip()]
        lines.append(f"  {kind} {name}{described}: " + "; ".join(members))
    return "\n".join(lines)
