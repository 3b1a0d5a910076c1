"""Find gyms by name through the `heavygym.gyms` entry-point group.

Built-in gyms are registered there too (see pyproject.toml), so a third-party gym is a pip
package with one entry point and nothing else. Loading is lazy: listing names imports
nothing, and a plugin that fails to import raises `GymLoadError` for that plugin alone.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from gyms.base import Gym

ENTRY_POINT_GROUP = "heavygym.gyms"


class GymLoadError(RuntimeError):
    """A registered gym could not be loaded or constructed."""

    def __init__(self, name: str, source: str, cause: str) -> None:
        super().__init__(f"gym {name!r} (from {source}) failed to load: {cause}")
        self.name = name
        self.source = source
        self.cause = cause


class UnknownGymOptionError(LookupError):
    """An option the gym's constructor does not take: named, with the ones it does."""

    def __init__(self, name: str, option: str, known: list[str]) -> None:
        close = difflib.get_close_matches(option, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listing = f"its options are: {', '.join(known)}" if known else "it takes no options"
        super().__init__(f"gym {name!r} has no option {option!r}{hint}; {listing}")
        self.name = name
        self.option = option


class UnknownGymError(LookupError):
    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        listing = ", ".join(known) or "none"
        super().__init__(
            f"no gym named {name!r}.{hint} Installed gyms: {listing}. "
            "`harness gyms list` shows them; a third-party gym is installed with pip."
        )
        self.name = name


@dataclass(frozen=True)
class GymEntry:
    name: str
    target: str  # "module:attr"
    distribution: str
    conflict: str | None = None  # set when two distributions register the same name


def registered() -> dict[str, GymEntry]:
    """Every registered gym by name, without importing any of them."""
    found: dict[str, GymEntry] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "unknown distribution"
        entry = GymEntry(ep.name, ep.value, dist)
        first = found.get(ep.name)
        # The same distribution can be visible twice (an editable install beside a build).
        if first is not None and first.target != ep.value:
            entry = GymEntry(
                ep.name,
                first.target,
                first.distribution,
                conflict=f"{dist} registers the name too ({ep.value}); uninstall one of them",
            )
        found[ep.name] = entry
    return dict(sorted(found.items()))


def load_class(name: str) -> type[Gym]:
    """The gym class for a registered name, or for a `module:Class` path."""
    if ":" in name:
        return _import_gym(name, name, "a module path")
    entries = registered()
    if name not in entries:
        raise UnknownGymError(name, list(entries))
    entry = entries[name]
    if entry.conflict:
        raise GymLoadError(name, entry.distribution, entry.conflict)
    return _import_gym(name, entry.target, entry.distribution)


def make(name: str, **options: Any) -> Gym:
    """Construct a gym by name (or `module:Class`) with keyword options."""
    cls = load_class(name)
    known = option_names(cls)
    unknown = [key for key in options if known is not None and key not in known]
    if unknown:  # before the constructor, whose TypeError names no gym and no valid option
        raise UnknownGymOptionError(name, unknown[0], known or [])
    try:
        return cls(**options)
    except TypeError as exc:  # unknown or missing option
        raise GymLoadError(name, cls.__module__, f"bad options {options!r}: {exc}") from exc


def option_names(cls: type[Gym]) -> list[str] | None:
    """The keyword options a gym class takes, in its constructor's order; None where it takes
    any (**options: a wrapper such as harness.control's InstantGym, whose inner gym checks them)."""
    params = inspect.signature(cls).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _import_gym(name: str, target: str, source: str) -> type[Gym]:
    try:
        obj = EntryPoint(name=name, value=target, group=ENTRY_POINT_GROUP).load()
    except Exception as exc:  # a broken plugin must not take the others down
        raise GymLoadError(name, source, f"{type(exc).__name__}: {exc}") from exc
    if not (isinstance(obj, type) and issubclass(obj, Gym)):
        raise GymLoadError(name, source, f"{target} is not a subclass of gyms.Gym")
    if getattr(obj, "name", None) != name and ":" not in name:
        raise GymLoadError(name, source, f"{target} says its name is {getattr(obj, 'name', None)!r}")
    return obj
