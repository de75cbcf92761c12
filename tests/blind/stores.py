"""Thirty broken stores, written blind for issue 20's second measurement.

Each class is a :class:`~convledger.memory.MemoryStore` or
:class:`~convledger.sqlite.SqliteStore` with exactly ONE realistic bug, the
kind a real implementer might make. They were written from ``spec/``,
``README.md`` and the reference store sources only, without reading the
conformance suite or the test galleries, and committed before anything was run
against them. Every class is a zero-argument factory of a fresh store, so the
suite takes it as ``--store tests.blind.stores:ClassName``.

Each docstring says the bug and the spec id it violates. ``BLIND_STORES``
lists them in order; ``HARDER_STORES`` are twelve more, written (still blind)
after the thirty were all killed at smoke. Nothing in the reference or the
suite uses them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from convledger import canonical, codec, limits
from convledger.archive import Archive, archive_of, encode_archive
from convledger.batch import handed_out, validated_batch
from convledger.envelope import Envelope, EventDraft, check_identifier, copied
from convledger.errors import (
    ConflictError,
    DuplicateError,
    InvalidInputError,
    NotFoundError,
    PurgedError,
)
from convledger.memory import MemoryStore, _stored
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import advance
from convledger.projections.operations import should_store
from convledger.runtime.companion import runtime_of
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.search.operations import Allowed, Hit, page_of
from convledger.search.query import fts_string, scope_token
from convledger.spills.objects import SpillMetadata, digest
from convledger.spills.operations import refuse_live_spill_events
from convledger.sqlite import SqliteStore, rows
from convledger.sqlite import companions as side
from convledger.sqlite import search as fts
from convledger.sqlite.transaction import companions_of_conversation
from convledger.store_interface import DEFAULT_READ_LIMIT, MAX_READ_LIMIT, ImportReport, Page

# ======================================== ledger (LED)


class ReadNextSeqOnFullPage(MemoryStore):
    """Bug: a full page always gets ``nextSeq``, even when no event follows it.

    The implementer derived the cursor from "the page is full" instead of
    fetching one more event. Violates LED-009 (``nextSeq`` exactly when one more
    event exists inside the window).
    """

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = DEFAULT_READ_LIMIT,
    ) -> Page:
        page = super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)
        if page.next_seq is None and len(page.items) == limit:
            return Page(page.items, next_seq=page.items[-1].seq + 1)
        return page


class ReadToSeqExclusive(MemoryStore):
    """Bug: ``toSeq`` is treated as exclusive (a Python slice end).

    Violates LED-007 (``toSeq`` is inclusive) and LED-008.
    """

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        exclusive = None if to_seq is None else to_seq - 1
        if exclusive is not None and exclusive < from_seq:
            return []
        return super()._read(conversation_id, from_seq, exclusive, limit)


class ExpectedHeadZeroIgnored(MemoryStore):
    """Bug: ``if expected_head:`` treats an expected head of 0 as "no expectation".

    An append with ``expected_head=0`` onto a conversation that has events is
    stored instead of refused. Violates LED-005.
    """

    def _placed(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        return super()._placed(conversation_id, drafts, expected_head or None)


class DuplicateCheckedPerConversation(MemoryStore):
    """Bug: eventId uniqueness is checked inside the target conversation only.

    The implementer indexed eventIds per conversation, so the same eventId is
    accepted in another conversation. Violates LED-003 (unique across all
    conversations of a store).
    """

    def _placed(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        self._refuse_purged(conversation_id)
        ledger = self._ledgers.get(conversation_id, [])
        head = len(ledger)
        if expected_head is not None and expected_head != head:
            raise ConflictError(
                f"expected head {expected_head}, the ledger is at {head}",
                requirement="LED-005",
                actual=head,
            )
        own = {envelope.event_id for envelope in ledger}
        for draft in drafts:
            if draft.event_id in own:
                raise DuplicateError(
                    f"eventId {draft.event_id!r} already exists",
                    requirement="LED-003",
                    identity=draft.event_id,
                )
        refuse_live_spill_events(self._spills.get(conversation_id, {}).__contains__, drafts)
        return tuple(
            Envelope.from_draft(draft, conversation_id, head + offset)
            for offset, draft in enumerate(drafts, start=1)
        )


class PartialBatchOnStoredDuplicate(MemoryStore):
    """Bug: when a draft's eventId is already stored, the drafts before it are kept.

    The implementer inserted row by row and raised on the first duplicate
    without rolling back. Violates LED-004 (all or nothing) and ERR-004.
    """

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._lock:
            try:
                placed = self._placed(conversation_id, drafts, expected_head)
            except DuplicateError:
                good: list[EventDraft] = []
                for draft in drafts:
                    if draft.event_id in self._event_ids:
                        break
                    good.append(draft)
                if good:
                    self._commit(
                        conversation_id, self._placed(conversation_id, tuple(good), expected_head)
                    )
                raise
            self._commit(conversation_id, placed)
        return handed_out(placed, drafts)


class ReadSharesStoredPayloads(MemoryStore):
    """Bug: a read hands out the stored envelopes themselves, not copies.

    A caller that mutates the payload dict of a read envelope changes the
    ledger. Violates LED-014.
    """

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        with self._lock:
            ledger = self._ledgers.get(conversation_id, [])
            stop = len(ledger) if to_seq is None else min(len(ledger), to_seq)
            return ledger[from_seq - 1 : min(stop, from_seq - 1 + limit)]


# ======================================== envelope (ENV)


class OccurredAtNormalizedToZ(MemoryStore):
    """Bug: the store normalizes an ``occurredAt`` offset of ``+00:00`` to ``Z``.

    Violates ENV-008 (kept and re-emitted as the exact string received).
    """

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        normalized = tuple(
            attrs.evolve(draft, occurred_at=draft.occurred_at[:-6] + "Z")
            if draft.occurred_at.endswith("+00:00")
            else draft
            for draft in drafts
        )
        return super()._append(conversation_id, normalized, expected_head)


# ======================================== canonical (CAN)


class JsonDumpsExport(MemoryStore):
    """Bug: the archive is written with ``json.dumps(sort_keys=True)`` instead of RFC 8785.

    Python sorts keys by code point, not UTF-16 code units, and writes numbers
    as ``repr`` does (``1e-07``, ``1e+16``). Violates CAN-001, CAN-002 and
    CAN-005, through ARC-001 and ARC-004 (an export is canonical JSON).
    """

    def export_conversation(self, conversation_id: str) -> bytes:
        value = json.loads(super().export_conversation(conversation_id))
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")


# ======================================== archives (ARC)


class ImportIntoOccupiedConversation(MemoryStore):
    """Bug: import does not check that the target conversation is empty; it replaces it.

    Violates ARC-009 (``conflict`` when the target conversation has events).
    """

    def _import(self, archive: Archive) -> None:
        with self._lock:
            self._refuse_purged(archive.conversation_id)
            for envelope in archive.events:
                if envelope.event_id in self._event_ids:
                    raise DuplicateError(
                        f"eventId {envelope.event_id!r} already exists in this store",
                        requirement="ARC-010",
                        identity=envelope.event_id,
                    )
            state = runtime_of(archive.conversation_id, archive.companions)
            self._ledgers[archive.conversation_id] = list(archive.events)
            self._event_ids.update(envelope.event_id for envelope in archive.events)
            if state is not None:
                self._runtime[archive.conversation_id] = state
            self._import_companions(archive)


class ImportCanonicalizesFirst(MemoryStore):
    """Bug: import is "liberal": it parses any JSON text and canonicalizes it before checking.

    Whitespace, another key order or escapes are accepted (and duplicate keys
    silently keep the last value). Violates ARC-003 (input that is not exactly
    the canonical JSON of its decoded value is refused with ``invalid_input``).
    """

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        if isinstance(archive, bytes):
            with contextlib.suppress(ValueError, TypeError):  # the reference refuses the rest
                archive = canonical.encode(json.loads(archive))
        return super().import_conversation(archive, projections=projections)


# ======================================== errors and precedence (ERR)


class ConflictBeforePurged(MemoryStore):
    """Bug: the expected head is compared before the tombstone is read.

    An append with a stale expected head to a purged conversation answers
    ``conflict`` instead of ``purged``. Violates ERR-010 (step 3 before step 4)
    and TRN-092.
    """

    def _placed(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        head = len(self._ledgers.get(conversation_id, []))
        if expected_head is not None and expected_head != head:
            raise ConflictError(
                f"expected head {expected_head}, the ledger is at {head}",
                requirement="LED-005",
                actual=head,
            )
        return super()._placed(conversation_id, drafts, expected_head)


class DuplicateBeforeConflict(MemoryStore):
    """Bug: stored eventIds are looked up before the expected head is compared.

    An append that is both stale and repeats a stored eventId answers
    ``duplicate`` instead of ``conflict``. Violates ERR-010 (step 4 before 5).
    """

    def _placed(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        self._refuse_purged(conversation_id)
        for draft in drafts:
            if draft.event_id in self._event_ids:
                raise DuplicateError(
                    f"eventId {draft.event_id!r} already exists",
                    requirement="LED-003",
                    identity=draft.event_id,
                )
        return super()._placed(conversation_id, drafts, expected_head)


class ConflictCarriesExpectedHead(MemoryStore):
    """Bug: the ``conflict`` of a stale expected head carries the caller's expected head.

    Violates ERR-005 (it carries the head seq the store actually holds) and LED-005.
    """

    def _placed(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        try:
            return super()._placed(conversation_id, drafts, expected_head)
        except ConflictError as error:
            raise ConflictError(
                error.message, requirement=error.requirement, actual=expected_head
            ) from None


# ======================================== limits (LIM and bounds)


class ReadLimitMaximumRefused(MemoryStore):
    """Bug: a read's ``limit`` is checked with ``limit < MAX`` instead of ``<=``.

    ``limit=10000`` is refused. Violates LED-010 (an integer from 1 to 10000).
    """

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = DEFAULT_READ_LIMIT,
    ) -> Page:
        if limit == MAX_READ_LIMIT:
            raise InvalidInputError(
                f"limit must be below {MAX_READ_LIMIT}", requirement="LED-010", field="limit"
            )
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


_LEAP_SECOND = re.compile(r"T\d\d:\d\d:60")


class LeapSecondRefused(MemoryStore):
    """Bug: ``occurredAt`` is validated with a date-time parser that rejects second 60.

    Violates LIM-009 (a leap second is accepted in any minute).
    """

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        for draft in drafts:
            if _LEAP_SECOND.search(draft.occurred_at):
                raise InvalidInputError(
                    "second must be in 0..59", requirement="ENV-008", field="occurredAt"
                )
        return super()._append(conversation_id, drafts, expected_head)


class HugeExpectedHeadIsConflict(MemoryStore):
    """Bug: an expected head beyond 2**53 - 1 is simply compared with the head.

    It answers ``conflict`` instead of ``invalid_input``. Violates LIM-007.
    """

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        huge = (
            isinstance(expected_head, int)
            and not isinstance(expected_head, bool)
            and expected_head > limits.MAX_INTEGER
        )
        if not huge:
            return super().append(conversation_id, drafts, expected_head=expected_head)
        validated_batch(self._registry, conversation_id, drafts, None)
        with self._lock:
            self._refuse_purged(conversation_id)
            head = len(self._ledgers.get(conversation_id, []))
        raise ConflictError(
            f"expected head {expected_head}, the ledger is at {head}",
            requirement="LED-005",
            actual=head,
        )


# ======================================== projections (PRJ)


class CatchUpStoresEmptyCheckpoint(MemoryStore):
    """Bug: every catch-up stores its result, also one that folded nothing.

    A conversation without events gets a checkpoint at ``uptoSeq`` 0.
    Violates PRJ-015 (a catch-up that folds nothing stores nothing).
    """

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        result = super()._catch_up(conversation_id, definition, max_events)
        with self._lock:
            if (conversation_id, definition.name) not in self._checkpoints:
                self._checkpoints[(conversation_id, definition.name)] = _stored(result)
        return result


class StatusHeadFromCheckpoint(MemoryStore):
    """Bug: ``projection_status`` reports the checkpoint's ``uptoSeq`` as the head.

    A lagging projection then looks current. Violates PRJ-014 (the head of the
    conversation, read with the checkpoint).
    """

    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]:
        stored, head = super()._projection_status(conversation_id, name)
        return stored, (head if stored is None else stored.upto_seq)


class NewVersionContinuesOldCheckpoint(MemoryStore):
    """Bug: a definition of a new version folds on from the stored checkpoint of the old one.

    Violates PRJ-020 (another version folds again from seq 1 and ``initial_state``).
    """

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        with self._lock:
            self._refuse_purged(conversation_id)
            ledger = self._ledgers.get(conversation_id, [])
            stored = self._checkpoint(conversation_id, definition.name)
            if stored is not None and stored.version != definition.version:
                stored = attrs.evolve(stored, version=definition.version)

            def read(from_seq: int, limit: int) -> Sequence[Envelope]:
                return [copied(e) for e in ledger[from_seq - 1 : from_seq - 1 + limit]]

            result = advance(definition, self._registry, stored, read, len(ledger), max_events)
            if should_store(stored, result):
                self._checkpoints[(conversation_id, definition.name)] = _stored(result)
                return self._checkpoint(conversation_id, definition.name) or result
            return result if stored is None else stored


# ======================================== spills (SPL)


class SpillTruthyAuthorization(MemoryStore):
    """Bug: ``get_spill`` grants on any truthy answer of the callback (``if authorize(...)``).

    A callback answering ``1`` or ``"yes"`` reads the bytes. Violates SPL-020
    (only exactly true grants).
    """

    def get_spill(
        self, conversation_id: str, reference: str, *, authorize: Callable[[Any], Any]
    ) -> bytes:
        if callable(authorize):
            callback = authorize

            def truthy(descriptor: Any) -> bool:
                return bool(callback(descriptor))

            return super().get_spill(conversation_id, reference, authorize=truthy)
        return super().get_spill(conversation_id, reference, authorize=authorize)


class SpillLookupIgnoresConversation(MemoryStore):
    """Bug: a spill is looked up by reference alone when the conversation has none.

    A reference live in another conversation is returned (after asking its
    callback). Violates SPL-021 (``not_found``, the same answer as for a
    reference that is live in another conversation).
    """

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        found = super()._get_spill(conversation_id, reference)
        if found is not None:
            return found
        with self._lock:
            for objects in self._spills.values():
                if reference in objects:
                    return objects[reference]
        return None


class PurgeKeepsSpillObjects(MemoryStore):
    """Bug: a purge forgets the spill objects of the conversation.

    ``get_spill`` still returns their bytes after the purge. Violates SPL-032
    and TRN-093.
    """

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            kept = self._spills.get(conversation_id)
        purged = super()._purge(conversation_id)
        if purged and kept:
            with self._lock:
                self._spills[conversation_id] = kept
        return purged


# ======================================== runtime and purge (TRN)


class PurgeIgnoresActiveRuns(MemoryStore):
    """Bug: a purge does not look for active runs first.

    Violates TRN-091 (refused with ``conflict`` while the conversation has an
    active run).
    """

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            if conversation_id in self._purged:
                return False
            for envelope in self._ledgers.pop(conversation_id, []):
                self._event_ids.discard(envelope.event_id)
            self._runtime.pop(conversation_id, None)
            for key in [key for key in self._checkpoints if key[0] == conversation_id]:
                del self._checkpoints[key]
            self._spills.pop(conversation_id, None)
            schedules = ("schedules", conversation_id)
            for side in [side for side in self._side_rows if side[:2] == schedules]:
                del self._side_rows[side]
            self._purged.add(conversation_id)
            return True


class PurgeOfUnknownLeavesNoTombstone(MemoryStore):
    """Bug: purging a conversation that never existed answers ``purged`` but records nothing.

    A later append to it is stored. Violates TRN-090 (it leaves a tombstone)
    and TRN-092.
    """

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            unknown = (
                conversation_id not in self._purged
                and conversation_id not in self._ledgers
                and conversation_id not in self._runtime
            )
        if unknown:
            return True
        return super()._purge(conversation_id)


# ======================================== facts (FCT)


class PurgeDeletesChildLinks(MemoryStore):
    """Bug: a purge deletes the child links that name the conversation, with its schedules.

    Violates SQL-069 / TRN-093 (child links outlive the purge of either
    conversation) and FCT-023 (a later state is recorded on the link's row).
    """

    def _purge(self, conversation_id: str) -> bool:
        purged = super()._purge(conversation_id)
        if purged:
            with self._lock:
                for key in [
                    key
                    for key in self._side_rows
                    if key[0] == "children" and conversation_id in (key[1], key[2])
                ]:
                    del self._side_rows[key]
        return purged


# ======================================== SQLite stores


class _FreshSqlite(SqliteStore):
    """Not a bug: a SQLite store on a new temporary file when no path is given."""

    def __init__(self, path: str | os.PathLike[str] | None = None, **options: Any) -> None:
        if path is None:
            directory = tempfile.mkdtemp(prefix="convledger-blind-")
            path = os.path.join(directory, "ledger.sqlite")
            options.setdefault(
                "on_close", lambda: shutil.rmtree(directory, ignore_errors=True)
            )
        super().__init__(path, **options)


# ---------------------------------------- search (SRC)


def _bare(words: tuple[str, ...]) -> str:
    return "body : (" + " AND ".join(words) + ")"


class SearchWordsUnquoted(_FreshSqlite):
    """Bug: the query's words are joined with AND without quoting each as an FTS5 string.

    A word such as ``NOT``, ``OR``, ``AND`` or ``NEAR`` then acts as an FTS5
    operator (or makes the MATCH a syntax error). Violates SRC-020 and SQL-065.
    """

    def _search(
        self,
        requester: str,
        words: tuple[str, ...],
        scope: tuple[str, ...] | None,
        limit: int,
        allowed: Allowed,
    ) -> list[Hit]:
        with self._transaction("search", write=False) as connection:

            def hits_of(conversation_id: str, n: int) -> list[Hit]:
                within = f"scope : {fts_string(scope_token(conversation_id))} AND {_bare(words)}"
                found = connection.execute(fts.HITS_OF_ONE, (within, n)).fetchall()
                return [Hit(str(c), int(s), str(a), str(t)) for c, s, a, t in found]

            candidates = (
                fts._with_hits(connection, requester, words) if scope is None else iter(scope)
            )
            return page_of(hits_of, requester, candidates, limit, allowed)


class SearchScopeWithoutRequester(_FreshSqlite):
    """Bug: with a ``scope`` that does not name the requester, its own hits are left out.

    Violates SRC-012 (only the scope's conversations, and always the
    requester's own, are searched).
    """

    def _search(
        self,
        requester: str,
        words: tuple[str, ...],
        scope: tuple[str, ...] | None,
        limit: int,
        allowed: Allowed,
    ) -> list[Hit]:
        own = scope is None or requester in scope
        with self._transaction("search", write=False) as connection:

            def hits_of(conversation_id: str, n: int) -> list[Hit]:
                if conversation_id == requester and not own:
                    return []
                return fts.hits_of(connection, conversation_id, words, n)

            candidates = (
                fts._with_hits(connection, requester, words) if scope is None else iter(scope)
            )
            return page_of(hits_of, requester, candidates, limit, allowed)


# ---------------------------------------- several handles (LED)


class HeadCachedPerHandle(_FreshSqlite):
    """Bug: each handle caches the heads it read, dropping the cache only on its own writes.

    Another handle's append leaves this handle's ``head`` stale. Violates
    LED-019 (no answer from a cache another handle's write made stale).
    """

    def _head(self, conversation_id: str) -> int:
        cache: dict[str, int] = self.__dict__.setdefault("_heads", {})
        if conversation_id not in cache:
            cache[conversation_id] = super()._head(conversation_id)
        return cache[conversation_id]

    @contextlib.contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[Any]:
        try:
            with super()._transaction(operation, write=write) as connection:
                yield connection
        finally:
            if write:
                self.__dict__.setdefault("_heads", {}).clear()


class HandleSharesConnection(_FreshSqlite):
    """Bug: ``open_handle`` gives a new handle on this handle's own connection.

    Closing either handle closes the other's connection (and two handles'
    transactions run on one connection). Violates LED-016 (closing one handle
    MUST NOT close or disturb the others).
    """

    def open_handle(self) -> SqliteStore:
        other = super().open_handle()
        other._connection.close()
        other._connection = self._connection
        return other


# ---------------------------------------- persistence (SQL, TRN)


class TombstonesInMemory(_FreshSqlite):
    """Bug: purge tombstones are kept in a set of the handle, not in the ``purged`` table.

    After ``reopen``, or through another handle, a purged conversation takes
    appends again. Violates TRN-092 (refused with ``purged`` forever), TRN-095
    and SQL-050 / SQL-052.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, **options: Any) -> None:
        super().__init__(path, **options)
        self._tombstones: set[str] = set()

    def _refuse_tombstone(self, conversation_id: str) -> None:
        if conversation_id in self._tombstones:
            raise PurgedError(
                f"conversation {conversation_id!r} was purged",
                requirement="TRN-092",
                conversation_id=conversation_id,
            )

    def _purge(self, conversation_id: str) -> bool:
        if conversation_id in self._tombstones:
            return False
        purged = super()._purge(conversation_id)
        with self._transaction("purge", write=True) as connection:
            connection.execute("DELETE FROM purged WHERE conversation_id = ?", (conversation_id,))
        self._tombstones.add(conversation_id)
        return purged

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        self._refuse_tombstone(conversation_id)
        return super()._append(conversation_id, drafts, expected_head)

    def _import(self, archive: Archive) -> None:
        self._refuse_tombstone(archive.conversation_id)
        super()._import(archive)

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        self._refuse_tombstone(conversation_id)
        return super()._transit(conversation_id, transition, draft)

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        self._refuse_tombstone(conversation_id)
        return super()._catch_up(conversation_id, definition, max_events)

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        self._refuse_tombstone(conversation_id)
        return super()._put_spill(conversation_id, metadata, data, draft)


BLIND_STORES: tuple[type[Any], ...] = (
    ReadNextSeqOnFullPage,
    ReadToSeqExclusive,
    ExpectedHeadZeroIgnored,
    DuplicateCheckedPerConversation,
    PartialBatchOnStoredDuplicate,
    ReadSharesStoredPayloads,
    OccurredAtNormalizedToZ,
    JsonDumpsExport,
    ImportIntoOccupiedConversation,
    ImportCanonicalizesFirst,
    ConflictBeforePurged,
    DuplicateBeforeConflict,
    ConflictCarriesExpectedHead,
    ReadLimitMaximumRefused,
    LeapSecondRefused,
    HugeExpectedHeadIsConflict,
    CatchUpStoresEmptyCheckpoint,
    StatusHeadFromCheckpoint,
    NewVersionContinuesOldCheckpoint,
    SpillTruthyAuthorization,
    SpillLookupIgnoresConversation,
    PurgeKeepsSpillObjects,
    PurgeIgnoresActiveRuns,
    PurgeOfUnknownLeavesNoTombstone,
    PurgeDeletesChildLinks,
    SearchWordsUnquoted,
    SearchScopeWithoutRequester,
    HeadCachedPerHandle,
    HandleSharesConnection,
    TombstonesInMemory,
)
"""The thirty broken stores, in the order of docs/blind-stores.md."""


# ======================================== round 2
#
# Written after the thirty above were all killed at smoke, still blind (conformance/ and
# tests/galleries/ unread): bugs aimed at what a suite finds hard (orders that agree on
# ASCII, caches, snapshots, counts, stored-data corruption, concurrency).


class ScopeOrderedByUtf16(_FreshSqlite):
    """Bug: the conversations of a ``scope`` are visited in UTF-16 code-unit order.

    (A port from a JavaScript or Java store.) It agrees with code-point order
    except between astral characters and U+E000..U+FFFF. Violates SRC-003
    (other conversations by conversation id in code-point order).
    """

    def _search(
        self,
        requester: str,
        words: tuple[str, ...],
        scope: tuple[str, ...] | None,
        limit: int,
        allowed: Allowed,
    ) -> list[Hit]:
        if scope is not None:
            scope = tuple(sorted(scope, key=lambda cid: cid.encode("utf-16-be")))
        return super()._search(requester, words, scope, limit, allowed)


class ExportUnknownIdNotFound(MemoryStore):
    """Bug: export answers ``not_found`` for any conversationId it holds no events of.

    The identifier check was left out of export only, so an empty string, a
    number or a lone surrogate answers ``not_found``. Violates LED-020
    (``invalid_input`` before anything is read).
    """

    def export_conversation(self, conversation_id: str) -> bytes:
        valid = isinstance(conversation_id, str) and conversation_id != ""
        if valid:
            try:
                conversation_id.encode("utf-8")
            except UnicodeEncodeError:
                valid = False
        if not valid:
            raise NotFoundError(
                f"conversation {conversation_id!r} has no events to export",
                requirement="ARC-005",
            )
        return super().export_conversation(conversation_id)


class ProjectionSkipsEveryUnknown(MemoryStore):
    """Bug: a catch-up skips every envelope its definition does not understand.

    Also a non-ignorable one, which must be refused. Violates PRJ-031
    (``replay_refused``, checkpoint unchanged) and RPL-003.
    """

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        with self._lock:
            self._refuse_purged(conversation_id)
            ledger = self._ledgers.get(conversation_id, [])
            stored = self._checkpoint(conversation_id, definition.name)
            kinds = definition.kinds

            def understood(envelope: Envelope) -> bool:
                pair = (envelope.kind, envelope.schema_version)
                return pair in kinds if kinds is not None else self._registry.knows(*pair)

            def read(from_seq: int, limit: int) -> Sequence[Envelope]:
                return [
                    copied(e) if understood(e) else attrs.evolve(copied(e), ignorable=True)
                    for e in ledger[from_seq - 1 : from_seq - 1 + limit]
                ]

            result = advance(definition, self._registry, stored, read, len(ledger), max_events)
            if should_store(stored, result):
                self._checkpoints[(conversation_id, definition.name)] = _stored(result)
                return self._checkpoint(conversation_id, definition.name) or result
            return result if stored is None else stored


class ImportReportCountsRegistered(MemoryStore):
    """Bug: the import report's ``events`` counts the events of registered kinds only.

    Ignorable events of unknown kinds are stored but not counted. Violates
    ARC-017 (every event of the archive, ignorable ones included).
    """

    def _import_checked(
        self, decoded: Archive, projections: Sequence[ProjectionDefinition]
    ) -> ImportReport:
        report = super()._import_checked(decoded, projections)
        counted = sum(
            1 for e in decoded.events if self._registry.knows(e.kind, e.schema_version)
        )
        return attrs.evolve(report, events=counted)


class ExportInTwoSnapshots(_FreshSqlite):
    """Bug: an export reads the events in one read transaction and the companions in another.

    A checkpoint or spill written between them is in the companions of an
    archive whose events do not have it yet (or the other way round). Violates
    SQL-045, SQL-064, ARC-014 and SPL-044.
    """

    def export_conversation(self, conversation_id: str) -> bytes:
        check_identifier(conversation_id, "conversationId", "ENV-005")
        with self._transaction("export", write=False) as connection:
            events = rows.export_events(connection, conversation_id)
        with self._transaction("export", write=False) as connection:
            companions = companions_of_conversation(connection, conversation_id)
        if not events:
            raise NotFoundError(
                f"conversation {conversation_id!r} has no events to export",
                requirement="ARC-005",
            )
        return encode_archive(archive_of(conversation_id, events, companions))


class PurgeKeepsRuntimeRecords(MemoryStore):
    """Bug: a purge deletes the events but forgets the head, runs and messages.

    ``load_run`` and ``load_snapshot`` still answer the purged conversation's
    records. Violates TRN-093 and TRN-094.
    """

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            kept = self._runtime.get(conversation_id)
        purged = super()._purge(conversation_id)
        if purged and kept is not None:
            with self._lock:
                self._runtime[conversation_id] = kept
        return purged


class CheckpointWrittenOutsideRead(_FreshSqlite):
    """Bug: catch-up folds in a read transaction, then writes with ``INSERT OR REPLACE``.

    The write is neither in the transaction of the read nor conditional on the
    checkpoint it read, so a slower catch-up can store an older checkpoint over
    a newer one. Violates PRJ-013, PRJ-011 and SQL-060 / SQL-061.
    """

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        with self._transaction("catch_up", write=False) as connection:
            if connection.execute(
                "SELECT 1 FROM purged WHERE conversation_id = ?", (conversation_id,)
            ).fetchone():
                raise PurgedError(
                    f"conversation {conversation_id!r} was purged",
                    requirement="PRJ-016",
                    conversation_id=conversation_id,
                )
            stored = side.load_checkpoint(connection, conversation_id, definition.name)
            head = rows.head_of(connection, conversation_id)

            def read(from_seq: int, limit: int) -> Sequence[Envelope]:
                return rows.read_window(connection, conversation_id, from_seq, rows.MAX_SEQ, limit)

            result = advance(definition, self.registry, stored, read, head, max_events)
        if not should_store(stored, result):
            return result if stored is None else stored
        with self._transaction("catch_up", write=True) as connection:
            connection.execute(
                "INSERT OR REPLACE INTO projections"
                " (conversation_id, name, version, upto_seq, state, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    result.name,
                    result.version,
                    result.upto_seq,
                    codec.encode(result.state).decode("utf-8"),
                    self._settings.clock(),
                ),
            )
        return result


