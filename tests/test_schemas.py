"""The machine-readable schemas of ``spec/schemas/`` (chapters ``envelope.md``, ``archive.md``,
``kinds.md``): valid JSON Schema 2020-12, shipped unchanged, and in agreement with the reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from conftest import archive_bytes, draft_batches, drafts, identifiers, wire_event
from convledger import canonical
from convledger.archive import inspect_archive
from convledger.envelope import Envelope, EventDraft, from_wire
from convledger.errors import InvalidInputError
from convledger.kinds import default_registry
from convledger.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
SPEC_SCHEMAS = ROOT / "spec" / "schemas"
PACKAGE_SCHEMAS = ROOT / "reference" / "convledger" / "schemas"
SCHEMA_FILES = ["envelope.schema.json", "archive.schema.json", "kinds.json"]
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SPEC_SCHEMAS / name).read_text("utf-8"))
    return document


ENVELOPE_SCHEMA = _load("envelope.schema.json")
ARCHIVE_SCHEMA = _load("archive.schema.json")
ENVELOPE = Draft202012Validator(ENVELOPE_SCHEMA)
ARCHIVE = Draft202012Validator(
    ARCHIVE_SCHEMA,
    registry=Registry().with_resource(
        ENVELOPE_SCHEMA["$id"], Resource.from_contents(ENVELOPE_SCHEMA)
    ),
)


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_package_copy_equals_spec(name: str) -> None:
    """KND-001: the package ships the spec's schema files byte for byte."""
    assert (PACKAGE_SCHEMAS / name).read_bytes() == (SPEC_SCHEMAS / name).read_bytes()


@pytest.mark.parametrize("schema", [ENVELOPE_SCHEMA, ARCHIVE_SCHEMA], ids=["envelope", "archive"])
def test_schemas_are_valid_2020_12(schema: dict[str, Any]) -> None:
    """The envelope and archive schemas are valid JSON Schema draft 2020-12 with stable ids."""
    assert schema["$schema"] == DRAFT_2020_12
    assert schema["$id"].startswith("https://convledger.dev/schemas/")
    Draft202012Validator.check_schema(schema)


def test_archive_schema_refers_to_the_envelope_schema_by_id() -> None:
    """ARC-002: archive events are envelopes, referenced by the envelope schema's $id."""
    assert ARCHIVE_SCHEMA["properties"]["events"]["items"] == {"$ref": ENVELOPE_SCHEMA["$id"]}


def test_every_payload_schema_is_valid_2020_12() -> None:
    """KND-001: every payload schema of kinds.json is a valid draft 2020-12 schema."""
    entries = _load("kinds.json")["kinds"]
    assert entries
    for entry in entries:
        assert entry["payloadSchema"]["$schema"] == DRAFT_2020_12, entry["kind"]
        Draft202012Validator.check_schema(entry["payloadSchema"])


def test_envelope_schema_members_are_the_spec_members() -> None:
    """ENV-001: the schema requires the seven members and allows exactly the eight."""
    assert set(ENVELOPE_SCHEMA["required"]) == {
        "schemaVersion", "eventId", "conversationId", "seq", "kind", "occurredAt", "payload"
    }
    assert set(ENVELOPE_SCHEMA["properties"]) == set(ENVELOPE_SCHEMA["required"]) | {"ignorable"}
    assert ENVELOPE_SCHEMA["additionalProperties"] is False


# -- agreement on valid documents ---------------------------------------------------


@given(drafts(), identifiers, st.integers(1, canonical.MAX_SAFE_INTEGER))
def test_reference_envelopes_validate(draft: EventDraft, conversation_id: str, seq: int) -> None:
    """ENV-001 .. ENV-010: every envelope the reference builds satisfies the schema."""
    wire = canonical.decode(Envelope.from_draft(draft, conversation_id, seq).canonical_bytes())
    assert list(ENVELOPE.iter_errors(wire)) == []


@given(draft_batches())
def test_exported_archives_validate(batch: list[EventDraft]) -> None:
    """ARC-002: every archive the reference exports satisfies the archive schema."""
    store = MemoryStore()
    store.append("conv", batch)
    document = canonical.decode(store.export_conversation("conv"))
    assert list(ARCHIVE.iter_errors(document)) == []


# -- agreement on invalid documents -------------------------------------------------


