"""Canonical JSON: RFC 8785, the JSON Canonicalization Scheme (chapter ``canonical-json.md``).

Theory of operation
-------------------
Archives must re-export byte for byte (ARC-004), so every byte the ledger emits
as JSON comes from :func:`encode`, and every archive it reads goes through
:func:`decode`, which refuses anything :func:`encode` could not have produced
in the first place. Nothing is silently fixed (CAN-010).

The data model is JSON's with the limits of I-JSON: strings are Unicode
scalar values (no lone surrogates), numbers are finite IEEE-754 doubles, and
integers are exact only within +/-(2**53 - 1) (CAN-006).

This module is written to be read next to the spec, not to be fast.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from convledger.errors import CanonicalJsonError

JsonValue: TypeAlias = (
    None | bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"]
)
"""A JSON value as Python holds it. Decoding yields ``list`` and ``dict``."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON implementation represents exactly (CAN-006)."""

BOM = b"\xef\xbb\xbf"

# CAN-004: the two-character escapes; every other control is \u00xx, lower-case hex.
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_ESCAPES = {
    **{code: f"\\u{code:04x}" for code in range(0x20)},
    **{ord(char): escape for char, escape in _SHORT_ESCAPES.items()},
}
"""The escape of each character CAN-004 escapes, as a table for ``str.translate``."""
_SCALAR_TYPES = (type(None), bool, int, float, str)
"""The exact types :func:`encode` writes as scalars without asking the container ABCs first."""


class NestingTooDeep(Exception):
    """:func:`encode` with ``max_depth`` met a container nested deeper than that.

    Not a :class:`CanonicalJsonError`: the value may well be canonical JSON; it
    is the caller's limit (LIM-005) that refuses it, with the caller's error.
    """


def encode(value: object, *, max_depth: int | None = None) -> bytes:
    """Return the canonical JSON bytes of ``value`` (CAN-001 .. CAN-009).

    Raises :class:`CanonicalJsonError` for anything outside the data model,
    including a structure that contains itself (CAN-006). With ``max_depth``,
    raises :class:`NestingTooDeep` on reaching an array or object nested deeper
    than ``max_depth`` levels (the outermost one is level 1), so a payload's
    depth limit (LIM-005) costs no walk of its own. Which of the two a value
    that breaks both raises depends on which the walk reaches first.

    The writer keeps a work list instead of recursing, so any nesting depth the
    decoder accepted encodes again (CAN-009) and no ``RecursionError`` escapes.
    The list holds values still to write and :class:`_Literal` markers (commas,
    member names, closing brackets), and is processed last in, first out.
    The containers open at any moment are exactly those around the value being
    written, so their count is its depth.
    """
    out: list[str] = []
    todo: list[object] = [value]
    open_containers: set[int] = set()
    while todo:
        item = todo.pop()
        if isinstance(item, _Literal):
            out.append(item.text)
            if item.closes is not None:
                open_containers.discard(item.closes)
        elif type(item) in _SCALAR_TYPES:  # no container: skips the ABC check below
            out.append(_format_scalar(item))
        elif isinstance(item, (Mapping, list, tuple)):
            if id(item) in open_containers:
                raise CanonicalJsonError(
                    "a structure that contains itself is not a JSON value",
                    requirement="CAN-006",
                    reason="unsupported_type",
                )
            if max_depth is not None and len(open_containers) >= max_depth:
                raise NestingTooDeep(f"arrays and objects nest deeper than {max_depth} levels")
            open_containers.add(id(item))
            parts = _object_parts(item) if isinstance(item, Mapping) else _array_parts(item)
            todo.extend(reversed(parts))
        else:
            out.append(_format_scalar(item))
    return "".join(out).encode("utf-8")


class _Literal:
    """Text :func:`encode` writes as it is; ``closes`` is the container it ends, if any."""

    __slots__ = ("closes", "text")

    def __init__(self, text: str, closes: int | None = None) -> None:
        self.text = text
        self.closes = closes


_COMMA = _Literal(",")


def _array_parts(items: list[object] | tuple[object, ...]) -> list[object]:
    """CAN-003: ``[``, the elements in order separated by commas, ``]``."""
    parts: list[object] = [_Literal("[")]
    for index, item in enumerate(items):
        if index:
            parts.append(_COMMA)
        parts.append(item)
    parts.append(_Literal("]", closes=id(items)))
    return parts


def _object_parts(members: Mapping[object, object]) -> list[object]:
    """CAN-002, CAN-007: ``{``, the members sorted by UTF-16 code units, ``}``."""
    keys: list[str] = []
    for key in members:
        if not isinstance(key, str):
            raise CanonicalJsonError(
                f"object key {key!r} is not a string",
                requirement="CAN-007",
                reason="non_string_key",
            )
        keys.append(key)
    keys.sort(key=utf16_sort_key)
    parts: list[object] = [_Literal("{")]
    for index, key in enumerate(keys):
        name = _format_string(key) + ":"
        parts.append(_Literal("," + name if index else name))
        parts.append(members[key])
    parts.append(_Literal("}", closes=id(members)))
    return parts


def _format_scalar(value: object) -> str:
    """CAN-003 .. CAN-006: the literals, numbers and strings; anything else is refused."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return _format_integer(value)
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, str):
        return _format_string(value)
    raise CanonicalJsonError(
        f"{type(value).__name__} is not a JSON value",
        requirement="CAN-006",
        reason="unsupported_type",
    )


def utf16_sort_key(key: str) -> bytes:
    """The sort key of CAN-002: the name's UTF-16 code units, big-endian."""
    _check_scalar_values(key)
    return key.encode("utf-16-be")


