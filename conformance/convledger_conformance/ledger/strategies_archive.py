"""Archive documents for the checks of chapter ARC, and the hostile ones of ARCHIVE_FAULTS.

Drafts placed as wire envelopes (:func:`placed`), their archive bytes and the
archive object of ARC-001 as a mutable document; and ways to break such a
document, each with the error kind and the ids it calls for (ARC-003 ..
ARC-012, :class:`ArchiveFault`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Final, cast

import attrs

from convledger import canonical
from convledger.envelope import EventDraft
from convledger_conformance.ledger.model import archive_bytes, draft_wire
from convledger_conformance.ledger.strategies import STATE_SET, UNKNOWN_KIND


def placed(conversation_id: str, drafts: list[EventDraft]) -> list[dict[str, object]]:
    """The wire envelopes of ``drafts`` at seqs 1..n of ``conversation_id``."""
    return [draft_wire(d, conversation_id, seq) for seq, d in enumerate(drafts, start=1)]


def archive_of_wires(conversation_id: str, wires: list[dict[str, object]]) -> bytes:
    """Canonical archive bytes of wire envelopes (see :func:`model.archive_bytes`)."""
    return archive_bytes(conversation_id, (canonical.encode(w) for w in wires))


def document_of(conversation_id: str, wires: list[dict[str, object]]) -> dict[str, object]:
    """The archive object of ARC-001, as a mutable document."""
    return {
        "format": "convledger.archive",
        "formatVersion": 1,
        "conversationId": conversation_id,
        "events": wires,
        "companions": {},
    }


@attrs.frozen
class ArchiveFault:
    """One way to make archive bytes unacceptable, the kind it calls for and the ids."""

    kind: str
    ids: tuple[str, ...]
    make: Callable[[dict[str, object]], object] = attrs.field(repr=False)


def _mutated(change: Callable[[dict[str, object]], object]) -> Callable[[dict[str, object]], bytes]:
    def make(document: dict[str, object]) -> bytes:
        changed = copy.deepcopy(document)
        change(changed)
        return canonical.encode(changed)

    return make


def _event(document: dict[str, object], index: int = -1) -> dict[str, object]:
    events = document["events"]
    assert isinstance(events, list)
    event = events[index]
    assert isinstance(event, dict)
    return event


def _splice(token: bytes) -> Callable[[dict[str, object]], bytes]:
    return lambda document: b'{"aaa":' + token + b"," + canonical.encode(document)[1:]


def _set(name: str, value: object, index: int = -1) -> Callable[[dict[str, object]], None]:
    return lambda document: _event(document, index).__setitem__(name, value)


def _unknown_kind(document: dict[str, object]) -> None:
    event = _event(document)
    event["kind"] = UNKNOWN_KIND
    event.pop("ignorable", None)


def _other_conversation(document: dict[str, object]) -> None:
    _event(document)["conversationId"] = f"{document['conversationId']}/other"


def _seq_gap(document: dict[str, object]) -> None:
    event = _event(document)
    event["seq"] = len(cast(list[object], document["events"])) + 1


def _repeat_first_id(document: dict[str, object]) -> None:
    events = document["events"]
    assert isinstance(events, list)
    events.append(dict(_event(document, 0), seq=len(events) + 1))


ARCHIVE_FAULTS: Final[Mapping[str, ArchiveFault]] = {
    "whitespace": ArchiveFault(
        "invalid_input", ("ARC-003",),
        lambda d: json.dumps(document_canonical_order(d), indent=1, ensure_ascii=False).encode(),
    ),
    "reordered keys": ArchiveFault(
        "invalid_input", ("ARC-003",),
        lambda d: b'{"format":"convledger.archive",' + canonical.encode(
            {k: v for k, v in d.items() if k != "format"})[1:],
    ),
    "byte order mark": ArchiveFault(
        "invalid_input", ("ARC-003", "CAN-011"), lambda d: b"\xef\xbb\xbf" + canonical.encode(d)
    ),
    "truncated": ArchiveFault(
        "invalid_input", ("ARC-003", "CAN-010"), lambda d: canonical.encode(d)[:-1]
    ),
    "trailing text": ArchiveFault(
        "invalid_input", ("ARC-003", "CAN-010"), lambda d: canonical.encode(d) + b"{}"
    ),
    "invalid UTF-8": ArchiveFault("invalid_input", ("ARC-003", "CAN-011"), _splice(b'"\xff"')),
    "duplicate key": ArchiveFault(
        "invalid_input", ("ARC-003", "CAN-012"),
        lambda d: b'{"companions":{},' + canonical.encode(d)[1:],
    ),
    "lone surrogate escape": ArchiveFault(
        "invalid_input", ("ARC-003", "CAN-013"), _splice(b'"\\ud800"')
    ),
    "integer 2**53+1": ArchiveFault(
        "invalid_input", ("ARC-003", "CAN-013"), _splice(b"9007199254740993")
    ),
    "overflowing number": ArchiveFault("invalid_input", ("ARC-003", "CAN-013"), _splice(b"1e400")),
    "NaN literal": ArchiveFault("invalid_input", ("ARC-003", "CAN-010"), _splice(b"NaN")),
    "not bytes": ArchiveFault(
        "invalid_input", ("ARC-003",), lambda d: canonical.encode(d).decode("utf-8")
    ),
    "extra archive member": ArchiveFault(
        "invalid_input", ("ARC-002",), _mutated(lambda d: d.__setitem__("extra", 1))
    ),
    "missing companions": ArchiveFault(
        "invalid_input", ("ARC-002",), _mutated(lambda d: d.__delitem__("companions"))
    ),
    "other format": ArchiveFault(
        "invalid_input", ("ARC-002",), _mutated(lambda d: d.__setitem__("format", "other"))
    ),
    "formatVersion 2": ArchiveFault(
        "not_supported", ("ARC-002",), _mutated(lambda d: d.__setitem__("formatVersion", 2))
    ),
    "unknown companion": ArchiveFault(
        "invalid_input", ("ARC-011",), _mutated(lambda d: d.__setitem__("companions", {"x": {}}))
    ),
    "companions not an object": ArchiveFault(
        "invalid_input", ("ARC-011",), _mutated(lambda d: d.__setitem__("companions", []))
    ),
    "empty events": ArchiveFault(
        "invalid_input", ("ARC-005",), _mutated(lambda d: d.__setitem__("events", []))
    ),
    "events not an array": ArchiveFault(
        "invalid_input", ("ARC-005",), _mutated(lambda d: d.__setitem__("events", {}))
    ),
    "wrong conversationId": ArchiveFault(
        "invalid_input", ("ARC-006",), _mutated(_other_conversation)
    ),
    "seq gap": ArchiveFault(
        "invalid_input", ("ARC-007",),
        _mutated(_seq_gap),
    ),
    "seq zero": ArchiveFault("invalid_input", ("ARC-007", "ENV-006"), _mutated(_set("seq", 0, 0))),
    "duplicate eventId": ArchiveFault("invalid_input", ("ARC-008",), _mutated(_repeat_first_id)),
    "unknown kind, not ignorable": ArchiveFault(
        "replay_refused", ("ARC-012", "RPL-003"), _mutated(_unknown_kind)
    ),
    "ignorable false": ArchiveFault(
        "invalid_input", ("ARC-012", "ENV-010"), _mutated(_set("ignorable", False))
    ),
    "extra envelope member": ArchiveFault(
        "invalid_input", ("ARC-012", "ENV-002"), _mutated(_set("extra", True))
    ),
    "missing occurredAt": ArchiveFault(
        "invalid_input", ("ARC-012", "ENV-001"),
        _mutated(lambda d: _event(d).__delitem__("occurredAt")),
    ),
    "occurredAt without offset": ArchiveFault(
        "invalid_input", ("ARC-012", "ENV-008"),
        _mutated(_set("occurredAt", "2024-01-01T00:00:00")),
    ),
    "payload breaks its schema": ArchiveFault(
        "invalid_input", ("ARC-012", "KND-003"),
        _mutated(lambda d: _event(d).update(kind=STATE_SET, schemaVersion=1, payload={})),
    ),
}
"""Hostile archives for import, each made from a valid archive document (ARC-003 .. ARC-012)."""


def document_canonical_order(document: Mapping[str, object]) -> object:
    """``document`` with members inserted in canonical order, for whitespace-only changes."""
    return json.loads(canonical.encode(document))
