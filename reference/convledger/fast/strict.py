"""orjson in its strictest setting and msgspec with a float hook: canonical JSON in two C calls.

:mod:`convledger.fast.payload` (a payload's bytes and its copy) and
:func:`convledger.fast.decode.decode_canonical` (is this text canonical?) both
rest on one fact: for a value holding only the built-in JSON types, ``orjson``
set up as :data:`OPTIONS` writes exactly its canonical bytes (CAN-001), except
where

1. a float is written in a layout other than CAN-005's (``1.0``, ``-0.0``,
   ``1e+16``): :data:`DECODE` reads every float literal through
   :func:`canonical_float`, which refuses any whose text is not
   :func:`convledger.canonical.format_number` of its value;
2. two member names first differ where one holds a code point in
   U+E000..U+FFFF and the other one above the BMP: ``orjson`` sorts by code
   point, CAN-002 by UTF-16 code unit, and only there do the orders part
   (:mod:`convledger.fast.canonical`); :func:`orders_agree` is False for any
   bytes that hold both kinds of code point;
3. an integer lies beyond +/-(2**53 - 1) (CAN-006), or a value is of another
   type (a subclass, a dataclass, a date, a set, bytes, a non-``str`` name, a
   lone surrogate, a cycle): ``OPT_STRICT_INTEGER`` and the passthrough options
   make ``orjson`` raise ``TypeError``, and without a ``default`` it writes
   nothing but the types it knows. What it still writes natively (``UUID``,
   ``Enum``, ``NaN`` as ``null``, ``orjson.Fragment``, a tuple) never comes out
   of a decoder; :mod:`convledger.fast.payload` handles them for values a
   caller made.

Strings: ``orjson`` escapes exactly as CAN-004 says (``"``, ``\\``, the short
escapes, ``\\u00XX`` in lower case for the other controls, nothing else), as
``tests/test_fast_canonical.py`` checks. Integers inside the range: both write
``int.__repr__``.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import orjson

from convledger import canonical

OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_STRICT_INTEGER
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
"""Sorted members; refuse integers beyond 53 bits, subclasses, dataclasses and dates."""


class NotCanonicalFloat(Exception):
    """A float literal whose text is not its CAN-005 form."""


def canonical_float(text: str) -> float:
    """The float of a literal, if the literal is its CAN-005 form; else NotCanonicalFloat."""
    number = float(text)
    if canonical.format_number(number) != text:
        raise NotCanonicalFloat
    return number


DECODE: Callable[[bytes], object] = msgspec.json.Decoder(float_hook=canonical_float).decode
"""msgspec's decoder, refusing (NotCanonicalFloat) any float literal not in its CAN-005 form."""

REFUSALS = (NotCanonicalFloat, msgspec.MsgspecError, RecursionError, ValueError)
"""What :data:`DECODE` raises for text it does not read."""

_LATE_BMP_LEADS = (b"\xee", b"\xef")
"""The lead bytes of the UTF-8 sequences of U+E000..U+FFFF (no other byte of valid UTF-8 is
0xEE or 0xEF)."""
_ABOVE_BMP_LEADS = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")
"""The lead bytes of every 4-byte UTF-8 sequence: a code point above the BMP."""


def orders_agree(data: bytes) -> bool:
    """False when valid UTF-8 ``data`` holds a code point in U+E000..U+FFFF and one above the BMP.

    When True, no two member names in it sort differently by code point and by
    UTF-16 code unit (CAN-002).
    """
    if data.isascii() or (_LATE_BMP_LEADS[0] not in data and _LATE_BMP_LEADS[1] not in data):
        return True
    return not any(lead in data for lead in _ABOVE_BMP_LEADS)
