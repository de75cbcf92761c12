"""Canonical JSON, fast: the same bytes as :mod:`convledger.canonical`, sooner (CAN-001 .. CAN-009).

Theory of operation
-------------------
CPython's C JSON encoder, set up compact, with sorted keys and without ASCII
escaping, already writes RFC 8785 for most values a ledger holds. It differs
from RFC 8785 only in the cases below, and there silently: a wrong number
layout (CAN-005), a wrong member order (CAN-002), or a value accepted that
must be refused (CAN-006 .. CAN-008). So the writer asks of each
container one question, answered by a cheap pass (:func:`exact`): *will the C
encoder write exactly the canonical bytes of this?*

1. Yes: the C encoder writes the container whole. For a typical envelope
   the answer is yes at the top, and that is the whole cost. At the top,
   ``orjson`` (when installed) writes it instead, some 20 times sooner than
   the C encoder: on every value :func:`exact` admits it writes the same
   bytes (strings escaped as CAN-004 says, members sorted by code point, the
   ``repr`` of each admitted float), which ``tests/test_fast_canonical.py``
   checks against both the C encoder and the clear one. Anything ``orjson``
   refuses (a lone surrogate, more than 255 levels) goes to the clear encoder.
2. No: the container is written part by part, each member or item again by
   step 1 or 2, with the clear module's own number formatting and member
   order for the parts the C encoder would get wrong (``1.0``, astral names).
3. Anything outside the data model (a bad number, a non-string name, a
   foreign type), a lone surrogate (found when the text is encoded to UTF-8),
   or a ``RecursionError``: the clear encoder
   :func:`convledger.canonical.encode` handles the WHOLE value, and either
   writes it or raises its own refusal. The ``reason`` of a refused value
   can never differ, because only the clear code ever refuses.

Where the C encoder and RFC 8785 part ways, and what :func:`exact` demands:

=============  ==============================  =====================================
value          C encoder writes                exact when
=============  ==============================  =====================================
``None``,      ``null``, ``true``, ``false``   always
bool
``int``        ``int.__repr__``                within +/-(2**53 - 1) (CAN-006);
                                               outside, the clear code refuses
``float``      ``float.__repr__``              finite, no exponent in the repr and
                                               no trailing ``.0`` (see below)
``str``        escapes ``"`` ``\\`` and         always (the same rule as CAN-004);
               U+0000..U+001F exactly as       a lone surrogate makes the UTF-8
               CAN-004 says, rest as is        encoding fail, and the clear code
                                               refuses it (CAN-008)
``list``,      ``[a,b]`` in order              every item exact
``tuple``
``dict``       members sorted by code point    every name an exact ``str`` and no
                                               name holds a code point above the
                                               BMP; every member value exact
anything else  (refused, or written wrong:     never; the clear code decides
               subclasses, non-str names)
=============  ==============================  =====================================

Only exact built-in types qualify: a ``str``, ``int`` or ``dict`` subclass
(an ``IntEnum``, an ``OrderedDict``) may print or iterate differently in the
two encoders, so a value holding one always takes the clear path (step 3).

Why names in the BMP sort the same: code-point order and UTF-16 order (CAN-002)
agree for two names until the first position where they differ. If both code
points there are in the BMP, each is one UTF-16 unit equal to the code point;
if both are above the BMP, their surrogate pairs order like the code points.
They disagree only for a BMP code point in U+E000..U+FFFF against one above
the BMP, whose first unit is a high surrogate (U+D800..U+DBFF). So a dict
whose names all stay in the BMP sorts identically under both orders.

Why such floats print the same: ``float.__repr__`` writes the shortest
round-tripping digits, as ECMAScript does (CAN-005), and the clear
:func:`convledger.canonical.format_number` reuses exactly those digits; only
the layout can differ. Python's repr uses an exponent unless the decimal
exponent is within 1e-4 <= |x| < 1e16, so a repr without one is ``W.F`` where
W has at most 16 digits and, when W is ``0``, F starts with at most three
zeros. ECMAScript's exponent n is then in -3..16, where it too writes plain
decimals. If the repr does not end in ``.0``, F has no trailing zeros and both
forms are literally ``W.F``. A repr ending in ``.0`` (``1.0``, ``-0.0``) or
carrying an exponent (``1e+16``, ``1e-05``) is laid out by ``format_number``
instead (step 2).
The property tests in ``tests/test_fast_canonical.py`` check all of this on
generated values.

The scan and both writers recurse, so a value that contains itself, or one
nested deeper than Python's stack allows, ends in ``RecursionError``;
:func:`encode` then hands it to the clear encoder, which works without
recursion: it refuses the cycle (CAN-006) and writes the deep value (CAN-009).

:func:`encode_payload` is :func:`encode` with the depth limit of a payload
(LIM-005) checked in the same scan: each container is handed the ``room``
(levels) left below it, and a container met with no room left makes the whole
value go to the clear encoder with the same ``max_depth``, which raises
:class:`convledger.canonical.NestingTooDeep` (or its own refusal, whichever
its walk reaches first). So the limit needs no walk of its own.
"""

from __future__ import annotations

import _json
import math
from collections.abc import Callable
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the C encoder serves without it
    orjson = None  # type: ignore[assignment]

from convledger import canonical
from convledger.errors import CanonicalJsonError
from convledger.limits import MAX_DEPTH

MAX_SAFE_INTEGER = canonical.MAX_SAFE_INTEGER
_UNLIMITED = 2**62
"""The room of :func:`encode`: no depth limit (the stack runs out long before)."""
_ABOVE_BMP = "\U00010000"
"""The first code point outside the Basic Multilingual Plane."""


