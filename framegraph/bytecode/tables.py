"""Encoders and decoders for `co_exceptiontable` and `co_linetable`.

Both formats are identical on 3.11-3.13 (Objects/exception_handling_notes.txt
and Objects/locations.md). All offsets here are in code units (2 bytes).
The line table is decoded through `code.co_positions()`, so only its encoder
lives here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from .instruction import Positions


@dataclasses.dataclass(frozen=True, slots=True)
class RawExceptionEntry:
    start: int  # first unit covered
    end: int  # first unit not covered
    target: int
    depth: int
    lasti: bool


def _read_exception_varint(data: bytes, pos: int) -> tuple[int, int]:
    # Big-endian 6-bit chunks; bit 6 means more follow (bit 7 marks an entry start).
    byte = data[pos]
    value = byte & 63
    while byte & 64:
        pos += 1
        byte = data[pos]
        value = (value << 6) | (byte & 63)
    return value, pos + 1


def decode_exception_table(data: bytes) -> list[RawExceptionEntry]:
    entries = []
    pos = 0
    while pos < len(data):
        start, pos = _read_exception_varint(data, pos)
        size, pos = _read_exception_varint(data, pos)
        target, pos = _read_exception_varint(data, pos)
        depth_lasti, pos = _read_exception_varint(data, pos)
        entries.append(
            RawExceptionEntry(start, start + size, target, depth_lasti >> 1, bool(depth_lasti & 1))
        )
    return entries


def _write_exception_varint(out: bytearray, value: int, first: bool) -> None:
    chunks = [value & 63]
    value >>= 6
    while value:
        chunks.append(value & 63)
        value >>= 6
    chunks.reverse()
    for i, chunk in enumerate(chunks):
        if i < len(chunks) - 1:
            chunk |= 64
        if first and i == 0:
            chunk |= 128
        out.append(chunk)


def encode_exception_table(entries: Iterable[RawExceptionEntry]) -> bytes:
    out = bytearray()
    for entry in entries:
        _write_exception_varint(out, entry.start, first=True)
        _write_exception_varint(out, entry.end - entry.start, first=False)
        _write_exception_varint(out, entry.target, first=False)
        _write_exception_varint(out, (entry.depth << 1) | entry.lasti, first=False)
    return bytes(out)


def _write_varint(out: bytearray, value: int) -> None:
    # Little-endian 6-bit chunks: the opposite chunk order to the exception table.
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)


def _write_svarint(out: bytearray, value: int) -> None:
    _write_varint(out, (-value << 1) | 1 if value < 0 else value << 1)


# Location kinds of Objects/locations.md.
_SHORT_MAX = 9
_ONE_LINE = 10
_NO_COLUMN = 13
_LONG = 14
_NO_LOCATION = 15


class LineTableWriter:
    """Writes one location entry per run of at most 8 code units, CPython's way."""

    def __init__(self, firstlineno: int) -> None:
        self._out = bytearray()
        self._line = firstlineno

    def add(self, positions: Positions, units: int) -> None:
        while units > 0:
            length = min(units, 8)
            self._entry(positions, length)
            units -= length

    def getvalue(self) -> bytes:
        return bytes(self._out)

    def _header(self, code: int, length: int) -> None:
        self._out.append(0x80 | (code << 3) | (length - 1))

    def _entry(self, positions: Positions, length: int) -> None:
        line, end_line, col, end_col = positions
        out = self._out
        if line is None:
            self._header(_NO_LOCATION, length)
            return
        delta = line - self._line
        self._line = line
        if col is None or end_col is None:
            if end_line is None or end_line == line:
                self._header(_NO_COLUMN, length)
                _write_svarint(out, delta)
                return
        elif end_line == line:
            if delta == 0 and col < 80 and 0 <= end_col - col < 16:
                self._header(col // 8, length)
                out.append(((col % 8) << 4) | (end_col - col))
                return
            if 0 <= delta < 3 and col < 128 and end_col < 128:
                self._header(_ONE_LINE + delta, length)
                out.append(col)
                out.append(end_col)
                return
        self._header(_LONG, length)
        _write_svarint(out, delta)
        _write_varint(out, (end_line if end_line is not None else line) - line)
        _write_varint(out, 0 if col is None else col + 1)
        _write_varint(out, 0 if end_col is None else end_col + 1)


def merge_ranges(keys: Iterable[tuple[int, int, object]]) -> Iterator[tuple[int, int, object]]:
    """Merge consecutive (start, end, key) runs whose keys are equal and that touch."""
    current: list | None = None
    for start, end, key in keys:
        if current is not None and current[2] == key and current[1] == start:
            current[1] = end
            continue
        if current is not None:
            yield tuple(current)
        current = [start, end, key]
    if current is not None:
        yield tuple(current)
