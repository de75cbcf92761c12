"""Frame values of the differential mode and their tagged-JSON form in trace vectors.

A step sends one frame: a request map built from ordinary CBOR values plus
:class:`Handle` (the n-th store the session created, resolved per server,
since each server numbers its handles itself, WIR-020), CBOR tags and simple
values (which WIR-003 excludes) and :class:`RawBody` (bytes sent as they are).
A trace vector is JSON, so each value that JSON cannot carry is written as a
one-member object: ``{"$bytes": hex}``, ``{"$float": repr}``, ``{"$int":
decimal}`` (beyond ±(2⁵³−1)), ``{"$tag": [number, value]}``, ``{"$simple":
n}``, ``{"$undefined": true}``, ``{"$handle": n}``, ``{"$map": [[key, value],
...]}`` (a map with a key that is not text, or begins with ``$``) and, for a
whole frame body, ``{"$raw": hex}``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import attrs
import cbor2

_SAFE = 2**53 - 1
_UNSET_HANDLE = 2**64 - 1
"""The handle sent for a store the session never created (a shrunk trace may lose newStore)."""


@attrs.frozen
class Handle:
    """The ``index``-th store handle the session's ``newStore`` replies gave."""

    index: int


@attrs.frozen
class RawBody:
    """A frame body sent byte for byte (malformed CBOR, trailing bytes, indefinite lengths)."""

    data: bytes


def to_tagged(value: Any) -> Any:
    """The tagged-JSON form of a frame value (see the module's docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) <= _SAFE else {"$int": str(value)}
    if isinstance(value, float):
        return {"$float": repr(value)}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, Handle):
        return {"$handle": value.index}
    if isinstance(value, RawBody):
        return {"$raw": value.data.hex()}
    if isinstance(value, cbor2.CBORTag):
        return {"$tag": [value.tag, to_tagged(value.value)]}
    if isinstance(value, cbor2.CBORSimpleValue):
        return {"$simple": value.value}
    if value is cbor2.undefined:
        return {"$undefined": True}
    if isinstance(value, (list, tuple)):
        return [to_tagged(item) for item in value]
    if isinstance(value, dict):
        if all(isinstance(key, str) and not key.startswith("$") for key in value):
            return {key: to_tagged(item) for key, item in value.items()}
        return {"$map": [[to_tagged(key), to_tagged(item)] for key, item in value.items()]}
    raise TypeError(f"no tagged form for {type(value).__name__}")


_FROM: dict[str, Callable[[Any], Any]] = {
    "$int": int,
    "$float": float,
    "$bytes": bytes.fromhex,
    "$handle": Handle,
    "$raw": lambda text: RawBody(bytes.fromhex(text)),
    "$tag": lambda pair: cbor2.CBORTag(pair[0], from_tagged(pair[1])),
    "$simple": cbor2.CBORSimpleValue,
    "$undefined": lambda _: cbor2.undefined,
    "$map": lambda pairs: {_key(from_tagged(key)): from_tagged(item) for key, item in pairs},
}


def _key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def from_tagged(value: Any) -> Any:
    """The frame value a tagged-JSON form stands for (the inverse of :func:`to_tagged`)."""
    if isinstance(value, list):
        return [from_tagged(item) for item in value]
    if isinstance(value, dict):
        if len(value) == 1:
            (name,) = value
            if name in _FROM:
                return _FROM[name](value[name])
        return {key: from_tagged(item) for key, item in value.items()}
    return value


def resolve(value: Any, handles: list[int]) -> Any:
    """``value`` with every :class:`Handle` replaced by this server's handle number."""
    if isinstance(value, Handle):
        return handles[value.index] if value.index < len(handles) else _UNSET_HANDLE
    if isinstance(value, list):
        return [resolve(item, handles) for item in value]
    if isinstance(value, dict):
        return {resolve(key, handles): resolve(item, handles) for key, item in value.items()}
    if isinstance(value, cbor2.CBORTag):
        return cbor2.CBORTag(value.tag, resolve(value.value, handles))
    return value


def frame_bytes(value: Any, handles: list[int]) -> bytes:
    """The length-prefixed frame of one step for a server whose handles are ``handles``."""
    body = value.data if isinstance(value, RawBody) else cbor2.dumps(
        resolve(value, handles), canonical=True)
    return struct.pack(">I", len(body)) + body
