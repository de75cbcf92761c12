"""The PostgreSQL gallery: broken PostgresStores (chapter ``postgres.md``, judged through LED/TRN).

Each class has exactly ONE bug that only a server database makes possible: a
head read without the row lock under READ COMMITTED, seqs drawn from a
sequence object (which a rolled-back transaction does not give back), eventIds
unique per conversation only (a partitioned or distributed schema's easy
mistake), an export whose events and companions are two READ COMMITTED
statements instead of one REPEATABLE READ snapshot, and a retry loop that runs
a write again after an ambiguous COMMIT (the answer lost, the write stored), a
search of the shared word index without the conversation's part of the query,
and a search by PostgreSQL's ``english`` text-search configuration (stems, stop
words, member names).
Chapter PGS is reference-only, so each is listed in :data:`BROKEN` with the
engine-neutral ids (LED, TRN, SRC) a conformance run must report failed for it.

Every store lives in a fresh schema of ``CONVLEDGER_PG_DSN`` (default
``postgresql://postgres@127.0.0.1:5432/postgres``), dropped when it closes
(:func:`factory_of`); a second process opens the same class from the store's
locator, so the classes live at module level. Importing this module needs no
psycopg; making a store does.

Bugs not here, and why: a statement timeout answered with another kind than
``unavailable``, and a handle that never reconnects after a lost connection
(PGS-013), cannot be provoked through the interface of an arbitrary store;
``tests/test_postgres_store.py`` judges the reference on both, and
``scripts/pg_faults.py`` restarts a server under writers.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from convledger import codec
from convledger.envelope import Envelope, EventDraft, check_identifier
from convledger.errors import ConflictError, DuplicateError, NotFoundError
from convledger.postgres import PostgresStore, factories, rows, runtime, transaction
from convledger.postgres import search as words
from convledger.postgres.errors import RetryableFailure, driver_boundary
from convledger.postgres.opening import rollback
from convledger.postgres.rows import key, text_of
from convledger.postgres.store import WRITE
from convledger.search.operations import Allowed, Hit, page_of
from galleries import BrokenStore, broken

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

_T = TypeVar("_T")


def factory_of(cls: type[PostgresStore]) -> Callable[[], PostgresStore]:
    """A maker of ``cls`` stores, each in a new schema dropped when the store closes."""

    def make() -> PostgresStore:
        dsn = factories.configured_dsn()
        schema = f"{factories.SCHEMA_PREFIX}{uuid.uuid4().hex}"
        factories.track(dsn, schema)  # dropped at exit, or by the guardian (PGS-051, PGS-069)
        try:
            return cls(dsn, schema=schema,
                       on_close=lambda: factories.drop_schema(dsn, schema))
        except BaseException:
            factories.drop_schema(dsn, schema)
            raise

    make.__qualname__ = f"factory_of({cls.__name__})"
    return make


def _placed(
    conversation_id: str, drafts: Sequence[EventDraft], seqs: Sequence[int]
) -> tuple[Envelope, ...]:
    return tuple(Envelope.from_draft(draft, conversation_id, seq)
                 for draft, seq in zip(drafts, seqs, strict=True))


def _refuse_stale(expected_head: int | None, head: int) -> None:
    if expected_head is not None and expected_head != head:
        raise ConflictError(f"expected head {expected_head}, the ledger is at {head}",
                            requirement="LED-005", actual=head)


class HeadReadOutsideTheLock(PostgresStore):
    """LED-017: reads the head under READ COMMITTED without the row lock, then inserts at head+1.

    Two writers of one conversation read the same head; the second one's
    insert meets the first one's seq in the primary key and is refused
    (``conflict``), so appends that should have queued fail instead.
    """

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        def body(connection: Connection) -> tuple[Envelope, ...]:
            runtime.refuse_purged(connection, conversation_id)
            head = rows.head_of(connection, conversation_id)  # no FOR UPDATE first
            _refuse_stale(expected_head, head)
            stored = rows.first_stored_event_id(connection, (d.event_id for d in drafts))
            if stored is not None:
                raise DuplicateError(f"eventId {stored!r} already exists",
                                     requirement="LED-003", identity=stored)
            seqs = range(head + 1, head + 1 + len(drafts))
            return rows.insert_placed(connection, _placed(conversation_id, drafts, seqs))

        return self._run("append", body)


class SeqFromASequence(PostgresStore):
    """LED-005: draws each seq from a per-conversation sequence object, before its checks.

    ``nextval`` is not transactional: an append refused after drawing its seqs
    (a stale expected head, an eventId already stored) leaves them drawn, and
    the next append of the conversation lands after a gap.
    """

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        name = "seq_" + hashlib.sha256(key(conversation_id)).hexdigest()[:40]

        def body(connection: Connection) -> tuple[Envelope, ...]:
            transaction.lock(connection, (conversation_id,))
            runtime.refuse_purged(connection, conversation_id)
            head = rows.head_of(connection, conversation_id)
            connection.execute(f"CREATE SEQUENCE IF NOT EXISTS {name} START {head + 1}")
            seqs = [int(connection.execute("SELECT nextval(%s)", (name,)).fetchone()[0])
                    for _ in drafts]
            _refuse_stale(expected_head, head)
            stored = rows.first_stored_event_id(connection, (d.event_id for d in drafts))
            if stored is not None:
                raise DuplicateError(f"eventId {stored!r} already exists",
                                     requirement="LED-003", identity=stored)
            return rows.insert_placed(connection, _placed(conversation_id, drafts, seqs))

        return self._run("append", body)


FIND_IN_CONVERSATION = (
    "SELECT event_id FROM events WHERE conversation_id = %s AND event_id = ANY(%s) LIMIT 1"
)
"""The eventId lookup of :class:`EventIdUniquePerConversation`: one partition only."""


class EventIdUniquePerConversation(PostgresStore):
    """LED-003: eventIds are unique per conversation only, as a table partitioned by it makes them.

    A new schema's ``events_event_id_key`` covers ``(conversation_id,
    event_id)`` (the unique index a partitioned or distributed table allows),
    and an append looks for its eventIds in its own conversation only.
    """

    def __init__(self, dsn: str, **options: Any) -> None:
        super().__init__(dsn, **options)
        if self.outcome == "created":
            with self._gate("partition") as connection, driver_boundary("partition"):
                connection.execute("ALTER TABLE events DROP CONSTRAINT events_event_id_key")
                connection.execute("ALTER TABLE events ADD CONSTRAINT events_event_id_key"
                                   " UNIQUE (conversation_id, event_id)")

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        def body(connection: Connection) -> tuple[Envelope, ...]:
            transaction.lock(connection, (conversation_id,))
            runtime.refuse_purged(connection, conversation_id)
            head = rows.head_of(connection, conversation_id)
            _refuse_stale(expected_head, head)
            wanted = [key(d.event_id) for d in drafts]
            found = connection.execute(FIND_IN_CONVERSATION,
                                       (key(conversation_id), wanted)).fetchone()
            if found is not None:
                stored = rows.text_of(found[0])
                raise DuplicateError(f"eventId {stored!r} already exists",
                                     requirement="LED-003", identity=stored)
            seqs = range(head + 1, head + 1 + len(drafts))
            return rows.insert_placed(connection, _placed(conversation_id, drafts, seqs))

        return self._run("append", body)


class ExportOutsideASnapshot(PostgresStore):
    """TRN-107: an export reads its events, then its runtime companion, under READ COMMITTED.

    Each statement sees the commits made before it began, so a transition
    committed between the two puts a run in the companion whose events the
    archive lacks.
    """

    def export_conversation(self, conversation_id: str) -> bytes:
        check_identifier(conversation_id, "conversationId", "ENV-005")
        from convledger.archive import archive_of, encode_archive

        def body(connection: Connection) -> bytes:
            events = [rows.envelope_of(row) for row in
                      connection.execute(rows.EXPORT_EVENTS, (key(conversation_id),))]
            if not events:
                raise NotFoundError(f"conversation {conversation_id!r} has no events",
                                    requirement="ARC-005")
            companions = transaction.companions_of_conversation(connection, conversation_id)
            return encode_archive(archive_of(conversation_id, events, companions))

        return self._run("export", body)  # a READ COMMITTED write transaction, not a snapshot


class RetriesAnAmbiguousCommit(PostgresStore):
    """LED-004: runs a write again when the answer to its COMMIT was lost, though it committed.

    PGS-013 asks ``unavailable`` for a connection lost during a call (the
    caller, not the store, decides whether the write happened). This store
    treats a lost COMMIT answer as retryable and runs the whole transaction
    again; the second run meets its own eventIds and answers ``duplicate`` for
    an append that was stored. The lost answer is played by the store itself:
    every third write transaction closes its connection right after COMMIT, as
    a server restart or a network cut at that moment would.
    """

    AMBIGUOUS_EVERY = 3

    def __init__(self, dsn: str, **options: Any) -> None:
        super().__init__(dsn, **options)
        self._writes = itertools.count(1)

    def _run(
        self, operation: str, body: Callable[[Connection], _T], *, write: bool = True
    ) -> _T:
        if not write:
            return super()._run(operation, body, write=write)
        for _ in range(5):
            with self._gate(operation) as connection:
                try:
                    with driver_boundary(operation):
                        connection.execute(WRITE)
                        try:
                            result = body(connection)
                            connection.execute("COMMIT")
                        except BaseException:
                            rollback(connection)
                            raise
                        if next(self._writes) % self.AMBIGUOUS_EVERY == 0:
                            connection.close()  # the COMMIT's answer "never arrived"
                            raise RetryableFailure(ConnectionError("lost at COMMIT"),
                                                   operation)
                    return result
                except RetryableFailure:
                    continue  # the bug: run the committed transaction again
        raise ConflictError(f"{operation}: retries spent", requirement="PGS-012")


class SearchesTheSharedIndexUnscoped(PostgresStore):
    """SRC-001: a conversation's hits read from the shared ``search_words`` index by the words
    alone, without its scope lexeme or its conversation id.

    Every conversation's words live in one GIN-indexed table; this store forgets the
    conversation's part of the query, so it takes the newest seqs that match in ANY
    conversation and then fetches this conversation's events at those seqs: events
    without the words, or hits missing where another conversation's newer seqs crowd
    the page.
    """

    def _search(self, requester: str, query_words: tuple[str, ...],
                scope: tuple[str, ...] | None, limit: int, allowed: Allowed) -> list[Hit]:
        def body(connection: Connection) -> list[Hit]:
            def hits_of(conversation_id: str, n: int) -> list[Hit]:
                seqs = [int(row[0]) for row in connection.execute(
                    "SELECT seq FROM search_words WHERE words @@ %(query)s::tsquery"
                    " ORDER BY seq DESC LIMIT %(limit)s",
                    {"query": words.tsquery_of(query_words), "limit": n})]
                return _hits(connection, conversation_id, seqs, query_words)

            return page_of(hits_of, requester,
                           words.conversations_with_hits(connection, query_words)
                           if scope is None else scope, limit, allowed)

        return self._run("search", body, write=False)


class SearchesWithTheEnglishConfiguration(PostgresStore):
    """SRC-025: searches PostgreSQL's own way, ``to_tsvector('english', payload) @@
    plainto_tsquery('english', query)`` over the conversation's events.

    The configuration stems words ("running" is found by "run", which it does not
    contain), drops stop words ("the" finds nothing), and reads member names as text:
    the hits are not the events whose text contains every word.
    """

    def _search(self, requester: str, query_words: tuple[str, ...],
                scope: tuple[str, ...] | None, limit: int, allowed: Allowed) -> list[Hit]:
        def body(connection: Connection) -> list[Hit]:
            def hits_of(conversation_id: str, n: int) -> list[Hit]:
                seqs = [int(row[0]) for row in connection.execute(
                    "SELECT seq FROM events WHERE conversation_id = %s"
                    " AND to_tsvector('english', payload) @@ plainto_tsquery('english', %s)"
                    " ORDER BY seq DESC LIMIT %s",
                    (key(conversation_id), " ".join(query_words), n))]
                return _hits(connection, conversation_id, seqs, query_words)

            others = (text_of(row[0]) for row in connection.execute(
                "SELECT DISTINCT conversation_id FROM events WHERE to_tsvector('english', payload)"
                " @@ plainto_tsquery('english', %s) ORDER BY conversation_id",
                (" ".join(query_words),)))
            return page_of(hits_of, requester, others if scope is None else scope, limit,
                           allowed)

        return self._run("search", body, write=False)


def _hits(connection: Connection, conversation_id: str, seqs: list[int],
          query_words: tuple[str, ...]) -> list[Hit]:
    """The events at ``seqs`` of one conversation as hits, as the reference builds them."""
    if not seqs:
        return []
    found = connection.execute(words.HIT_EVENTS, (key(conversation_id), seqs)).fetchall()
    return [Hit(conversation_id, int(seq), str(at),
                words._snippet(codec.decode_stored(str(payload)), query_words))
            for seq, at, payload in found]


BROKEN: tuple[BrokenStore, ...] = tuple(
    broken("postgres", cls, *catches, factory=factory_of(cls))
    for cls, catches in (
        (HeadReadOutsideTheLock, ("LED-017",)),
        (SeqFromASequence, ("LED-005", "LED-004")),
        (EventIdUniquePerConversation, ("LED-003",)),
        (ExportOutsideASnapshot, ("TRN-107",)),
        (RetriesAnAmbiguousCommit, ("LED-004",)),
        (SearchesTheSharedIndexUnscoped, ("SRC-001",)),
        (SearchesWithTheEnglishConfiguration, ("SRC-025",)),
    )
)
"""Every broken PostgreSQL store, with the ids that must be among the failed ones."""
