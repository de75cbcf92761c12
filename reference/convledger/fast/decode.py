"""Decoding stored canonical JSON, fast: the values :func:`convledger.canonical.decode` gives.

Theory of operation
-------------------
A store writes every payload as the canonical JSON text of a value (SQL-005,
CAN-001), and reads it back with the strict decoder
:func:`convledger.canonical.decode` (CAN-010 .. CAN-013). The strict decoder
pays for checks that canonical text can never fail: a Python hook per object
(duplicate names, CAN-012), per integer literal (CAN-013) and a walk over
every string (lone surrogates). On a typical envelope those checks are four
fifths of a bounded read (profile in ``benchmarks/README.md``).

:func:`decode_stored` gives the same value as the strict decoder for every
text that is canonical JSON, at the speed of CPython's C decoder, because on
such text the two decoders can differ in one place only:

=====================================  ==================  ==================
canonical text holds                   strict decoder      C decoder
=====================================  ==================  ==================
an integer literal beyond 2**53 - 1    ``float`` (CAN-013) ``int``
(a double such as 1e16, written with
16 or more digits, CAN-005)
=====================================  ==================  ==================

Everything else agrees: canonical text has no duplicate names (the encoder
writes each name once), no ``NaN``/``Infinity``, no lone surrogate (refused by
the encoder, CAN-008), no ``\\u`` escape but those of U+0000..U+001F (CAN-004),
which both decoders read alike; its floats are shortest round-trip literals
that ``float()`` reads to the same double in both.

So :func:`decode_stored` hands the text to the strict decoder whenever it holds
an integer literal beyond 2**53 - 1 or a number literal that overflows a
double (its ``parse_int`` and ``parse_float`` hooks, called once per number
literal, notice) or any ``\\u`` escape, and when the C decoder
refuses it; otherwise it returns the C decoder's value. The hand-overs make
it safe on text a store did NOT write too, with one difference left:
duplicate member names in a non-canonical text (a row edited behind the
store's back) are not refused, the last one wins. Use it only on text a
store wrote; ``tests/test_fast_decode.py`` proves the agreement on generated
values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import msgspec
import orjson

from convledger import canonical
from convledger.canonical import MAX_SAFE_INTEGER, JsonValue
from convledger.fast import strict


def _refuse_constant(name: str) -> object:
    raise ValueError(name)


def _safe_integer(literal: str) -> int:
    value = int(literal)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    raise ValueError(literal)  # CAN-013: the strict decoder decides (a double, or a refusal)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isfinite(value):
        return value
    raise ValueError(literal)  # CAN-013: overflows a double; the strict decoder refuses it


_SCAN: Callable[[str, int], tuple[object, int]] = cast(
    Any,
    json.JSONDecoder(
        parse_constant=_refuse_constant, parse_int=_safe_integer, parse_float=_finite_float
    ),
).scan_once
"""The C scanner of one JSON value (what ``json.loads`` runs, without its whitespace passes).

