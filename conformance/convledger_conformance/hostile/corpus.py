"""The hostile-input corpus: seeded, sized by profile, over every declared operation (LIM).

Each :class:`Case` is one call of one operation with one hostile argument in
one slot (an identifier, an integer, a JSON value, a time, an archive) and
the outcome chapter LIM requires: ``invalid_input`` for every hostile value,
``ok`` for the few that are valid on purpose (NUL inside an identifier,
LIM-003, a leap second, LIM-009). The corpus depends only on the seed, the
profile and the store's declaration (and its declared limits, LIM-010), so a
failure names a case that the same run reproduces.

The families of hostile values are tables below; :func:`corpus` draws
``PER_OPERATION[profile]`` cases per operation from them with a
:class:`random.Random` seeded by :data:`SEED` and the operation's name.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import cbor2

from convledger_conformance.ledger.strategies import UNKNOWN_KIND
from convledger_conformance.spec_values import LIMIT as BY_NAME
from convledger_conformance.support import STAMP, archive, draft, wires

SEED: Final = 16
TOTAL: Final = {"smoke": 0, "ci": 1_000, "thorough": 10_000}
"""The fewest cases a profile draws over all the store's operations (ci: 1,000 for any store)."""
PER_OPERATION: Final = {"smoke": 0, "ci": 40, "thorough": 200}
"""The fewest cases a profile draws for each operation, however many the store declares."""

CONVERSATION: Final = "h"
"""The conversation the corpus prepares (two events, and a run with transitions)."""
RUN: Final = "h-run"
SPILL: Final = "h-spill"
PROJECTION: Final = "h-count"

Call = Callable[[Any], object]


@attrs.frozen
class Case:
    """One hostile call: ``call(store)`` must end as ``expect`` (a kind, or ``ok``)."""

    operation: str
    slot: str
    family: str
    ids: tuple[str, ...]
    expect: str
    call: Call = attrs.field(eq=False, repr=False)

    @property
    def name(self) -> str:
        """What a failure message names."""
        return f"{self.operation}({self.slot} = {self.family})"


_MAGNITUDE: Final = BY_NAME["integerMagnitude"].value
"""LIM-007: 2**53 - 1, from spec/limits.json."""


_OCCURRED_AT_BYTES: Final = BY_NAME["occurredAtBytes"].value
"""LIM-008: 64, from spec/limits.json."""


def _time_of(size: int) -> str:
    """A valid RFC 3339 time of exactly ``size`` bytes: its fraction of a second fills it."""
    return "2024-01-01T00:00:00." + "0" * (size - 21) + "Z"


def limit(declared: Mapping[str, int], name: str) -> int:
    """The value of limit ``name`` the store is judged by (LIM-010)."""
    value = declared.get(name)
    default = BY_NAME[name].value
    raised = isinstance(value, int) and BY_NAME[name].declare and value > default
    return value if raised and isinstance(value, int) else default


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


# -- families of hostile values: name -> (ids, value maker over the declared limits) ----------

Maker = Callable[[Mapping[str, int], random.Random], object]

IDENTIFIERS: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "None": (("LIM-001",), lambda d, r: None),
    "an integer": (("LIM-001",), lambda d, r: r.choice([0, 42, -1, 2**64])),
    "bytes": (("LIM-001",), lambda d, r: b"h"),
    "a list": (("LIM-001",), lambda d, r: ["h"]),
    "a float": (("LIM-001",), lambda d, r: 1.5),
    "empty": (("LIM-001",), lambda d, r: ""),
    "a lone surrogate": (("LIM-002",), lambda d, r: "h" + chr(r.randrange(0xD800, 0xE000))),
    "only a lone surrogate": (("LIM-002",), lambda d, r: chr(r.randrange(0xD800, 0xE000))),
    "one byte too long": (
        ("LIM-001",), lambda d, r: "x" * (limit(d, "identifierBytes") + 1)),
    "too long in bytes, not characters": (
        ("LIM-001",), lambda d, r: "é" * (limit(d, "identifierBytes") // 2 + 1)),
    "far too long, with NUL": (
        ("LIM-001", "LIM-003"),
        lambda d, r: "\x00" * (limit(d, "identifierBytes") * r.randrange(2, 64))),
}

INTEGERS: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    # exactly one past LIM-007's magnitude (spec/limits.json), then a little further
    "2**53": (("LIM-007",), lambda d, r: _MAGNITUDE + 1),
    "-(2**53)": (("LIM-007",), lambda d, r: -_MAGNITUDE - 1),
    "2**53 + 1 or 2": (("LIM-007",), lambda d, r: _MAGNITUDE + 2 + r.randrange(2)),
    "2**64": (("LIM-007",), lambda d, r: 2**64 + r.randrange(3)),
    "-(2**64)": (("LIM-007",), lambda d, r: -(2**64)),
    "a huge integer": (("LIM-007",), lambda d, r: 10 ** r.randrange(4_300, 10_001)),
    "a huge negative integer": (("LIM-007",), lambda d, r: -(10 ** r.randrange(4_300, 10_001))),
    "a string": (("LIM-007",), lambda d, r: "1"),
    "a float": (("LIM-007",), lambda d, r: 2.5),
    "a boolean": (("LIM-007",), lambda d, r: True),
}

