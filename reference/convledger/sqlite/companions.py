"""Projection checkpoints and spill objects in SQLite (SQL-060 .. SQL-064).

Every function here runs on the connection of a transaction its caller
(``store.py``) began and commits or rolls back (SQL-043). The tables are those
of schema version 2: ``projections`` keeps one row per (conversation, name)
with the state as canonical JSON; ``spills`` keeps one row per live object,
its creating operation (``{operationId, authorization}``) as canonical JSON in
``authorization`` and its bytes in ``data``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import cast

from convledger import canonical, codec
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.errors import ConflictError, DuplicateError, IntegrityError
from convledger.host.rows import ChildLink, FactRow, ScheduleRow
from convledger.kinds import KindRegistry
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.operations import catch_up_rows
from convledger.spills.objects import SpillMetadata
from convledger.spills.operations import not_live
from convledger.spills.operations import refuse_live_spill_events as refuse_spill_events
from convledger.sqlite import rows

FaultProbe = Callable[[str], None]

CHECKPOINT = (
    "SELECT version, upto_seq, state FROM projections WHERE conversation_id = ? AND name = ?"
)
CHECKPOINTS = (
    "SELECT name, version, upto_seq, state FROM projections WHERE conversation_id = ?"
)
INSERT_CHECKPOINT = (
    "INSERT INTO projections (conversation_id, name, version, upto_seq, state, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
ADVANCE_CHECKPOINT = (
    "UPDATE projections SET version = ?, upto_seq = ?, state = ?, updated_at = ?"
    " WHERE conversation_id = ? AND name = ? AND version = ? AND upto_seq = ?"
)
"""PRJ-013: the write names the row it read; a row that moved meanwhile is not touched."""

_SPILL_COLUMNS = "reference, media_type, byte_size, sha256, authorization, created_seq"
SPILL = (
    f"SELECT {_SPILL_COLUMNS}, data FROM spills WHERE conversation_id = ? AND reference = ?"
)
SPILLS = f"SELECT {_SPILL_COLUMNS} FROM spills WHERE conversation_id = ?"
SPILL_METADATA = (
    f"SELECT {_SPILL_COLUMNS} FROM spills WHERE conversation_id = ? AND reference = ?"
)
SPILLS_WITH_DATA = f"SELECT {_SPILL_COLUMNS}, data FROM spills WHERE conversation_id = ?"
SPILL_EXISTS = "SELECT 1 FROM spills WHERE conversation_id = ? AND reference = ?"
INSERT_SPILL = (
    "INSERT INTO spills (conversation_id, reference, media_type, byte_size, sha256,"
    " authorization, created_seq, expires_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)"
)
DELETE_SPILL = "DELETE FROM spills WHERE conversation_id = ? AND reference = ?"


# -- projections ------------------------------------------------------------------------------


def load_checkpoint(
    connection: sqlite3.Connection, conversation_id: str, name: str
) -> Checkpoint | None:
    """PRJ-010: the stored checkpoint, or None."""
    found = connection.execute(CHECKPOINT, (conversation_id, name)).fetchone()
    if found is None:
        return None
    version, upto_seq, state = found
    return Checkpoint(name, int(version), int(upto_seq), _json(state, "projections row"))


def load_checkpoints(connection: sqlite3.Connection, conversation_id: str) -> list[Checkpoint]:
    """PRJ-040: every checkpoint of one conversation."""
    found = connection.execute(CHECKPOINTS, (conversation_id,)).fetchall()
    return [
        Checkpoint(str(name), int(version), int(upto), _json(state, "projections row"))
        for name, version, upto, state in found
    ]


def catch_up(
    connection: sqlite3.Connection,
    conversation_id: str,
    definition: ProjectionDefinition,
    registry: KindRegistry,
    max_events: int,
    updated_at: str,
    probe: FaultProbe,
) -> Checkpoint:
    """SQL-060, PRJ-011 .. PRJ-013: read, fold and write inside this write transaction."""
    return catch_up_rows(
        definition, registry, max_events,
        load=lambda name: load_checkpoint(connection, conversation_id, name),
        head=lambda: rows.head_of(connection, conversation_id),
        read=lambda from_seq, limit: rows.read_window(connection, conversation_id, from_seq,
                                                      rows.MAX_SEQ, limit),
        write=lambda stored, result: write_checkpoint(connection, conversation_id, stored,
                                                      result, updated_at),
        probe=probe,
    )


def write_checkpoint(
    connection: sqlite3.Connection,
    conversation_id: str,
    stored: Checkpoint | None,
    result: Checkpoint,
    updated_at: str,
) -> None:
    """PRJ-013, SQL-061: write only over the row that was read, proven by reading it again."""
    state = codec.encode(result.state).decode("utf-8")
    if stored is None:
        connection.execute(
            INSERT_CHECKPOINT,
            (conversation_id, result.name, result.version, result.upto_seq, state, updated_at),
        )
    else:
        connection.execute(
            ADVANCE_CHECKPOINT,
            (result.version, result.upto_seq, state, updated_at, conversation_id, result.name,
             stored.version, stored.upto_seq),
        )
    after = connection.execute(CHECKPOINT, (conversation_id, result.name)).fetchone()
    if after is None or (int(after[0]), int(after[1])) != (result.version, result.upto_seq):
        raise ConflictError(
            f"checkpoint {result.name!r} of {conversation_id!r} moved during catch-up",
            requirement="PRJ-013",
        )


def write_checkpoints(
    connection: sqlite3.Connection,
    conversation_id: str,
    checkpoints: Sequence[Checkpoint],
    updated_at: str,
) -> None:
    """PRJ-044: the checked checkpoints of an import."""
    for checkpoint in checkpoints:
        write_checkpoint(connection, conversation_id, None, checkpoint, updated_at)


# -- spills -----------------------------------------------------------------------------------


def _metadata(row: tuple[object, ...]) -> SpillMetadata:
    reference, media_type, size, sha256, operation, seq = row[:6]
    return SpillMetadata(
        reference=str(reference),
        media_type=str(media_type),
        size=int(cast(int, size)),
        sha256=str(sha256),
        created_seq=int(cast(int, seq)),
        operation=_json(operation, "spills row"),
    )


def live_spill(
    connection: sqlite3.Connection, conversation_id: str, reference: str
) -> tuple[SpillMetadata, bytes] | None:
    """SPL-021: the live object of this conversation, looked up by its own key only."""
    found = connection.execute(SPILL, (conversation_id, reference)).fetchone()
    if found is None:
        return None
    return _metadata(found), _blob(found[6])


def live_spills(connection: sqlite3.Connection, conversation_id: str) -> list[SpillMetadata]:
    """SPL-040: the metadata of every live object of one conversation."""
    return [_metadata(row) for row in connection.execute(SPILLS, (conversation_id,)).fetchall()]


def live_objects(
    connection: sqlite3.Connection, conversation_id: str
) -> tuple[list[SpillMetadata], dict[str, bytes]]:
    """SPL-054: metadata and bytes of every live object, for a bundle."""
    found = connection.execute(SPILLS_WITH_DATA, (conversation_id,)).fetchall()
    return [_metadata(row) for row in found], {str(row[0]): _blob(row[6]) for row in found}


def _blob(value: object) -> bytes:
    """The bytes of a ``data`` cell; a cell of another type is corrupt (SPL-022)."""
    if not isinstance(value, bytes):
        raise IntegrityError("a spills row holds no BLOB in data", requirement="SPL-022")
    return value


def insert_spill(
    connection: sqlite3.Connection, conversation_id: str, metadata: SpillMetadata, data: bytes
) -> None:
    """SQL-062: one live object; the caller appended its event in this transaction."""
    connection.execute(
        INSERT_SPILL,
        (
            conversation_id,
            metadata.reference,
            metadata.media_type,
            metadata.size,
            metadata.sha256,
            codec.encode(metadata.operation).decode("utf-8"),
            metadata.created_seq,
            data,
        ),
    )


def refuse_live_reference(
    connection: sqlite3.Connection, conversation_id: str, reference: str
) -> None:
    """SPL-007: a reference is live at most once per conversation."""
    if connection.execute(SPILL_EXISTS, (conversation_id, reference)).fetchone() is not None:
        raise DuplicateError(
            f"spill {reference!r} is live in {conversation_id!r}",
            requirement="SPL-007",
            identity=reference,
        )


def delete_spill(
    connection: sqlite3.Connection, conversation_id: str, reference: str
) -> SpillMetadata:
    """SPL-030: remove the live object; ``not_found`` when there is none."""
    found = connection.execute(SPILL_METADATA, (conversation_id, reference)).fetchone()
    if found is None:
        raise not_live(conversation_id, reference)
    connection.execute(DELETE_SPILL, (conversation_id, reference))
    return _metadata(found)


def refuse_live_spill_events(
    connection: sqlite3.Connection, conversation_id: str, drafts: Sequence[EventDraft]
) -> None:
    """SPL-008 (``spills.operations``), asking this conversation's rows of ``spills``."""
    refuse_spill_events(
        lambda reference: connection.execute(
            SPILL_EXISTS, (conversation_id, reference)).fetchone() is not None,
        drafts,
    )


