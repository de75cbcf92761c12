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
from collections.abc import Callable
from typing import Any, cast

from convledger import canonical
from convledger.canonical import MAX_SAFE_INTEGER, JsonValue


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