class ExportKeysInCodePointOrder(MemoryStore):
    """Bug: the archive's object members are sorted by code point, not by UTF-16 code units.

    Everything else is RFC 8785. It differs only for member names with astral
    characters beside U+E000..U+FFFF. Violates CAN-002 (and ARC-001, ARC-004).
    """

    def export_conversation(self, conversation_id: str) -> bytes:
        value = canonical.decode(super().export_conversation(conversation_id))
        return _code_point_json(value).encode("utf-8")


def _code_point_json(value: object) -> str:
    if isinstance(value, dict):
        members = sorted(value.items())  # BUG: code points; RFC 8785 sorts UTF-16 units
        return "{" + ",".join(
            json.dumps(k, ensure_ascii=False) + ":" + _code_point_json(v) for k, v in members
        ) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_code_point_json(item) for item in value) + "]"
    return canonical.encode(value).decode("utf-8")


class ExportCachedByHead(MemoryStore):
    """Bug: export caches each archive under ``(conversationId, head)``.

    A catch-up, which appends no event, leaves a cached archive without its
    new checkpoint. Violates PRJ-040 (an archive carries the checkpoints) and
    ARC-001.
    """

    def export_conversation(self, conversation_id: str) -> bytes:
        cache: dict[tuple[str, int], bytes] = self.__dict__.setdefault("_archives", {})
        key = (conversation_id, self.head(conversation_id))
        if key not in cache:
            cache[key] = super().export_conversation(conversation_id)
        return cache[key]