``NaN``, ``Infinity``, overflowing floats and unsafe integers raise, so the strict
decoder decides them.
"""


def decode_stored(text: str) -> JsonValue:
    """The value of canonical JSON ``text``: ``canonical.decode(text.encode())``, sooner."""
    if "\\u" not in text:
        try:
            value, end = _SCAN(text, 0)
        except (ValueError, StopIteration, RecursionError):
            pass  # the strict decoder raises its own refusal, or decodes what it accepts
        else:
            if end == len(text):  # canonical text is one value, no whitespace around it
                return cast(JsonValue, value)
    return cast(JsonValue, canonical.decode(text.encode("utf-8")))


# -- stored bytes, by msgspec ---------------------------------------------------------------------
#
# The read path fetches each payload as the UTF-8 bytes SQLite holds (``CAST(payload AS
# BLOB)``, no text object made) and decodes them with msgspec's JSON decoder, a C decoder about
# three times as fast as CPython's on the benchmark payloads (``benchmarks/README.md``). On
# canonical text msgspec and the strict decoder differ where the C scanner above differs, and
# nowhere else: an integer literal beyond 2**53 - 1 is an ``int`` for msgspec (of any size) and
# a ``float`` or a refusal for the strict decoder (CAN-013). msgspec refuses everything else the
# strict decoder refuses (invalid UTF-8, NaN and Infinity, numbers overflowing a double, lone
# surrogates, escaped or not, trailing data) except a repeated member name (the last one wins,
# as above), decodes every ``\u`` escape alike, and reads floats to the same double
# (``tests/test_fast_decode.py`` checks all of it on generated and hostile texts).
#
# So a text goes to the strict decoder instead when it may hold a long number literal: when 16
# or more digits or minus signs follow a place where a JSON number can begin (``[``, ``,``,
# ``:``, JSON whitespace) or the text itself begins with a digit or a minus sign (a bare
# number). ``bytes.translate`` maps each digit and minus sign to ``0`` and each such place to
# ``:``, so one substring search over the mapped bytes finds every such literal. A digit run
# inside a string (a digest, an id) follows a ``"`` or a letter, so it does not count unless the
# string itself holds such a place before it; then the strict decoder decides, which is slower,
# never different. A page is mapped and searched once, joined by commas (a place a number may
# begin, so no run crosses from one text into the next).

_NUMBER_CHARACTERS = b"0123456789-"
_NUMBER_STARTS = b"[,: \t\n\r"
_NUMBER_SHAPE = bytes(
    0x30 if byte in _NUMBER_CHARACTERS else 0x3A if byte in _NUMBER_STARTS else 0x20
    for byte in range(256)
)
"""``bytes.translate`` table: a digit or ``-`` becomes ``0``, a place a number may begin ``:``."""
_LONG_NUMBER = b":" + b"0" * 16
"""A number literal of 16 or more characters in the mapped bytes: it may exceed 2**53 - 1."""

_MSGSPEC_DECODE: Callable[[bytes], object] = msgspec.json.Decoder().decode
_MSGSPEC_REFUSALS = (msgspec.MsgspecError, RecursionError, ValueError)


def _may_hold_long_number(data: bytes) -> bool:
    """Whether ``data`` may hold a number literal beyond 2**53 - 1 (see above)."""
    shape = data.translate(_NUMBER_SHAPE)
    return shape[:1] == b"0" or _LONG_NUMBER in shape


def decode_stored_bytes(data: bytes) -> JsonValue:
    """The value of canonical JSON ``data``: ``canonical.decode(data)``, sooner."""
    if not _may_hold_long_number(data):
        try:
            return cast(JsonValue, _MSGSPEC_DECODE(data))
        except _MSGSPEC_REFUSALS:
            pass  # the strict decoder raises its own refusal, or decodes what it accepts
    return cast(JsonValue, canonical.decode(data))


def decode_stored_page(texts: Sequence[bytes]) -> list[JsonValue]:
    """``[canonical.decode(data) for data in texts]``, sooner: one search for the whole page."""
    if _may_hold_long_number(b",".join(texts)):
        return [decode_stored_bytes(data) for data in texts]
    decode = _MSGSPEC_DECODE
    try:
        return [cast(JsonValue, decode(data)) for data in texts]
    except _MSGSPEC_REFUSALS:
        return [decode_stored_bytes(data) for data in texts]  # each refusal is the strict one


def decode_canonical(data: bytes) -> object | None:
    """``canonical.decode(data)`` when ``data`` is canonical JSON, else None: the caller then
    decodes strictly and reports what is wrong (an archive's ARC-003 check, a stored record).

    msgspec decodes, every float literal checked to be in its CAN-005 form
    (:data:`convledger.fast.strict.DECODE`); ``orjson`` writes the value again
    (:data:`convledger.fast.strict.OPTIONS`), and the value is returned only
    when that is exactly ``data`` and the member orders of code point and UTF-16
    agree (:func:`~convledger.fast.strict.orders_agree`). Then ``data`` is the
    canonical text of the value: no repeated name, no whitespace, no escape but
    CAN-004's, integers within +/-(2**53 - 1) (``orjson`` refuses any other, so
    msgspec's value is the strict decoder's, CAN-013). A value nested deeper
    than ``orjson``'s 255 levels is not returned either (the strict decoder
    decides). None is also the answer for the text ``null``, which the caller
    decodes strictly, slower.
    """
    try:
        value = strict.DECODE(data)
    except strict.REFUSALS:
        return None
    try:
        encoded = orjson.dumps(value, option=strict.OPTIONS)
    except TypeError:
        return None
    return value if encoded == data and strict.orders_agree(data) else None
