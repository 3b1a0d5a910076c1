"""Frozen records that read as mappings and round-trip through JSON.

A run's summary (trainer/metrics.py's ModeSummary, harness/summary.py's RunSummary) is a
frozen dataclass: its fields are the schema, so a figure cannot be misspelt when it is made
or when a file is read back. It also reads as a read-only mapping by field name, because the
metric catalogue (harness/catalogue.py) names each figure by its key and reads it that way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class Record(Mapping[str, Any]):
    """Base of a frozen dataclass record: `record["key"]`, `record.get("key")`, `to_json()`,
    and `from_json(data)`, which refuses a key the record does not have."""

    _names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._names = ()  # filled on first use: the dataclass decorator runs after this hook

    @classmethod
    def names(cls) -> tuple[str, ...]:
        if not cls._names:
            cls._names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        return cls._names

    def __getitem__(self, key: str) -> Any:
        if key not in self.names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (records inside become dicts too)."""
        return {name: to_json(getattr(self, name)) for name in self.names()}

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record of `data`. Raises ValueError naming any key it does not have, or lacks; a
        field with a default may be absent."""
        unknown = sorted(set(data) - set(cls.names()))
        if unknown:
            raise ValueError(f"unknown field {', '.join(unknown)} (a newer heavygym, or a misspelt key?)")
        required = [f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]  # fmt: skip
        missing = [name for name in required if name not in data]
        if missing:
            raise ValueError(f"lacks {', '.join(missing)}")
        return cls(**cls._typed(dict(data)))

    @classmethod
    def _typed(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Hook: turn nested JSON into the records a field holds."""
        return data


def to_json(value: Any) -> Any:
    """`value` with every record inside it as a dict, ready for json.dumps."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value
