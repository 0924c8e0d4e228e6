"""Exact builtin values, in a byte form that carries only what they are.

Everything that crosses a trust boundary of the sandbox (the program's replies
to the harness, the harness's report to the caller) travels in this form. The
encoder accepts an object only if its type is exactly one of the builtin types
below (`type(x) is int`, never a subclass), so an object whose `__eq__` always
answers True, or a `str` subclass with a forged `__repr__`, cannot pass as a
value; the decoder rebuilds plain builtins and rejects anything malformed,
never executing or importing anything (unlike pickle or marshal).

The encoding is canonical: set members are sorted by their own encodings, so
equal sets give equal bytes whatever their history; dicts keep their order,
which programs can observe (HumanEval/95 answers by the first key); floats
keep their bits (every nan is one nan), so inf and -0.0 survive and 1, 1.0
and True stay distinct. Equal bytes mean values no program can tell apart.

Stdlib only, and only builtin modules: this module also runs inside the
sandbox, where start-up time counts.
"""

from __future__ import annotations

import struct

MAX_DEPTH = 100
_NAN = float("nan")
_SORTED_KINDS = {set: b"S", frozenset: b"Z"}
_SEQUENCE_KINDS = {list: b"l", tuple: b"t"}


class UnserialisableValue(TypeError):
    """The value is, or contains, something other than an exact builtin value."""


def encode(value: object) -> bytes:
    """The canonical bytes of `value`; raises UnserialisableValue for anything else."""
    parts: list[bytes] = []
    _encode(value, parts, 0)
    return b"".join(parts)


def decode(data: bytes) -> object:
    """The value `data` encodes; raises ValueError unless it is exactly one well-formed encoding."""
    if type(data) is not bytes:
        raise ValueError("malformed value: not bytes")
    try:
        value, end = _decode(data, 0, 0)
    except (IndexError, TypeError, UnicodeDecodeError, OverflowError) as error:
        raise ValueError(f"malformed value: {error}") from None
    if end != len(data):
        raise ValueError("malformed value: trailing bytes")
    return value


def _length(number: int) -> bytes:
    return number.to_bytes(4, "big")


def _encode(value: object, parts: list[bytes], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UnserialisableValue(f"nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if value is None:
        parts.append(b"N")
    elif kind is bool:
        parts.append(b"T" if value else b"F")
    elif kind is int:
        data = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
        parts += (b"i", _length(len(data)), data)
    elif kind is float:
        parts += (b"f", _float_bytes(value))
    elif kind is complex:
        parts += (b"c", _float_bytes(value.real), _float_bytes(value.imag))
    elif kind is str:
        data = value.encode("utf-8", "surrogatepass")
        parts += (b"s", _length(len(data)), data)
    elif kind is bytes:
        parts += (b"y", _length(len(value)), value)
    elif kind in _SEQUENCE_KINDS:
        parts += (_SEQUENCE_KINDS[kind], _length(len(value)))
        for item in value:
            _encode(item, parts, depth + 1)
    elif kind in _SORTED_KINDS:
        parts += (_SORTED_KINDS[kind], _length(len(value)))
        parts += sorted(_encode_one(item, depth + 1) for item in value)
    elif kind is dict:
        parts += (b"d", _length(len(value)))
        for key, item in value.items():
            _encode(key, parts, depth + 1)
            _encode(item, parts, depth + 1)
    else:
        raise UnserialisableValue(f"a {kind.__name__} is not an exact builtin value")


def _encode_one(value: object, depth: int) -> bytes:
    parts: list[bytes] = []
    _encode(value, parts, depth)
    return b"".join(parts)


def _float_bytes(number: float) -> bytes:
    return struct.pack(">d", _NAN if number != number else number)


def _decode(data: bytes, position: int, depth: int) -> tuple[object, int]:
    if depth > MAX_DEPTH:
        raise ValueError(f"malformed value: nested deeper than {MAX_DEPTH} levels")
    tag = data[position:position + 1]
    position += 1
    if tag == b"N":
        return None, position
    if tag in (b"T", b"F"):
        return tag == b"T", position
    if tag == b"f":
        return _read_float(data, position), position + 8
    if tag == b"c":
        return complex(_read_float(data, position), _read_float(data, position + 8)), position + 16
    if tag not in (b"i", b"s", b"y", b"l", b"t", b"S", b"Z", b"d"):
        raise ValueError(f"malformed value: unknown tag {tag!r} at byte {position - 1}")
    if position + 4 > len(data):
        raise ValueError("malformed value: truncated")
    size = int.from_bytes(data[position:position + 4], "big")
    position += 4
    if tag in (b"i", b"s", b"y"):
        if position + size > len(data):
            raise ValueError("malformed value: truncated")
        chunk = data[position:position + size]
        if tag == b"i":
            return int.from_bytes(chunk, "big", signed=True), position + size
        return (chunk.decode("utf-8", "surrogatepass") if tag == b"s" else chunk), position + size
    if size > len(data) - position:  # every member takes at least one byte
        raise ValueError("malformed value: truncated")
    members = []
    for _ in range(size * 2 if tag == b"d" else size):
        member, position = _decode(data, position, depth + 1)
        members.append(member)
    if tag == b"l":
        return members, position
    if tag == b"t":
        return tuple(members), position
    if tag == b"S":
        return set(members), position
    if tag == b"Z":
        return frozenset(members), position
    return dict(zip(members[::2], members[1::2])), position


def _read_float(data: bytes, position: int) -> float:
    if position + 8 > len(data):
        raise ValueError("malformed value: truncated")
    return struct.unpack(">d", data[position:position + 8])[0]
