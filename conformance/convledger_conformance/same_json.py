"""Canonical equality without encoding what is plainly the same value (issue 34).

The state machines compare what a store answers with what the model holds by
their canonical bytes (``canonical.encode(a) == canonical.encode(b)``, CAN-001)
after every step, and most of their time went to encoding values that were
the same. :func:`canonically_equal` answers exactly that comparison, with the
same result and the same errors, but first walks both values: when they are
the same JSON value node for node, it answers ``True`` without encoding.

"The same" is strict, so that it implies equal bytes and no error: at every
node both values have the same exact type, one of ``dict``, ``list``,
``tuple``, ``str``, ``int``, ``bool``, ``float`` and ``None``; strings are
equal and free of lone surrogates (CAN-008); integers are equal and within
+/-(2**53 - 1) (CAN-006); floats are equal and finite (CAN-006; ``0.0`` and
``-0.0`` are equal and both encode as ``0``); objects have the same keys, every
key a string, and the same value under each; arrays have the same length and
the same element at each place. The encoder writes such a value from its types
and scalars alone, so both give the same bytes and neither raises. Anything
else (a difference, ``True`` beside ``1``, ``1.0`` beside ``1``, another type,
a subclass, a structure containing itself or nested past the recursion limit)
is judged by :func:`convledger.canonical.encode`, as before.

:func:`envelopes_match` does the same for a store's envelopes against the
model's canonical bytes: the bytes are decoded once (a cache), and an envelope
whose wire object is the same value as the decoded bytes encodes to them
(CAN-009: the decoding of canonical bytes encodes back to them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from convledger import canonical
from convledger.envelope import Envelope
from convledger_conformance.ledger.model import envelope_bytes, envelope_wire
from convledger_conformance.spec_values import MAX_SAFE_INTEGER


def _valid_text(text: str) -> bool:
    return text.isascii() or _encodes(text)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _same(a: object, b: object) -> bool:
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is str:
        return a == b and _valid_text(a)  # type: ignore[arg-type]
    if kind is dict:
        assert isinstance(a, dict) and isinstance(b, dict)
        if len(a) != len(b):
            return False
        for key, value in a.items():
            if type(key) is not str or key not in b or not _valid_text(key):
                return False
            if not _same(value, b[key]):
                return False
        return True
    if kind is list or kind is tuple:
        assert isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))
        return len(a) == len(b) and all(map(_same, a, b))
    if kind is int:
        return a == b and -MAX_SAFE_INTEGER <= a <= MAX_SAFE_INTEGER  # type: ignore[operator]
    if kind is bool or a is None:
        return a == b
    if kind is float:
        return a == b and math.isfinite(a)  # type: ignore[arg-type]
    return False


def same_value(a: object, b: object) -> bool:
    """``a`` and ``b`` are the same valid JSON value, node for node (see the module).

    ``True`` implies ``canonical.encode(a) == canonical.encode(b)`` and that neither raises;
    ``False`` says nothing.
    """
    try:
        return _same(a, b)
    except RecursionError:  # nested past the limit, or containing itself: the encoder judges
        return False


def canonically_equal(a: object, b: object) -> bool:
    """``canonical.encode(a) == canonical.encode(b)``, with its result and its errors."""
    return same_value(a, b) or canonical.encode(a) == canonical.encode(b)


@functools.lru_cache(maxsize=16384)
def decoded(encoded: bytes) -> object:
    """The value of canonical bytes, decoded once; never to be changed by its callers."""
    return canonical.decode(encoded)


def envelope_matches(envelope: Envelope, expected: bytes) -> bool:
    """``envelope_bytes(envelope) == expected``, with its result and its errors.

    ``expected`` is canonical (the model's bytes), so its decoding encodes back to it.
    """
    return same_value(envelope_wire(envelope), decoded(expected)) or (
        envelope_bytes(envelope) == expected
    )


def envelopes_match(envelopes: Sequence[Envelope], expected: Sequence[bytes]) -> bool:
    """``[envelope_bytes(e) for e in envelopes] == list(expected)``, with its errors."""
    return len(envelopes) == len(expected) and all(map(envelope_matches, envelopes, expected))


__all__ = [
    "canonically_equal",
    "decoded",
    "envelope_matches",
    "envelopes_match",
    "same_value",
]
