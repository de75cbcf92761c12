"""Projection checkpoints and spill objects in PostgreSQL (PGS-061, PGS-067).

Every function here runs on the connection of a transaction its caller
(``companion_store.py``) began and commits or rolls back, after the
conversation's row lock of PGS-010 when it writes. The tables are those of
schema version 2: ``projections`` keeps one row per (conversation, name) with
the state as canonical JSON; ``spills`` keeps one row per live object, its
creating operation (``{operationId, authorization}``) as canonical JSON in
``operation`` (``authorization`` is a reserved word) and its bytes in ``data`` (``bytea``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from convledger import canonical, codec
from convledger.archive import Archive
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.errors import ConflictError, DuplicateError, IntegrityError
from convledger.kinds import KindRegistry
from convledger.postgres import rows
from convledger.postgres.rows import key, text_of
from convledger.projections.companion import COMPANION as PROJECTIONS
from convledger.projections.companion import parse_checkpoints
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.operations import catch_up_rows
from convledger.spills.companion import COMPANION as SPILLS
from convledger.spills.companion import parse_spills
from convledger.spills.objects import SpillMetadata
from convledger.spills.operations import not_live
from convledger.spills.operations import refuse_live_spill_events as refuse_spill_events

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

FaultProbe = Callable[[str], None]

CHECKPOINT = (
    "SELECT version, upto_seq, state FROM projections WHERE conversation_id = %s AND name = %s"
)
CHECKPOINTS = (
    "SELECT name, version, upto_seq, state FROM projections WHERE conversation_id = %s"
    " ORDER BY name"
)
INSERT_CHECKPOINT = (
    "INSERT INTO projections (conversation_id, name, version, upto_seq, state, updated_at)"
    " VALUES (%s, %s, %s, %s, %s, %s)"
)
ADVANCE_CHECKPOINT = (
    "UPDATE projections SET version = %s, upto_seq = %s, state = %s, updated_at = %s"
    " WHERE conversation_id = %s AND name = %s AND version = %s AND upto_seq = %s"
)
"""PRJ-013: the write names the row it read; a row that moved meanwhile is not touched."""

_SPILL_COLUMNS = "reference, media_type, byte_size, sha256, operation, created_seq"
SPILL = (
    f"SELECT {_SPILL_COLUMNS}, data FROM spills WHERE conversation_id = %s AND reference = %s"
)
SPILLS_OF = f"SELECT {_SPILL_COLUMNS} FROM spills WHERE conversation_id = %s ORDER BY reference"
SPILLS_WITH_DATA = (
    f"SELECT {_SPILL_COLUMNS}, data FROM spills WHERE conversation_id = %s ORDER BY reference"
)
SPILL_EXISTS = "SELECT 1 FROM spills WHERE conversation_id = %s AND reference = %s"
INSERT_SPILL = (
    "INSERT INTO spills (conversation_id, reference, media_type, byte_size, sha256,"
    " operation, created_seq, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
DELETE_SPILL = (
    f"DELETE FROM spills WHERE conversation_id = %s AND reference = %s RETURNING {_SPILL_COLUMNS}"
)

COMPANION_READS = {
    "checkpoint": CHECKPOINT,
    "checkpoints": CHECKPOINTS,
    "spill": SPILL,
    "spills": SPILLS_OF,
    "spill_exists": SPILL_EXISTS,
}
"""The reads of the companion tables, by purpose (PGS-030: primary-key searches)."""


# -- projections ------------------------------------------------------------------------------


def _checkpoint(name: object, version: object, upto: object, state: object) -> Checkpoint:
    return Checkpoint(text_of(name), int(cast(int, version)), int(cast(int, upto)),
                      _json(state, "projections row"))


def load_checkpoint(connection: Connection, conversation_id: str, name: str) -> Checkpoint | None:
    """PRJ-010: the stored checkpoint, or None."""
    found = connection.execute(CHECKPOINT, (key(conversation_id), key(name))).fetchone()
    return None if found is None else _checkpoint(key(name), *found)


def load_checkpoints(connection: Connection, conversation_id: str) -> list[Checkpoint]:
    """PRJ-040: every checkpoint of one conversation."""
    found = connection.execute(CHECKPOINTS, (key(conversation_id),)).fetchall()
    return [_checkpoint(*row) for row in found]


def catch_up(
    connection: Connection,
    conversation_id: str,
    definition: ProjectionDefinition,
    registry: KindRegistry,
    max_events: int,
    updated_at: str,
    probe: FaultProbe,
) -> Checkpoint:
    """PGS-061, PRJ-011 .. PRJ-013: read, fold and write inside this write transaction."""
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
    connection: Connection,
    conversation_id: str,
    stored: Checkpoint | None,
    result: Checkpoint,
    updated_at: str,
) -> None:
    """PRJ-013: write only over the row that was read, proven by reading it again."""
    state = codec.encode(result.state).decode("utf-8")
    cid, name = key(conversation_id), key(result.name)
    if stored is None:
        connection.execute(INSERT_CHECKPOINT,
                           (cid, name, result.version, result.upto_seq, state, updated_at))
    else:
        connection.execute(
            ADVANCE_CHECKPOINT,
            (result.version, result.upto_seq, state, updated_at, cid, name,
             stored.version, stored.upto_seq),
        )
    after = connection.execute(CHECKPOINT, (cid, name)).fetchone()
    if after is None or (int(after[0]), int(after[1])) != (result.version, result.upto_seq):
        raise ConflictError(
            f"checkpoint {result.name!r} of {conversation_id!r} moved during catch-up",
            requirement="PRJ-013",
        )


# -- spills -----------------------------------------------------------------------------------


def _metadata(row: Sequence[Any]) -> SpillMetadata:
    reference, media_type, size, sha256, operation, seq = row[:6]
    return SpillMetadata(
        reference=text_of(reference),
        media_type=str(media_type),
        size=int(size),
        sha256=str(sha256),
        created_seq=int(seq),
        operation=_json(operation, "spills row"),
    )


def _bytes(value: object) -> bytes:
    """The bytes of a ``data`` cell; a cell of another type is corrupt (SPL-022)."""
    if isinstance(value, memoryview):
        value = bytes(value)
    if not isinstance(value, bytes):
        raise IntegrityError("a spills row holds no bytea in data", requirement="SPL-022")
    return value


def live_spill(
    connection: Connection, conversation_id: str, reference: str
) -> tuple[SpillMetadata, bytes] | None:
    """SPL-021: the live object of this conversation, looked up by its own key only."""
    found = connection.execute(SPILL, (key(conversation_id), key(reference))).fetchone()
    return None if found is None else (_metadata(found), _bytes(found[6]))


def live_spills(connection: Connection, conversation_id: str) -> list[SpillMetadata]:
    """SPL-040: the metadata of every live object of one conversation."""
    return [_metadata(row) for row in connection.execute(SPILLS_OF, (key(conversation_id),))]


def live_objects(
    connection: Connection, conversation_id: str
) -> tuple[list[SpillMetadata], dict[str, bytes]]:
    """SPL-054: metadata and bytes of every live object, for a bundle."""
    found = connection.execute(SPILLS_WITH_DATA, (key(conversation_id),)).fetchall()
    return [_metadata(row) for row in found], {text_of(row[0]): _bytes(row[6]) for row in found}


def insert_spill(
    connection: Connection, conversation_id: str, metadata: SpillMetadata, data: bytes
) -> None:
    """PGS-067: one live object; the caller appended its event in this transaction."""
    connection.execute(
        INSERT_SPILL,
        (key(conversation_id), key(metadata.reference), metadata.media_type, metadata.size,
         metadata.sha256, codec.encode(metadata.operation).decode("utf-8"),
         metadata.created_seq, data),
    )


def is_live(connection: Connection, conversation_id: str, reference: str) -> bool:
    """Whether ``reference`` names a live object of the conversation."""
    found = connection.execute(SPILL_EXISTS, (key(conversation_id), key(reference))).fetchone()
    return found is not None


def refuse_live_reference(connection: Connection, conversation_id: str, reference: str) -> None:
    """SPL-007: a reference is live at most once per conversation."""
    if is_live(connection, conversation_id, reference):
        raise DuplicateError(f"spill {reference!r} is live in {conversation_id!r}",
                             requirement="SPL-007", identity=reference)


def delete_spill(connection: Connection, conversation_id: str, reference: str) -> SpillMetadata:
    """SPL-030: remove the live object; ``not_found`` when there is none."""
    found = connection.execute(DELETE_SPILL, (key(conversation_id), key(reference))).fetchone()
    if found is None:
        raise not_live(conversation_id, reference)
    return _metadata(found)


def refuse_live_spill_events(
    connection: Connection, conversation_id: str, drafts: Sequence[EventDraft]
) -> None:
    """SPL-008 (``spills.operations``), asking this conversation's rows of ``spills``."""
    refuse_spill_events(lambda reference: is_live(connection, conversation_id, reference), drafts)


def import_companions(connection: Connection, archive: Archive, now: str) -> None:
    """PRJ-044, SPL-055: the checked checkpoints and spill objects, in the import's transaction."""
    cid = archive.conversation_id
    if PROJECTIONS in archive.companions:
        for checkpoint in parse_checkpoints(archive.companions[PROJECTIONS]):
            write_checkpoint(connection, cid, None, checkpoint, now)
    if SPILLS in archive.companions:
        for metadata in parse_spills(archive.companions[SPILLS]):
            insert_spill(connection, cid, metadata, archive.objects[metadata.reference])


def _json(text: object, where: str) -> JsonValue:
    try:
        return cast(JsonValue, canonical.decode(str(text).encode("utf-8")))
    except Exception as error:
        raise IntegrityError(f"{where} holds no JSON: {error}", requirement="PGS-061") from error
