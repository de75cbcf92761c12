"""The limits of every input (``limits.md``, chapter LIM), as one table.

:data:`LIMITS` is the reference's copy of the ``limits`` of ``spec/limits.json``
(a test keeps the three equal: this table, the JSON file and the sentences of
the chapter). The ``bounds`` and ``defaults`` of that file have no copy here:
each chapter's module enforces its own, and the conformance suite reads the
spec's file itself (:mod:`convledger_conformance.spec_values`), never this one.
The checks here are the ones every operation's validation calls where input
enters (the bases of :mod:`convledger.store_base`, :mod:`convledger.runtime.store`
and the other capability bases, and the wire decoder):

====================  ======================================================
check                 refuses with ``invalid_input``
====================  ======================================================
:func:`check_text`    a non-string, an empty string, a lone surrogate (LIM-002),
                      more UTF-8 bytes than the identifier limit (LIM-001)
:func:`check_depth`   a JSON value nested deeper than LIM-005 allows
:func:`check_size`    canonical bytes of a value over LIM-004
:func:`check_archive` an archive or bundle over LIM-006
====================  ======================================================

:func:`shown` writes any value into an error message without converting a
huge integer to text (which Python refuses beyond 4,300 digits, LIM-007).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from convledger.errors import InvalidInputError


@attrs.frozen
class Limit:
    """One limit of ``spec/limits.json``: name, value, unit, id, whether a store may raise it."""

    name: str
    value: int
    unit: str
    requirement: str
    declare: bool


LIMITS: tuple[Limit, ...] = (
    Limit("identifierBytes", 1024, "UTF-8 bytes", "LIM-001", True),
    Limit("payloadBytes", 16 * 1024 * 1024, "canonical bytes", "LIM-004", True),
    Limit("nestingDepth", 128, "levels", "LIM-005", False),
    Limit("archiveBytes", 128 * 1024 * 1024, "bytes", "LIM-006", True),
    Limit("integerMagnitude", 2**53 - 1, "absolute value", "LIM-007", False),
    Limit("occurredAtBytes", 64, "bytes", "LIM-008", False),
)
"""Every limit of chapter LIM, in the order of ``spec/limits.json``."""

BY_NAME: Mapping[str, Limit] = {limit.name: limit for limit in LIMITS}


MAX_IDENTIFIER_BYTES = BY_NAME["identifierBytes"].value
MAX_PAYLOAD_BYTES = BY_NAME["payloadBytes"].value
MAX_DEPTH = BY_NAME["nestingDepth"].value
MAX_ARCHIVE_BYTES = BY_NAME["archiveBytes"].value
MAX_INTEGER = BY_NAME["integerMagnitude"].value
MAX_OCCURRED_AT_BYTES = BY_NAME["occurredAtBytes"].value

_SHOWN_CHARS = 80


def shown(value: object) -> str:
    """A short text for an error message: never converts an int of more than 64 bits to text."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, str):
        if len(value) > _SHOWN_CHARS:
            return f"a string of {len(value)} characters"
        return ascii(value)
    if isinstance(value, (bytes, bytearray)) and len(value) > _SHOWN_CHARS:
        return f"{len(value)} bytes"
    if isinstance(value, (Mapping, list, tuple, set)):
        return f"a {type(value).__name__} of {len(value)} items"
    try:
        text = repr(value)
    except Exception:  # a caller's object whose repr fails still gets a typed refusal
        return f"a {type(value).__name__}"
    return text if len(text) <= _SHOWN_CHARS else f"a {type(value).__name__}"


def check_text(value: object, field: str, requirement: str, *, empty: bool = False) -> str:
    """A string of Unicode scalar values of at most LIM-001's bytes (non-empty unless ``empty``)."""
    if not isinstance(value, str) or (not value and not empty):
        raise InvalidInputError(
            f"{field} must be a non-empty string, got {shown(value)}",
            requirement=requirement,
            field=field,
        )
    # LIM-001: every character is at least one byte; LIM-011: a huge string is refused on its
    # length alone, before it is encoded or scanned
    if len(value) > MAX_IDENTIFIER_BYTES:
        raise _too_long(field, len(value))
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:  # LIM-002: only Unicode scalar values, in every string
        raise InvalidInputError(
            f"{field} contains a lone surrogate", requirement=requirement, field=field
        ) from None
    if len(encoded) > MAX_IDENTIFIER_BYTES:
        raise _too_long(field, len(encoded))
    return value


def _too_long(field: str, size: int) -> InvalidInputError:
    return InvalidInputError(
        f"{field} has more than {MAX_IDENTIFIER_BYTES} UTF-8 bytes ({size} characters or bytes)",
        requirement="LIM-001",
        field=field,
    )


def check_integer(value: object, field: str, requirement: str, *, minimum: int) -> int:
    """An int (not a bool) in ``minimum`` .. 2**53 - 1 (LIM-007)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not minimum <= value <= MAX_INTEGER
    ):
        raise InvalidInputError(
            f"{field} must be an integer from {minimum} to 2**53 - 1, got {shown(value)}",
            requirement=requirement,
            field=field,
        )
    return value


def check_depth(value: object, field: str) -> None:
    """LIM-005: refuse a value whose arrays and objects nest deeper than :data:`MAX_DEPTH`."""
    todo: list[tuple[object, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, Mapping):
            children: list[object] = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            continue
        if depth > MAX_DEPTH:
            raise too_deep(field)
        todo.extend((child, depth + 1) for child in children)


def too_deep(field: str) -> InvalidInputError:
    """LIM-005: the refusal of a value nested deeper than :data:`MAX_DEPTH`.

    :func:`check_depth` raises it, and so does the append path when the payload
    encoder finds the same depth in its own walk (:func:`convledger.codec.encode_payload`).
    """
    return InvalidInputError(
        f"{field} nests arrays and objects deeper than {MAX_DEPTH} levels",
        requirement="LIM-005",
        field=field,
    )


def check_size(encoded: bytes, field: str) -> bytes:
    """LIM-004: the canonical bytes of one JSON value are at most :data:`MAX_PAYLOAD_BYTES`."""
    if len(encoded) > MAX_PAYLOAD_BYTES:
        raise InvalidInputError(
            f"{field} has {len(encoded)} canonical bytes, over {MAX_PAYLOAD_BYTES}",
            requirement="LIM-004",
            field=field,
        )
    return encoded


def check_archive(data: object, field: str) -> None:
    """LIM-006: an archive or bundle of at most :data:`MAX_ARCHIVE_BYTES` (its type is ARC's)."""
    if isinstance(data, (bytes, bytearray, memoryview)) and len(data) > MAX_ARCHIVE_BYTES:
        raise InvalidInputError(
            f"{field} has {len(data)} bytes, over {MAX_ARCHIVE_BYTES}",
            requirement="LIM-006",
            field=field,
        )
