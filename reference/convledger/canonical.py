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


def encode(value: object) -> bytes:
    """Return the canonical JSON bytes of ``value`` (CAN-001 .. CAN-009).

    Raises :class:`CanonicalJsonError` for anything outside the data model.
    """
    parts: list[str] = []
    _encode_into(value, parts)
    return "".join(parts).encode("utf-8")


def _encode_into(value: object, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(_format_integer(value))
    elif isinstance(value, float):
        out.append(format_number(value))
    elif isinstance(value, str):
        out.append(_format_string(value))
    elif isinstance(value, Mapping):
        _encode_object(value, out)
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode_into(item, out)
        out.append("]")
    else:
        raise CanonicalJsonError(
            f"{type(value).__name__} is not a JSON value",
            requirement="CAN-006",
            reason="unsupported_type",
        )


def _encode_object(value: Mapping[object, object], out: list[str]) -> None:
    keys: list[str] = []
    for key in value:
        if not isinstance(key, str):
            raise CanonicalJsonError(
                f"object key {key!r} is not a string",
                requirement="CAN-007",
                reason="non_string_key",
            )
        keys.append(key)
    # CAN-002: members sorted by the UTF-16 code units of their names. Comparing
    # UTF-16-BE bytes orders exactly like comparing code units.
    keys.sort(key=utf16_sort_key)
    out.append("{")
    for index, key in enumerate(keys):
        if index:
            out.append(",")
        out.append(_format_string(key))
        out.append(":")
        _encode_into(value[key], out)
    out.append("}")


def utf16_sort_key(key: str) -> bytes:
    """The sort key of CAN-002: the name's UTF-16 code units, big-endian."""
    _check_scalar_values(key)
    return key.encode("utf-16-be")


def _check_scalar_values(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise CanonicalJsonError(
            f"string contains a lone surrogate at index {error.start}",
            requirement="CAN-008",
            reason="lone_surrogate",
        ) from None


def _format_string(text: str) -> str:
    """CAN-004: quote, escape only what JSON requires, emit everything else as is."""
    _check_scalar_values(text)
    escaped = []
    for char in text:
        short = _SHORT_ESCAPES.get(char)
        if short is not None:
            escaped.append(short)
        elif char < " ":
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _format_integer(value: int) -> str:
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return str(value)
    raise CanonicalJsonError(
        f"integer {value} is outside +/-(2**53 - 1)",
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
    Decoding does NOT check that ``data`` is canonical; compare
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
        f"{name} is not a JSON number", requirement="CAN-006", reason="non_finite_number"
    )


def _parse_integer(text: str) -> int | float:
    value = int(text)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    # CAN-013: outside the safe range an integer literal is accepted only when a
    # double holds it exactly and prints it back the same way (as 1e16 does).
    as_double = float(value)
    if math.isfinite(as_double) and int(as_double) == value and format_number(as_double) == text:
        return as_double
    raise CanonicalJsonError(
        f"integer {text} is not exactly representable", requirement="CAN-013",
        reason="integer_out_of_range",
    )


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise CanonicalJsonError(
            f"number {text} overflows a double", requirement="CAN-006",
            reason="non_finite_number",
        )
    return value


def _refuse_lone_surrogates(value: object) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _check_scalar_values(item)
        elif isinstance(item, dict):
            for key, member in item.items():
                _check_scalar_values(key)
                stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)


def canonicalize(data: bytes) -> bytes:
    """Decode JSON bytes strictly and return their canonical form (``convledger canon``)."""
    return encode(decode(data))
