"""The statements one write transaction of the PostgreSQL store runs (PGS-010, PGS-011, PGS-045).

Every function here runs inside a transaction the store began (``store.py``)
and commits or rolls back. :func:`lock` is the first statement of every write
to a conversation: it makes sure the conversation's row of ``conversations``
exists and locks it ``FOR UPDATE`` until the transaction ends, so writers of
one conversation, from any handle, process or host, run one after the other,
and each reads the head only once it holds the lock (PGS-010). Writers of
different conversations never wait for each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from convledger import canonical, codec
from convledger.batch import detached_payloads
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, DuplicateError, PurgedError
from convledger.host.rows import ChildLink, FactRow, ScheduleRow
from convledger.postgres import companions as side
from convledger.postgres import rows, runtime_view
from convledger.postgres import search as words
from convledger.postgres.errors import StoreConflictError
from convledger.postgres.rows import key
from convledger.runtime.companion import companions_for
from convledger.spills.objects import SpillMetadata
from convledger.store_base import companions_of

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

LOCK_ATTEMPTS = 3
"""How often :func:`lock` recreates a row that a purge deleted while it waited."""


def lock(connection: Connection, conversation_ids: Iterable[str]) -> None:
    """PGS-010: lock the row of each conversation, in the byte order of their ids.

    Every transaction that locks several conversations (a fact row's parent and
    child) takes them in one global order, so two of them cannot deadlock on
    each other (PGS-012). A purge that deleted the row while this one waited
    makes the lock statement find nothing; the row is made again.
    """
    for conversation_id in sorted(set(conversation_ids), key=key):
        for _ in range(LOCK_ATTEMPTS):
            if rows.lock_conversation(connection, conversation_id):
                break
        else:
            raise StoreConflictError(
                f"the row of {conversation_id!r} kept vanishing under concurrent purges",
                requirement="PGS-010",
            )


def append_checked(
    connection: Connection,
    conversation_id: str,
    drafts: tuple[EventDraft, ...],
    expected_head: int | None,
) -> tuple[Envelope, ...]:
    """LED-002 .. LED-005 inside a write transaction that holds the conversation's lock.

    The tombstone (PGS-041), the head and the eventIds already stored are read
    in one statement after the lock was granted, so the head is the one every
    earlier writer committed (PGS-010); they are refused in that order.
    Drafts from ``validated_batch`` carry their payloads' canonical text, which is written
    as it is (``batch.detached_payloads``, ``rows.insert_placed``).
    """
    purged, head, stored = rows.append_state(
        connection, conversation_id, (draft.event_id for draft in drafts)
    )
    if purged:
        raise PurgedError.of(conversation_id)  # TRN-092: the tombstone just read
    if expected_head is not None and expected_head != head:
        raise ConflictError(
            f"expected head {expected_head}, the ledger is at {head}",
            requirement="LED-005",
            actual=head,  # ERR-005: the head the store actually holds
        )
    if stored is not None:
        raise DuplicateError(
            f"eventId {stored!r} already exists", requirement="LED-003", identity=stored
        )
    side.refuse_live_spill_events(connection, conversation_id, drafts)
    # LED-002: seqs are head+1.., in the order of the drafts. A concurrent
    # append of the same eventId to another conversation is refused by the
    # unique constraint events_event_id_key (PGS-004), translated to duplicate.
    placed = tuple(
        Envelope.from_draft(draft, conversation_id, head + offset)
        for offset, draft in enumerate(drafts, start=1)
    )
    return insert_events(connection, placed, detached_payloads(drafts))


INSERT_EVENTS_AND_WORDS = (
    f"WITH written AS ({rows.INSERT_EVENTS}) {words.INSERT_WORDS}"
)
"""PGS-062: the events of one conversation and their rows of ``search_words`` in one statement
(``rows.INSERT_EVENTS`` as a data-modifying ``WITH``, then ``search.INSERT_WORDS``): one
round trip, and the constraints of both tables refuse it whole."""


def insert_events(
    connection: Connection, envelopes: Sequence[Envelope], payloads: Sequence[str] | None = None
) -> tuple[Envelope, ...]:
    """Every writer of ``events``: the rows and their search words together (PGS-062).

    The events of one conversation (every append, transition and import) take one
    statement, :data:`INSERT_EVENTS_AND_WORDS`; a write to several conversations (fact rows)
    inserts the events, then each conversation's words.
    """
    columns, stored = rows.placed_columns(envelopes, payloads)
    if not stored:
        return stored
    grouped = words.words_parameters(stored)
    if len(grouped) == 1:
        connection.execute(INSERT_EVENTS_AND_WORDS, (*columns, *grouped[0]))
        return stored
    connection.execute(rows.INSERT_EVENTS, columns)
    for parameters in grouped:
        connection.execute(words.INSERT_WORDS, parameters)
    return stored


def append_event(
    connection: Connection, conversation_id: str, drafts: tuple[EventDraft, ...]
) -> tuple[Envelope, ...]:
    """A transition's event, by the append path: seq head+1, eventId unique (TRN-008)."""
    return append_checked(connection, conversation_id, drafts, None)