def _json(text: object, where: str) -> JsonValue:
    try:
        return cast(JsonValue, canonical.decode(str(text).encode("utf-8")))
    except Exception as error:
        raise IntegrityError(f"{where} holds no JSON: {error}", requirement="SQL-061") from error


# -- child links and schedules (SQL-068, SQL-069) ------------------------------------------------


def upsert_fact_row(connection: sqlite3.Connection, row: FactRow) -> None:
    """SQL-068, SQL-069: insert or replace one child link or schedule, in the caller's step."""
    record = codec.encode(row.to_json()).decode("utf-8")
    if isinstance(row, ChildLink):
        connection.execute(
            "INSERT INTO children (parent_conversation_id, child_conversation_id, state,"
            " seed_upto_seq, record) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (parent_conversation_id, child_conversation_id)"
            " DO UPDATE SET state = excluded.state, record = excluded.record",
            (row.parent_conversation_id, row.child_conversation_id, row.state,
             row.seed_upto_seq, record),
        )
        return
    connection.execute(
        "INSERT INTO schedules (conversation_id, schedule_id, next_at, state, record)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, schedule_id)"
        " DO UPDATE SET next_at = excluded.next_at, state = excluded.state,"
        " record = excluded.record",
        (row.conversation_id, row.schedule_id, row.next_at, row.state, record),
    )


def load_fact_rows(
    connection: sqlite3.Connection, table: str, conversation_id: str
) -> tuple[FactRow, ...]:
    """The child links of a parent (by child id) or the schedules of a conversation (by id)."""
    if table == "children":
        found = connection.execute(
            "SELECT record FROM children WHERE parent_conversation_id = ?"
            " ORDER BY child_conversation_id", (conversation_id,),
        ).fetchall()
        return tuple(_child_link(canonical.decode(str(item[0]).encode())) for item in found)
    found = connection.execute(
        "SELECT record FROM schedules WHERE conversation_id = ? ORDER BY schedule_id",
        (conversation_id,),
    ).fetchall()
    return tuple(_schedule(canonical.decode(str(item[0]).encode())) for item in found)


def _child_link(record: object) -> ChildLink:
    assert isinstance(record, dict)
    return ChildLink(
        record["parentConversationId"], record["childConversationId"], record["state"],
        record["seedUptoSeq"], record["budget"],
    )


def _schedule(record: object) -> ScheduleRow:
    assert isinstance(record, dict)
    return ScheduleRow(
        record["conversationId"], record["id"], record["kind"], record["nextAt"],
        record["state"], record["occurrence"],
    )
