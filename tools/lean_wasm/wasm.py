"""A small WebAssembly binary rewriter: move exported functions into the function table.

V8 refuses a module with more than 100,000 exports, and the npm build of Lean exports
201,110 (every compiled Lean function `l_*`, so that Lean's interpreter can find them with
`dlsym`). `move_exports_to_table` takes the selected function exports out of the export
section and appends them to the indirect function table with one new active element
segment; the returned map says at which table index each moved function now lives, which is
what a function pointer is in wasm32, so a patched `dlsym` can hand it out.

Only the sections this needs are decoded (imports, table, exports, elements); every other
section, the 115 MB code section included, is copied through byte for byte.
Binary format: https://webassembly.github.io/spec/core/binary/modules.html
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MAGIC = b"\0asm\x01\0\0\0"
# Section ids (the spec's order of appearance, custom sections aside).
CUSTOM, TYPE, IMPORT, FUNCTION, TABLE, MEMORY, GLOBAL, EXPORT, START, ELEMENT, CODE, DATA, DATACOUNT, TAG = (
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
)  # fmt: skip
# Where a new section goes in the required order: element comes after start, before data count and code.
_ORDER = [TYPE, IMPORT, FUNCTION, TABLE, MEMORY, TAG, GLOBAL, EXPORT, START, ELEMENT, DATACOUNT, CODE, DATA]
FUNC_KIND, TABLE_KIND, MEMORY_KIND, GLOBAL_KIND, TAG_KIND = 0, 1, 2, 3, 4
_I32_CONST, _END = 0x41, 0x0B


class WasmFormatError(ValueError):
    """The module is not one this rewriter understands."""


@dataclass(frozen=True)
class Section:
    id: int
    body: bytes | memoryview


@dataclass(frozen=True)
class Import:
    module: str
    name: str
    kind: int


@dataclass(frozen=True)
class Export:
    name: str
    kind: int
    index: int


# -- encoding primitives ----------------------------------------------------------------------


class Reader:
    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u32(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return result

    def name(self) -> str:
        size = self.u32()
        self.pos += size
        return bytes(self.data[self.pos - size : self.pos]).decode("utf-8")

    def limits(self) -> tuple[int, int, int | None]:
        """(flags, minimum, maximum or None)."""
        flags = self.byte()
        minimum = self.u32()
        maximum = self.u32() if flags & 1 else None
        return flags, minimum, maximum

    @property
    def done(self) -> bool:
        return self.pos >= len(self.data)


def u32(value: int) -> bytes:
    """Unsigned LEB128."""
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if value else 0))
        if not value:
            return bytes(out)


def s32(value: int) -> bytes:
    """Signed LEB128 (the immediate of `i32.const`)."""
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if (value == 0 and not b & 0x40) or (value == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def name(text: str) -> bytes:
    raw = text.encode("utf-8")
    return u32(len(raw)) + raw


# -- sections -----------------------------------------------------------------------------------


def read_sections(data: bytes) -> list[Section]:
    if data[:8] != MAGIC:
        raise WasmFormatError("not a WebAssembly 1.0 binary (bad magic number or version)")
    view = memoryview(data)
    reader = Reader(view, 8)
    sections = []
    while not reader.done:
        section_id = reader.byte()
        size = reader.u32()
        sections.append(Section(section_id, view[reader.pos : reader.pos + size]))
        reader.pos += size
    return sections


def write_module(sections: list[Section]) -> bytes:
    parts: list[bytes | memoryview] = [MAGIC]
    for section in sections:
        parts += [bytes([section.id]), u32(len(section.body)), section.body]
    return b"".join(parts)


def read_imports(body: bytes | memoryview) -> list[Import]:
    reader = Reader(body)
    imports = []
    for _ in range(reader.u32()):
        module, field, kind = reader.name(), reader.name(), reader.byte()
        if kind == FUNC_KIND:
            reader.u32()  # type index
        elif kind == TABLE_KIND:
            reader.byte()  # reference type
            reader.limits()
        elif kind == MEMORY_KIND:
            reader.limits()
        elif kind == GLOBAL_KIND:
            reader.byte()  # value type
            reader.byte()  # mutability
        elif kind == TAG_KIND:
            reader.byte()  # attribute
            reader.u32()  # type index
        else:
            raise WasmFormatError(f"unknown import kind {kind} for {module}.{field}")
        imports.append(Import(module, field, kind))
    return imports


def read_exports(body: bytes | memoryview) -> list[Export]:
    reader = Reader(body)
    return [Export(reader.name(), reader.byte(), reader.u32()) for _ in range(reader.u32())]


def encode_exports(exports: list[Export]) -> bytes:
    return b"".join([u32(len(exports)), *(name(e.name) + bytes([e.kind]) + u32(e.index) for e in exports)])


# -- the rewrite -------------------------------------------------------------------------------


def move_exports_to_table(data: bytes, select: Callable[[str], bool]) -> tuple[bytes, dict[str, int]]:
    """Move the function exports whose name `select` accepts into table 0.

    Returns the new module and {export name: table index}. Exports that the module itself
    imports through `GOT.func`/`GOT.mem` stay: the dynamic linker fills those imports from
    the export section.
    """
    sections = read_sections(data)
    by_id = {s.id: s for s in sections if s.id != CUSTOM}
    if EXPORT not in by_id:
        raise WasmFormatError("the module has no export section")
    imports = read_imports(by_id[IMPORT].body) if IMPORT in by_id else []
    if any(i.kind == TABLE_KIND for i in imports):
        raise WasmFormatError("the function table is imported: its size is set by the JavaScript glue, not here")
    through_got = {i.name for i in imports if i.module.startswith("GOT.")}

    kept, moved = [], []
    for export in read_exports(by_id[EXPORT].body):
        if export.kind == FUNC_KIND and select(export.name) and export.name not in through_got:
            moved.append(export)
        else:
            kept.append(export)
    if not moved:
        return data, {}

    table_body, base = _grow_table(by_id.get(TABLE), len(moved))
    segment = bytes([0, _I32_CONST]) + s32(base) + bytes([_END]) + u32(len(moved))
    segment += b"".join(u32(e.index) for e in moved)
    element_body = _append_segment(by_id.get(ELEMENT), segment)

    replaced = {TABLE: table_body, EXPORT: encode_exports(kept), ELEMENT: element_body}
    out = [Section(s.id, replaced.get(s.id, s.body)) if s.id != CUSTOM else s for s in sections]
    if ELEMENT not in by_id:
        out.insert(_insert_position(out, ELEMENT), Section(ELEMENT, element_body))
    return write_module(out), {e.name: base + i for i, e in enumerate(moved)}


def _grow_table(section: Section | None, extra: int) -> tuple[bytes, int]:
    """The table section with table 0 grown by `extra` slots, and the first new slot."""
    if section is None:
        raise WasmFormatError("the module defines no function table")
    reader = Reader(section.body)
    count = reader.u32()
    ref_type = reader.byte()
    flags, minimum, maximum = reader.limits()
    if flags not in (0, 1):
        raise WasmFormatError(f"unsupported table limits flags {flags:#x} (shared or 64-bit table)")
    rest = bytes(section.body[reader.pos :])  # any further tables, unchanged
    new_min = minimum + extra
    limits = bytes([flags]) + u32(new_min) + (u32(max(maximum, new_min)) if maximum is not None else b"")
    return u32(count) + bytes([ref_type]) + limits + rest, minimum


def _append_segment(section: Section | None, segment: bytes) -> bytes:
    if section is None:
        return u32(1) + segment
    reader = Reader(section.body)
    count = reader.u32()
    return u32(count + 1) + bytes(section.body[reader.pos :]) + segment


def _insert_position(sections: list[Section], section_id: int) -> int:
    rank = _ORDER.index(section_id)
    for i, s in enumerate(sections):
        if s.id != CUSTOM and _ORDER.index(s.id) > rank:
            return i
    return len(sections)