def companions_of_conversation(
    connection: Connection,
    conversation_id: str,
    spills: Sequence[SpillMetadata] | None = None,
) -> dict[str, JsonValue]:
    """PGS-031: every companion of a conversation, in the caller's snapshot.

    ``spills`` passes the spill metadata a bundle export has already read with
    the objects' bytes.
    """
    return companions_of(
        companions_for(runtime_view.load_state(connection, conversation_id)),
        side.load_checkpoints(connection, conversation_id),
        side.live_spills(connection, conversation_id) if spills is None else spills,
    )


# -- child links and schedules (PGS-045) ----------------------------------------------------------

UPSERT_CHILD = (
    "INSERT INTO children (parent_conversation_id, child_conversation_id, state,"
    " seed_upto_seq, record) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (parent_conversation_id, child_conversation_id)"
    " DO UPDATE SET state = excluded.state, record = excluded.record"
)
UPSERT_SCHEDULE = (
    "INSERT INTO schedules (conversation_id, schedule_id, next_at, state, record)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (conversation_id, schedule_id)"
    " DO UPDATE SET next_at = excluded.next_at, state = excluded.state,"
    " record = excluded.record"
)
CHILD_LINKS = (
    "SELECT record FROM children WHERE parent_conversation_id = %s"
    " ORDER BY child_conversation_id"
)
SCHEDULES = "SELECT record FROM schedules WHERE conversation_id = %s ORDER BY schedule_id"

FACT_READS = {"child_links": CHILD_LINKS, "schedules": SCHEDULES}
"""The reads of the rows kept beside the ledger (PGS-030: primary-key searches)."""


def fact_row_conversations(row: FactRow) -> tuple[str, ...]:
    """The conversations whose rows a fact row's write locks (PGS-045)."""
    if isinstance(row, ChildLink):
        return row.parent_conversation_id, row.child_conversation_id
    return (row.conversation_id,)


def upsert_fact_row(connection: Connection, row: FactRow) -> None:
    """PGS-045: insert or replace one child link or schedule, in the caller's transaction."""
    record = codec.encode(row.to_json()).decode("utf-8")
    if isinstance(row, ChildLink):
        connection.execute(
            UPSERT_CHILD,
            (key(row.parent_conversation_id), key(row.child_conversation_id), row.state,
             row.seed_upto_seq, record),
        )
        return
    connection.execute(
        UPSERT_SCHEDULE,
        (key(row.conversation_id), key(row.schedule_id), row.next_at, row.state, record),
    )


def load_fact_rows(connection: Connection, table: str, conversation_id: str) -> tuple[FactRow, ...]:
    """The child links of a parent (by child id) or the schedules of a conversation (by id)."""
    if table == "children":
        found = connection.execute(CHILD_LINKS, (key(conversation_id),)).fetchall()
        return tuple(_child_link(canonical.decode(str(item[0]).encode())) for item in found)
    found = connection.execute(SCHEDULES, (key(conversation_id),)).fetchall()
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