def _not_json(value: object) -> object:
    """The C encoder's hook for unknown types; :func:`exact` never lets one through."""
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _make_writer() -> Callable[[object], str]:
    """CPython's C encoder: compact, members sorted by code point, nothing escaped but CAN-004's."""
    c_encoder = _json.make_encoder(
        None, _not_json, _json.encode_basestring, None, ":", ",", True, False, False
    )

    def write(value: object) -> str:
        return "".join(c_encoder(value, 0))

    return write


_write_json = _make_writer()


def _dump_exact(value: object) -> bytes:
    """The canonical bytes of a container :func:`exact` admitted: ``orjson``, else the C encoder."""
    if orjson is None:  # pragma: no cover
        return _write_json(value).encode("utf-8")
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class _Unwritable(Exception):
    """Raised by the part writer for anything only the clear encoder may judge."""


def encode(value: object) -> bytes:
    """Return ``convledger.canonical.encode(value)``, sooner.

    Raises :class:`convledger.errors.CanonicalJsonError` with the same ``reason``
    as the clear encoder, because only the clear encoder ever refuses.
    """
    try:
        return _write_top(value, _UNLIMITED)
    except (UnicodeEncodeError, TypeError):
        pass  # a lone surrogate somewhere (CAN-008), or anything orjson refuses
    except (_Unwritable, CanonicalJsonError):
        pass  # outside the data model, or a lone surrogate in a member name
    except RecursionError:
        pass  # a cycle (CAN-006) or deep nesting: the clear encoder has no stack limit
    return canonical.encode(value)


def encode_payload(value: object) -> bytes:
    """Return ``convledger.canonical.encode(value, max_depth=MAX_DEPTH)``, sooner (LIM-005)."""
    try:
        return _write_top(value, MAX_DEPTH)
    except (UnicodeEncodeError, TypeError):
        pass
    except (_Unwritable, CanonicalJsonError):
        pass  # also a container with no room left: the clear encoder raises NestingTooDeep
    except RecursionError:
        pass
    return canonical.encode(value, max_depth=MAX_DEPTH)


def _write_top(value: Any, room: int) -> bytes:
    """The canonical bytes of ``value``: an admitted container by :func:`_dump_exact`."""
    kind = type(value)
    if (kind is dict or kind is list or kind is tuple) and exact(value, room):
        return _dump_exact(value)
    return _write(value, room).encode("utf-8")


def _write(value: Any, room: int) -> str:
    """The canonical text of ``value``: whole by the C encoder when exact, else part by part.

    The parts are written as the clear encoder writes them: strings by the
    CAN-004 escaper the C encoder uses, numbers by the clear module's own
    :func:`~convledger.canonical.format_number`, members in the clear module's
    order. Anything else raises :class:`_Unwritable`.
    """
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        if exact(value, room):
            return _write_json(value)
        if kind is dict:
            return _write_members(value, room - 1)
        return "[" + ",".join([_write(item, room - 1) for item in value]) + "]"
    if kind is str:
        return _json.encode_basestring(value)
    if kind is float:
        return canonical.format_number(value)
    if kind is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return str(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    raise _Unwritable


def _write_members(members: dict[Any, Any], room: int) -> str:
    """CAN-002: members by UTF-16 code units; code-point order when every name is in the BMP."""
    names = list(members)
    for name in names:
        if type(name) is not str:
            raise _Unwritable
    if all(name.isascii() or max(name) < _ABOVE_BMP for name in names):
        names.sort()
    else:
        names.sort(key=canonical.utf16_sort_key)
    written = [
        _json.encode_basestring(name) + ":" + _write(members[name], room) for name in names
    ]
    return "{" + ",".join(written) + "}"


def exact(value: object, room: int = _UNLIMITED) -> bool:
    """True when the C encoder writes exactly the canonical bytes of ``value``.

    Lone surrogates aside, which the caller detects when it encodes the result
    to UTF-8. False for everything the clear encoder refuses. ``room`` is how
    many levels of arrays and objects ``value`` may hold (``value`` itself
    counts); a container met with none left raises :class:`_Unwritable`.
    """
    kind = type(value)
    if kind is dict:
        return _exact_members(value, room)  # type: ignore[arg-type]
    if kind is list or kind is tuple:
        return _exact_items(value, room)  # type: ignore[arg-type]
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER  # type: ignore[operator]
    if kind is float:
        return _exact_float(value)  # type: ignore[arg-type]
    return False


# The two loops below inline the commonest members (str, int, nested objects):
# they are the hot path of an export, and a call per member costs more than the check.


def _exact_members(members: dict[Any, Any], room: int) -> bool:
    """Every name an exact ``str`` inside the BMP (so both orders agree), every value exact."""
    if room < 1:
        raise _Unwritable  # LIM-005: nested deeper than allowed; the clear encoder says so
    room -= 1
    for name, item in members.items():
        if type(name) is not str or not (name.isascii() or max(name) < _ABOVE_BMP):
            return False
        kind = type(item)
        if kind is str:
            continue
        if kind is dict:
            if not _exact_members(item, room):
                return False
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return False
        elif not exact(item, room):
            return False
    return True


def _exact_items(items: list[Any] | tuple[Any, ...], room: int) -> bool:
    """Every item exact."""
    if room < 1:
        raise _Unwritable  # LIM-005, as in _exact_members
    room -= 1
    for item in items:
        kind = type(item)
        if kind is str:
            continue
        if kind is dict:
            if not _exact_members(item, room):
                return False
        elif not exact(item, room):
            return False
    return True


def _exact_float(number: float) -> bool:
    """A finite float whose repr is already its ECMAScript form (CAN-005)."""
    if not math.isfinite(number):
        return False
    text = repr(number)
    return "e" not in text and not text.endswith(".0")