def _without(member: str) -> dict[str, Any]:
    wire = dict(wire_event(1))
    del wire[member]
    return wire


INVALID_ENVELOPES = {
    "extra-member": {**wire_event(1), "extra": 1},
    "extra-member-ignorable": {**wire_event(1), "extra": 1, "ignorable": True},
    "ignorable-false": {**wire_event(1), "ignorable": False},
    "ignorable-one": {**wire_event(1), "ignorable": 1},
    "seq-0": {**wire_event(1), "seq": 0},
    "seq-2-53": {**wire_event(1), "seq": 2**53},
    "seq-string": {**wire_event(1), "seq": "1"},
    "schema-version-0": {**wire_event(1), "schemaVersion": 0},
    "schema-version-1.5": {**wire_event(1), "schemaVersion": 1.5},
    "empty-event-id": {**wire_event(1), "eventId": ""},
    "empty-conversation-id": {**wire_event(1), "conversationId": ""},
    "empty-kind": {**wire_event(1), "kind": ""},
    "event-id-number": {**wire_event(1), "eventId": 7},
    "occurred-at-without-offset": {**wire_event(1), "occurredAt": "2024-05-01T12:00:00"},
    "occurred-at-date-only": {**wire_event(1), "occurredAt": "2024-05-01"},
    "occurred-at-space": {**wire_event(1), "occurredAt": "2024-05-01 12:00:00Z"},
    "occurred-at-month-13": {**wire_event(1), "occurredAt": "2024-13-01T12:00:00Z"},
    "occurred-at-hour-24": {**wire_event(1), "occurredAt": "2024-05-01T24:00:00Z"},
    "occurred-at-offset-24": {**wire_event(1), "occurredAt": "2024-05-01T12:00:00+24:00"},
    "occurred-at-newline": {**wire_event(1), "occurredAt": "2024-05-01T12:00:00Z\n"},
    "occurred-at-unicode-digit": {**wire_event(1), "occurredAt": "2024-05-0١T12:00:00Z"},
    "missing-payload": _without("payload"),
    "missing-seq": _without("seq"),
    "not-an-object": [wire_event(1)],
}


@pytest.mark.parametrize("wire", INVALID_ENVELOPES.values(), ids=INVALID_ENVELOPES.keys())
def test_invalid_envelope_rejected_by_schema_and_reference(wire: Any) -> None:
    """ENV-001 .. ENV-010: the schema and from_wire both reject each invalid envelope."""
    assert not ENVELOPE.is_valid(wire)
    with pytest.raises(InvalidInputError):
        from_wire(wire)


def test_schema_is_looser_than_reference_only_on_calendar_days() -> None:
    """ENV-008: a pattern cannot count days per month; the reference does (documented)."""
    wire = {**wire_event(1), "occurredAt": "2023-02-29T00:00:00Z"}
    assert ENVELOPE.is_valid(wire)
    with pytest.raises(InvalidInputError):
        from_wire(wire)


def _archive_document(**members: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(archive_bytes([wire_event(1), wire_event(2)]))
    document.update(members)
    return {name: value for name, value in document.items() if value is not _DROP}


_DROP = object()

INVALID_ARCHIVES = {
    "extra-member": _archive_document(signature="s"),
    "missing-companions": _archive_document(companions=_DROP),
    "missing-events": _archive_document(events=_DROP),
    "other-format": _archive_document(format="other"),
    "other-version": _archive_document(formatVersion=2),
    "empty-events": _archive_document(events=[]),
    "events-null": _archive_document(events=None),
    "companion-member": _archive_document(companions={"unknown": {}}),
    "companions-array": _archive_document(companions=[]),
    "empty-conversation-id": _archive_document(conversationId=""),
    "invalid-event": _archive_document(events=[{**wire_event(1), "seq": 0}]),
}


@pytest.mark.parametrize("document", INVALID_ARCHIVES.values(), ids=INVALID_ARCHIVES.keys())
def test_invalid_archive_rejected_by_schema_and_reference(document: dict[str, Any]) -> None:
    """ARC-002, ARC-005, ARC-011: the schema and inspect_archive both reject each archive."""
    assert not ARCHIVE.is_valid(document)
    _archive, problems = inspect_archive(canonical.encode(document), default_registry())
    assert problems