WINDOW_BOUNDS: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "zero": (("LIM-007",), lambda d, r: 0),
    "-(2**64)": (("LIM-007",), lambda d, r: -(2**64)),
    "a huge negative integer": (("LIM-007",), lambda d, r: -(10 ** r.randrange(4_300, 10_001))),
    "a string": (("LIM-007",), lambda d, r: "1"),
    "a float": (("LIM-007",), lambda d, r: 2.5),
    "a boolean": (("LIM-007",), lambda d, r: True),
}
"""A read's ``fromSeq`` and ``toSeq``: any integer >= 1 is a window (LIM-007, LED-011)."""

JSON_VALUES: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "a huge integer": (("LIM-007",), lambda d, r: {"v": 10 ** r.randrange(4_300, 10_001)}),
    "2**53": (("LIM-007",), lambda d, r: {"v": [1, 2**53]}),
    "one level too deep": (
        ("LIM-005",), lambda d, r: {"v": _deep(BY_NAME["nestingDepth"].value)}),
    "far too deep": (("LIM-005",), lambda d, r: {"v": _deep(r.randrange(300, 3_000))}),
    "a lone surrogate in a string": (("LIM-002",), lambda d, r: {"v": "a\ud800b"}),
    "a lone surrogate in a name": (("LIM-002",), lambda d, r: {"\udc00": 1}),
    "a non-string name": (("LIM-002",), lambda d, r: {"v": {1: 2}}),
    "NaN": (("LIM-007",), lambda d, r: {"v": float("nan")}),
    "an infinity": (("LIM-007",), lambda d, r: {"v": float("-inf")}),
    "bytes": (("LIM-002",), lambda d, r: {"v": b"\x00"}),
}

OVERSIZED_JSON: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "one byte over the payload limit": (
        ("LIM-004",), lambda d, r: {"v": "x" * (limit(d, "payloadBytes") - 7)}),
}
"""Drawn once per JSON slot outside profile smoke (16 MiB each)."""

TIMES: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "second 61": (("LIM-009",), lambda d, r: "2016-12-31T23:59:61Z"),
    "one byte over the limit": (("LIM-008",), lambda d, r: _time_of(_OCCURRED_AT_BYTES + 1)),
    "too long": (("LIM-008",), lambda d, r: "2024-01-01T00:00:00." + "0" * 60 + "Z"),
    "far too long": (("LIM-008",), lambda d, r: "2024-01-01T00:00:00Z" * 10_000),
    "a lone surrogate": (("LIM-002",), lambda d, r: "2024-01-01T00:00:00\ud800"),
    "no offset": (("LIM-008",), lambda d, r: "2024-01-01T00:00:00"),
    "an integer": (("LIM-008",), lambda d, r: 1_700_000_000),
}

VALID_TIMES: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "a leap second": (("LIM-009",), lambda d, r: "2016-12-31T23:59:60Z"),
}

ARCHIVES: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "None": (("LIM-006",), lambda d, r: None),
    "text": (("LIM-006",), lambda d, r: "{}"),
    "empty": (("LIM-006",), lambda d, r: b""),
    "a BOM": (("LIM-006",), lambda d, r: b"\xef\xbb\xbf{}"),
    "invalid UTF-8": (("LIM-002",), lambda d, r: b'{"format":"\xff"}'),
    "a lone surrogate escape": (("LIM-002",), lambda d, r: b'{"format":"\\ud800"}'),
    "truncated": (("LIM-006",), lambda d, r: b'{"format":'),
    "an array": (("LIM-006",), lambda d, r: b"[]"),
    "a huge integer literal": (("LIM-007",), lambda d, r: b'{"formatVersion":' + b"9" * 10_000
                               + b"}"),
    "deep nesting": (("LIM-005",), lambda d, r: b"[" * 100_000 + b"]" * 100_000),
    "an event one level too deep": (("LIM-005",), lambda d, r: _deep_archive()),
}