def _check_scalar_values(text: str, *, requirement: str = "CAN-008") -> None:
    """CAN-008 (encoding) and CAN-013 (decoding): no lone surrogates."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise CanonicalJsonError(
            f"string contains a lone surrogate at index {error.start}",
            requirement=requirement,
            reason="lone_surrogate",
        ) from None


def _format_string(text: str) -> str:
    """CAN-004: quote, escape only what JSON requires, emit everything else as is."""
    _check_scalar_values(text)
    return '"' + text.translate(_ESCAPES) + '"'


def _format_integer(value: int) -> str:
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return int.__repr__(value)  # the digits, also of an IntEnum whose str() is its name
    raise CanonicalJsonError(
        f"an integer of {value.bit_length()} bits is outside +/-(2**53 - 1)",
        requirement="CAN-006",
        reason="integer_out_of_range",
    )


def format_number(value: float) -> str:
    """CAN-005: the ECMAScript ``Number.prototype.toString`` form of a finite double.

    Python's ``repr`` already yields the shortest digits that round-trip, which
    is what ECMAScript requires; only the layout (where the point goes, when an
    exponent is used) differs, and that is what this function decides.
    """
    if not math.isfinite(value):
        raise CanonicalJsonError(
            f"{value!r} is not a finite number",
            requirement="CAN-006",
            reason="non_finite_number",
        )
    if value == 0:
        return "0"  # also for -0.0
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    # The value is 0.digits * 10**exponent; ECMAScript calls exponent "n".
    k, n = len(digits), exponent
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        power = n - 1
        text = f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"
    return sign + text


def _shortest_digits(value: float) -> tuple[str, int]:
    """Split ``repr(value)`` into significant digits and the decimal exponent n."""
    mantissa, _, exp_text = repr(value).partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, fraction = mantissa.partition(".")
    if fraction == "0":
        fraction = ""
    digits = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len((whole + fraction).lstrip("0"))
    n = len(whole) + exponent - leading_zeros
    return digits.rstrip("0"), n


def decode(data: bytes) -> object:
    """Parse JSON bytes strictly (CAN-010 .. CAN-013).

    Refuses a BOM, invalid UTF-8, duplicate member names, lone surrogates,
    non-finite numbers and integer literals that no double holds exactly.
    Decoding does NOT check that ``data`` is canonical (CAN-014); compare
    ``encode(decode(data)) == data`` for that (ARC-003).
    """
    if data.startswith(BOM):
        raise CanonicalJsonError(
            "input starts with a byte order mark", requirement="CAN-011", reason="bom"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CanonicalJsonError(
            f"invalid UTF-8 at byte {error.start}", requirement="CAN-011", reason="invalid_utf8"
        ) from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_members,
            parse_constant=_refuse_constant,
            parse_int=_parse_integer,
            parse_float=_parse_float,
        )
    except CanonicalJsonError:
        raise
    except (json.JSONDecodeError, RecursionError) as error:
        raise CanonicalJsonError(
            f"not JSON: {error}", requirement="CAN-010", reason="syntax"
        ) from None
    _refuse_lone_surrogates(value)
    return value


def _unique_members(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, item in pairs:
        if key in result:
            raise CanonicalJsonError(
                f"duplicate member name {key!r}", requirement="CAN-012", reason="duplicate_key"
            )
        result[key] = item
    return result


def _refuse_constant(name: str) -> object:
    raise CanonicalJsonError(
        f"{name} is not a JSON number", requirement="CAN-010", reason="non_finite_number"
    )


_MAX_INTEGER_DIGITS = 21
"""No double prints as an integer literal of more than 21 digits (CAN-005: 1e21 is ``1e+21``)."""


def _parse_integer(text: str) -> int | float:
    if len(text.lstrip("-")) > _MAX_INTEGER_DIGITS:
        # Refused before int(), which itself refuses literals of over 4300 digits.
        raise CanonicalJsonError(
            f"integer literal of {len(text)} characters is not exactly representable",
            requirement="CAN-013",
            reason="integer_out_of_range",
        )
    value = int(text)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    # CAN-013: outside the safe range an integer literal is accepted only when it
    # is exactly how the nearest double prints (CAN-005), as 10000000000000000
    # and 295147905179352830000 (2**68) are. The literal need not equal the
    # double's binary value: ECMAScript prints the shortest digits, then zeros.
    as_double = float(value)
    if math.isfinite(as_double) and format_number(as_double) == text:
        return as_double
    raise CanonicalJsonError(
        f"integer {text} is not exactly representable", requirement="CAN-013",
        reason="integer_out_of_range",
    )


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise CanonicalJsonError(
            f"number {text} overflows a double", requirement="CAN-013",
            reason="non_finite_number",
        )
    return value


def _refuse_lone_surrogates(value: object) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _check_scalar_values(item, requirement="CAN-013")
        elif isinstance(item, dict):
            for key, member in item.items():
                _check_scalar_values(key, requirement="CAN-013")
                stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)


def canonicalize(data: bytes) -> bytes:
    """Decode JSON bytes strictly and return their canonical form (``convledger canon``)."""
    return encode(decode(data))
