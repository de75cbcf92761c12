"""Frames of the wire protocol (chapter ``wire.md``, WIR-001 .. WIR-005).

A frame is a 4-byte big-endian length followed by that many bytes of one
CBOR map (WIR-001). Senders encode deterministically, as cbor2's canonical
mode does (WIR-002); receivers accept any well-formed CBOR map and refuse the
rest with :class:`FrameError` (WIR-004).
"""

from __future__ import annotations

import struct
from typing import Any, BinaryIO

import cbor2

MAX_FRAME = 256 * 1024 * 1024
"""WIR-001: the largest frame body a peer must accept, in bytes."""

_LENGTH = struct.Struct(">I")


class FrameError(ValueError):
    """A frame that is not a well-formed CBOR map within the limits (WIR-004)."""


class FramingLost(FrameError):
    """The stream can no longer be split into frames: a cut frame or an over-long length."""


class EndOfStream(EOFError):
    """The peer closed the stream at a frame boundary."""


def encode_frame(message: dict[str, Any]) -> bytes:
    """The length-prefixed deterministic CBOR of ``message`` (WIR-001, WIR-002)."""
    body = cbor2.dumps(message, canonical=True)
    if len(body) > MAX_FRAME:
        raise FrameError(f"a frame of {len(body)} bytes exceeds {MAX_FRAME}")
    return _LENGTH.pack(len(body)) + body


MAX_NESTING = 300
"""WIR-048: the deepest nesting of arrays, maps and bignum tags a receiver reads (the frame's
own map is level 1); a deeper frame is malformed. cbor2 itself stops at 400, never reached."""


def decode_body(body: bytes) -> dict[str, Any]:
    """The map one frame body holds; anything else is a :class:`FrameError` (WIR-003, WIR-004)."""
    end = _scan(body, 0, 0)
    if end != len(body):
        raise FrameError("the frame holds bytes after its CBOR value")
    try:
        value = cbor2.loads(body)  # WIR-010: integers (bignums too) keep their exact value
    except Exception as error:  # cbor2 raises several types for malformed input
        raise FrameError(f"the frame is not well-formed CBOR: {error}") from error
    if not isinstance(value, dict):
        raise FrameError(f"a frame holds a CBOR map, not {type(value).__name__}")
    return value


def _scan(data: bytes, position: int, depth: int) -> int:
    """The end of the data item at ``position``, refusing what WIR-003 excludes."""
    if depth >= MAX_NESTING:  # the item at ``depth`` is at level depth + 1 (WIR-048)
        raise FrameError(f"the frame nests deeper than {MAX_NESTING} levels (WIR-048)")
    if position >= len(data):
        raise FrameError("the frame ends inside a CBOR item")
    initial = data[position]
    major, info = initial >> 5, initial & 0x1F
    position += 1
    if info < 24:
        argument = info
    elif info <= 27:
        size = 1 << (info - 24)
        if position + size > len(data):
            raise FrameError("the frame ends inside a CBOR item")
        argument = int.from_bytes(data[position:position + size], "big")
        position += size
    else:
        raise FrameError("indefinite lengths and reserved CBOR forms are not part of the protocol")
    if major in (0, 1):
        return position
    if major in (2, 3):
        if position + argument > len(data):
            raise FrameError("the frame ends inside a CBOR string")
        return position + argument
    if major == 4:
        for _ in range(argument):
            position = _scan(data, position, depth + 1)
        return position
    if major == 5:
        keys: set[bytes] = set()
        for _ in range(argument):
            start = position
            position = _scan(data, position, depth + 1)
            keys.add(_key_identity(data, start, position))
            position = _scan(data, position, depth + 1)
        if len(keys) != argument:
            raise FrameError("a CBOR map holds the same key twice (WIR-047)")
        return position
    if major == 6:
        if argument not in (2, 3) or position >= len(data) or data[position] >> 5 != 2:
            raise FrameError(f"CBOR tag {argument} is not part of the protocol (WIR-003)")
        return _scan(data, position, depth + 1)
    if info in (20, 21, 22, 25, 26, 27):
        return position
    raise FrameError(f"the CBOR simple value {argument} is not part of the protocol (WIR-003)")


def _key_identity(data: bytes, start: int, end: int) -> bytes:
    """The identity of the map key ``data[start:end]``: equal for equal keys (WIR-047).

    A text key (nearly all) is its UTF-8 bytes; any other key its deterministic
    re-encoding, so a key written with a longer length or integer form than needed
    is still the same key.
    """
    initial = data[start]
    if initial >> 5 == 3:
        info = initial & 0x1F
        header = 1 if info < 24 else 1 + (1 << (info - 24))
        return b"t" + data[start + header:end]
    try:
        return b"o" + cbor2.dumps(cbor2.loads(data[start:end]), canonical=True)
    except Exception as error:  # an ill-formed key: the frame is not well-formed CBOR
        raise FrameError(f"the frame is not well-formed CBOR: {error}") from error


def write_frame(stream: BinaryIO, message: dict[str, Any]) -> None:
    """Write one frame and flush it."""
    stream.write(encode_frame(message))
    stream.flush()


def read_exactly(stream: BinaryIO, size: int) -> bytes:
    """``size`` bytes, or :class:`EndOfStream` if none came, or :class:`FrameError` if cut."""
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            if remaining == size:
                raise EndOfStream("the stream ended")
            raise FramingLost("the stream ended inside a frame")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_length(stream: BinaryIO) -> int:
    """The length prefix of the next frame (WIR-001)."""
    (size,) = _LENGTH.unpack(read_exactly(stream, _LENGTH.size))
    if size > MAX_FRAME:
        raise FramingLost(f"a frame of {size} bytes exceeds {MAX_FRAME}")
    return int(size)


def read_frame(stream: BinaryIO) -> dict[str, Any]:
    """Read one frame; :class:`EndOfStream` at a clean end of the stream."""
    size = read_length(stream)
    try:
        body = read_exactly(stream, size)
    except EndOfStream as error:
        raise FramingLost("the stream ended inside a frame") from error
    return decode_body(body)