def _deep_archive() -> bytes:
    """A well-formed archive whose one event's payload nests 129 levels (LIM-005)."""
    value = _deep(BY_NAME["nestingDepth"].value)  # inside the payload object: one level more
    return archive("h-deep", wires("h-deep", [draft("h-deep-1", value)]))

OVERSIZED_ARCHIVES: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    "one byte over the archive limit": (
        ("LIM-006",), lambda d, r: b" " * (limit(d, "archiveBytes") + 1)),
    "a canonical archive one byte over the limit": (
        ("LIM-006",), lambda d, r: canonical_oversized_archive(limit(d, "archiveBytes") + 1)),
}
"""Drawn once per archive slot in profiles ci and thorough (128 MiB).

The spaces are not JSON, so a store that decoded them would refuse them anyway; only the
canonical archive tells a store that checks the size (LIM-006: before it decodes) from one
that decodes first and would import it."""

OVERSIZED_BUNDLES: Final[dict[str, tuple[tuple[str, ...], Maker]]] = {
    **OVERSIZED_ARCHIVES,
    "a canonical bundle one byte over the limit": (
        ("LIM-006",), lambda d, r: canonical_oversized_bundle(limit(d, "archiveBytes") + 1)),
}
"""The bundle slot's: a bundle of 128 MiB + 1 whose archive is canonical (SPL-050, LIM-006)."""

ARCHIVE_PARTS: Final = 9
"""Events of :func:`canonical_oversized_archive`: 128 MiB in 9 keeps each payload under 16 MiB."""


def canonical_oversized_archive(size: int) -> bytes:
    """A canonical, otherwise valid archive of exactly ``size`` bytes (LIM-006).

    :data:`ARCHIVE_PARTS` ignorable events of an unregistered kind (RPL-002) whose payloads
    are strings of ``x``, spliced into the encoding of a small archive instead of encoded:
    about 0.1 s and one copy of ``size`` bytes, where encoding the events costs seconds.
    """
    marks = [f"h-fill-{part}" for part in range(ARCHIVE_PARTS)]
    events = [{"schemaVersion": 1, "eventId": f"h-big-{part}", "conversationId": "h-big",
               "seq": part + 1, "kind": UNKNOWN_KIND, "occurredAt": STAMP, "payload": mark,
               "ignorable": True} for part, mark in enumerate(marks)]
    small = archive("h-big", events)
    fill = size - (len(small) - sum(len(mark) for mark in marks))
    if fill < ARCHIVE_PARTS:
        raise ValueError(f"an archive of {size} bytes is too small to fill")
    pieces = small.split(b'"h-fill-')
    assert len(pieces) == ARCHIVE_PARTS + 1
    out = [pieces[0]]
    # two shares of x at most (they differ by one byte): each made once and joined as often as
    # needed, so the kernel zero-fills 128 MiB + 28 MiB of new pages instead of 256 MiB
    shares: dict[int, bytes] = {}
    for part, piece in enumerate(pieces[1:]):
        share = fill // ARCHIVE_PARTS + (1 if part < fill % ARCHIVE_PARTS else 0)
        rest = piece[len(str(part)):]  # after the mark's number: its closing quote onwards
        if share not in shares:
            shares[share] = b"x" * share
        out += [b'"', shares[share], rest]
    data = b"".join(out)
    assert len(data) == size
    return data


def canonical_oversized_bundle(size: int) -> bytes:
    """A valid bundle (SPL-050) of exactly ``size`` bytes: no objects, one canonical archive.

    The CBOR map of an exported bundle without spills, its archive made by
    :func:`canonical_oversized_archive` to the size that makes the whole ``size`` bytes (a
    byte string of 65 536 bytes or more has a 5-byte head).
    """
    def encoded(archive_bytes: bytes) -> bytes:
        document = {"format": "convledger.bundle", "archive": archive_bytes, "objects": [],
                    "formatVersion": 1}
        return bytes(cbor2.dumps(document, canonical=True))

    rest = len(encoded(b"")) - 1  # the empty byte string's head is 1 byte
    data = encoded(canonical_oversized_archive(size - rest - 5))
    assert len(data) == size
    return data
