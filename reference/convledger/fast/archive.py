"""An archive written from stored rows, fast: the bytes ``encode_archive`` writes (ARC-001).

Theory of operation
-------------------
An archive (ARC-001) is the canonical JSON of one object whose ``events`` are
the envelopes of a conversation. A SQLite store keeps each payload as its
canonical text already (SQL-005), so writing an export does not need to
decode payloads into Python values and encode them again: the canonical text
of an envelope is its members in canonical order (CAN-002) with the stored
payload text spliced in, and the archive is those texts joined.

Member order: every name here is ASCII, so UTF-16 order is plain byte order::

    archive:  companions, conversationId, events, format, formatVersion
    envelope: conversationId, eventId, ignorable, kind, occurredAt, payload,
              schemaVersion, seq

Strings are written by ``json.encoder.encode_basestring`` (CPython's C
string writer without ASCII escaping), which escapes exactly what CAN-004
escapes; integers by ``int.__str__`` (seq and schemaVersion are within
2**53 - 1, ENV-003, ENV-006); ``ignorable`` appears only when true (ENV-010);
the companions object by :func:`convledger.fast.canonical.encode`.

:func:`encode_stored` equals ``encode_archive(archive_of(conversation_id,
[envelope_of(row) ...], companions))`` for every row a store wrote, which
``tests/test_fast_archive.py`` checks on generated rows.
"""

from __future__ import annotations

import json.encoder
from collections.abc import Callable, Mapping, Sequence

from convledger.archive_format import FORMAT, FORMAT_VERSION
from convledger.canonical import JsonValue
from convledger.fast import canonical as fast_canonical

StoredRow = tuple[str, int, str, str, int, str, str, int]
"""(conversation_id, seq, event_id, kind, schema_version, occurred_at, payload, ignorable)."""

_quote: Callable[[str], str] = json.encoder.encode_basestring


def envelope_text(row: StoredRow) -> str:
    """The canonical JSON text of the envelope one row stores (CAN-001, SQL-005)."""
    conversation_id, seq, event_id, kind, schema_version, occurred_at, payload, ignorable = row
    return (
        f'{{"conversationId":{_quote(conversation_id)},"eventId":{_quote(event_id)},'
        f'{_IGNORABLE if ignorable else ""}"kind":{_quote(kind)},'
        f'"occurredAt":{_quote(occurred_at)},"payload":{payload},'
        f'"schemaVersion":{int(schema_version)},"seq":{int(seq)}}}'
    )


_IGNORABLE = '"ignorable":true,'


def encode_stored(
    conversation_id: str, stored: Sequence[StoredRow], companions: Mapping[str, JsonValue]
) -> bytes:
    """The canonical archive of ``stored`` rows and ``companions`` (ARC-001, ARC-004)."""
    events = ",".join([envelope_text(row) for row in stored])
    text = (
        f'{{"companions":{fast_canonical.encode(dict(companions)).decode("utf-8")},'
        f'"conversationId":{_quote(conversation_id)},"events":[{events}],'
        f'"format":{_quote(FORMAT)},"formatVersion":{FORMAT_VERSION}}}'
    )
    return text.encode("utf-8")