class ChildLinksInWriteOrder(MemoryStore):
    """Bug: ``child_links`` and ``schedules`` answer rows in the order they were first written.

    Violates FCT-024 (ordered by child id and by schedule id, code-point order).
    """

    def _fact_rows(self, table: str, conversation_id: str) -> tuple[Any, ...]:
        with self._lock:
            return tuple(
                row for key, row in self._side_rows.items()
                if key[0] == table and key[1] == conversation_id
            )


class SpillMetadataFromStoredBytes(_FreshSqlite):
    """Bug: ``get_spill`` recomputes size and sha256 from the stored bytes it read.

    The check against the recorded values then always passes, so corrupt bytes
    are returned. Violates SPL-022 (``integrity``, never other bytes).
    """

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        found = super()._get_spill(conversation_id, reference)
        if found is None:
            return None
        metadata, body = found
        return attrs.evolve(metadata, size=len(body), sha256=digest(body)), body


class ReadDefaultLimit100(MemoryStore):
    """Bug: a read without ``limit`` returns pages of 100, the implementer's usual default.

    Violates LED-007 (``limit`` defaults to 1000).
    """

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = 100,
    ) -> Page:
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


HARDER_STORES: tuple[type[Any], ...] = (
    ScopeOrderedByUtf16,
    ExportUnknownIdNotFound,
    ProjectionSkipsEveryUnknown,
    ImportReportCountsRegistered,
    ExportInTwoSnapshots,
    PurgeKeepsRuntimeRecords,
    CheckpointWrittenOutsideRead,
    ExportKeysInCodePointOrder,
    ExportCachedByHead,
    ChildLinksInWriteOrder,
    SpillMetadataFromStoredBytes,
    ReadDefaultLimit100,
)
"""Round 2: twelve more, aimed at what a suite finds hard (docs/blind-stores.md)."""
