"""Array parameters of a known element type, encoded in one call.

psycopg picks the dumper of a list parameter by inspecting its elements each time it is sent
(a dozen Python calls per array: about 10 µs, over 100 µs for the nine arrays of one checkpoint
statement, nearly half of that statement's client CPU for a batch of one, the batch a prefork
child's step sends). ``TextArray``, ``Int4Array``, ``Int8Array`` and ``BoolArray`` say their element
type: their dumpers
write PostgreSQL's binary array format (one dimension, lower bound 1, NULL elements allowed)
directly, as ``text[]``, ``int4[]``, ``int8[]`` and ``boolean[]`` (the types the statements cast
them to).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper
from psycopg.pq import Format

_HEADER = struct.Struct("!iiIii")  # dimensions, has NULLs, element type, length, lower bound
_EMPTY = struct.Struct("!iiI")  # no dimension: has NULLs, element type
_LENGTH = struct.Struct("!i")
_NULL = _LENGTH.pack(-1)


class _Array:
    __slots__ = ("values",)

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values


class TextArray(_Array):
    """A ``text[]`` parameter (elements: str or None)."""

    __slots__ = ()


class Int4Array(_Array):
    """An ``int4[]`` parameter (elements: int or None)."""

    __slots__ = ()


class Int8Array(_Array):
    """An ``int8[]`` parameter (elements: int or None)."""

    __slots__ = ()


class BoolArray(_Array):
    """A ``boolean[]`` parameter (elements: bool or None)."""

    __slots__ = ()


class _ArrayDumper(Dumper):
    format = Format.BINARY
    element_oid = 0

    def dump(self, obj: _Array) -> bytes:
        values = obj.values
        if not values:
            return _EMPTY.pack(0, 0, self.element_oid)
        parts = [b""]
        has_null = 0
        encode = self.encode_element
        for value in values:
            if value is None:
                parts.append(_NULL)
                has_null = 1
            else:
                parts.append(encode(value))
        parts[0] = _HEADER.pack(1, has_null, self.element_oid, len(values), 1)
        return b"".join(parts)

    def encode_element(self, value: Any) -> bytes:
        raise NotImplementedError  # each element type has its own


class _TextArrayDumper(_ArrayDumper):
    oid = 1009
    element_oid = 25

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        self._encoding = self.connection.info.encoding if self.connection else "utf-8"

    def encode_element(self, value: Any) -> bytes:
        data: bytes = value.encode(self._encoding)
        return _LENGTH.pack(len(data)) + data


_INT4 = struct.Struct("!ii")  # element length, element
_INT8 = struct.Struct("!iq")


class _Int4ArrayDumper(_ArrayDumper):
    oid = 1007
    element_oid = 23

    def encode_element(self, value: Any) -> bytes:
        return _INT4.pack(4, value)


class _Int8ArrayDumper(_ArrayDumper):
    oid = 1016
    element_oid = 20

    def encode_element(self, value: Any) -> bytes:
        return _INT8.pack(8, value)


_TRUE = _LENGTH.pack(1) + b"\x01"
_FALSE = _LENGTH.pack(1) + b"\x00"


class _BoolArrayDumper(_ArrayDumper):
    oid = 1000
    element_oid = 16

    def encode_element(self, value: Any) -> bytes:
        return _TRUE if value else _FALSE


# Global, for the types of this module only: every connection opened afterwards knows them.
psycopg.adapters.register_dumper(TextArray, _TextArrayDumper)
psycopg.adapters.register_dumper(Int4Array, _Int4ArrayDumper)
psycopg.adapters.register_dumper(Int8Array, _Int8ArrayDumper)
psycopg.adapters.register_dumper(BoolArray, _BoolArrayDumper)
