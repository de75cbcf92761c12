"""A payload's canonical bytes and its detached copy in two C calls (CAN-001, LIM-005, LED-014).

The append path needs, for each payload, its canonical bytes (CAN-001, with the
depth limit of LIM-005) and a copy decoded from those bytes, which the store
keeps (LED-014, :func:`convledger.batch.validated_batch`).
:func:`convledger.fast.canonical.encode_payload` proves in a Python walk
(:func:`~convledger.fast.canonical.exact`) that ``orjson`` writes the canonical
bytes, and the copy is decoded afterwards. :func:`encode_payload_copied` makes
the proof from the two C calls the append makes anyway: ``orjson`` writes, in
its strictest setting, and msgspec decodes the copy. The bytes are returned
with the copy only when every token of them is provably the token the clear
encoder writes; otherwise the copy is None and the bytes are
``encode_payload``'s, which the caller decodes as before. So the answer is
always ``(canonical.encode(value, max_depth=MAX_DEPTH), canonical.decode(those
bytes) or None)``, or the clear encoder's refusal.

Why the bytes are canonical when the copy is returned: :mod:`convledger.fast.strict`
says why ``orjson``'s bytes are canonical for a value of the built-in JSON types
once every float literal is in its CAN-005 form (the decoder's float hook) and
the member orders agree (:func:`~convledger.fast.strict.orders_agree`). What a
caller's payload adds:

==================  ==========================================================
check               why
==================  ==========================================================
``copy == value``   what ``orjson`` writes natively but no decoder yields (a
                    ``UUID``, an ``Enum``, a NaN as ``null``, an
                    ``orjson.Fragment``, a tuple) decodes to a value not equal
                    to it, and is sent back; the enums that do compare equal
                    (an ``IntEnum``, a ``StrEnum``) are written with their
                    values' digits and text, as the clear encoder writes them
depth               a value nested ``d`` levels deep has at least ``d``
                    opening brackets: at most LIM-005's 128 of them, or
                    bytes too short to hold more, and the limit holds
size                bytes over LIM-004's limit are not decoded: the slow path
                    encodes them and the caller refuses them for their size
==================  ==========================================================

The copy is msgspec's decoding of bytes with no integer literal beyond
2**53 - 1, which is what the strict decoder reads from them
(:mod:`convledger.fast.decode`: the two differ only on such literals), so no
long-number guard is needed. ``tests/test_fast_payload.py`` compares the pair
with the clear encoder and decoder on generated values in and out of the model.
"""

from __future__ import annotations

from typing import cast

import orjson

from convledger.canonical import JsonValue
from convledger.fast import strict
from convledger.fast.canonical import encode_payload
from convledger.limits import MAX_DEPTH, MAX_PAYLOAD_BYTES

_SHORT_ENOUGH = 2 * MAX_DEPTH + 2
"""Bytes shorter than this cannot hold more than MAX_DEPTH opening brackets (LIM-005)."""


def encode_payload_copied(value: object) -> tuple[bytes, JsonValue | None]:
    """``encode_payload(value)``, and the value the strict decoder reads from it or None.

    Raises what :func:`convledger.fast.canonical.encode_payload` raises (the
    clear encoder's refusal, ``NestingTooDeep`` for LIM-005).
    """
    try:
        data = orjson.dumps(value, option=strict.OPTIONS)
    except TypeError:
        return encode_payload(value), None
    if _plain(data):
        try:
            copy = strict.DECODE(data)
        except strict.REFUSALS:
            copy = None  # a float to lay out anew; nothing else is expected of orjson's bytes
        if copy is not None and copy == value:
            return data, cast(JsonValue, copy)
    return encode_payload(value), None


def _plain(data: bytes) -> bool:
    """Member orders that agree (:func:`~convledger.fast.strict.orders_agree`), no more opening
    brackets than LIM-005 allows levels, and within LIM-004's size (the caller refuses an
    oversized payload; it is not decoded here)."""
    if len(data) > MAX_PAYLOAD_BYTES or not strict.orders_agree(data):
        return False
    return len(data) < _SHORT_ENOUGH or data.count(b"[") + data.count(b"{") <= MAX_DEPTH
