"""Issue 37's round of broken stores, in the classes the issue found surviving smoke.

NOT blind in the sense of issue 20's rounds: they were written by the helper that
wrote issue 37's checks, after writing them, aiming at what those checks do
NOT send (another write before a read, another import path, another
identifier, a claim within one conversation) rather than at what they do.
Each class has exactly ONE realistic bug, says it and the spec id it breaks,
and is a zero-argument factory of a fresh store (``--store
tests.blind.round3:NAME``). They were committed before anything ran against
them; docs/blind-stores.md has the results.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

import attrs

from convledger.envelope import Envelope, EventDraft, copied
from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.runtime.records import Message, RunState
from convledger.runtime.rules import decide
from convledger.runtime.state import RuntimeState
from convledger.runtime.transitions import Interrupt, Transition
from convledger.runtime.view import Outcome, Status
from convledger.spills.bundle import decode_bundle
from convledger.sqlite import SqliteStore
from convledger.store import ImportReport


class _FreshSqlite(SqliteStore):
    """Not a bug: a SQLite store on a new temporary file when no path is given."""

    def __init__(self, path: str | os.PathLike[str] | None = None, **options: Any) -> None:
        if path is None:
            directory = tempfile.mkdtemp(prefix="convledger-round3-")
            path = os.path.join(directory, "ledger.sqlite")
            options.setdefault("on_close", lambda: shutil.rmtree(directory, ignore_errors=True))
        super().__init__(path, **options)


class _HandleCache(_FreshSqlite):
    """Not a bug: a per-handle cache that the handle's own writes empty."""

    def __init__(self, path: str | os.PathLike[str] | None = None, **options: Any) -> None:
        super().__init__(path, **options)
        self._cache: dict[object, object] = {}

    def append(self, *arguments: Any, **options: Any) -> Any:
        self._cache.clear()
        return super().append(*arguments, **options)

    def write_fact_rows(self, *arguments: Any, **options: Any) -> Any:
        self._cache.clear()
        return super().write_fact_rows(*arguments, **options)

    def transition(self, *arguments: Any, **options: Any) -> Any:
        self._cache.clear()
        return super().transition(*arguments, **options)


# ---------------------------------------- freshness across handles (LED-019, LED-021)


class ChildLinksCachedPerHandle(_HandleCache):
    """Bug: child_links keeps each parent's links in the handle; only this handle's writes
    empty it, so a link written through another handle is never seen (LED-021)."""

    def child_links(self, parent_conversation_id: str) -> Any:
        key = ("links", parent_conversation_id)
        if key not in self._cache:
            self._cache[key] = super().child_links(parent_conversation_id)
        return self._cache[key]


class RecoverableScanCachedPerHandle(_HandleCache):
    """Bug: scan_recoverable keeps its first page in the handle, so runs another handle
    acquired or ended are answered as they were (LED-021)."""

    def scan_recoverable(self, *arguments: Any, **options: Any) -> Any:
        key = ("scan", arguments, tuple(sorted(options.items())))
        if key not in self._cache:
            self._cache[key] = super().scan_recoverable(*arguments, **options)
        return self._cache[key]


# ---------------------------------------- transitions in order (TRN)


def _keeps_requeued_answer(
    view: Any, conversation_id: str, transition: Transition, at: str
) -> Any:
    """The rules, except that an interrupt of a queued run never fails its answer: the
    implementer thought a queued run has no placed message (true only before any acquire)."""
    decision = decide(view, conversation_id, transition, at)
    if isinstance(transition, Interrupt) and decision.status is Status.APPLIED:
        run = view.run(transition.run_id)
        if run is not None and run.state is RunState.QUEUED:
            writes = tuple(w for w in decision.writes if not isinstance(w, Message))
            return attrs.evolve(decision, writes=writes)
    return decision


class InterruptedRequeuedRunKeepsAnswer(MemoryStore):
    """Bug: interrupting a queued run that was requeued after an acquire leaves its placed
    assistant message as it was instead of failing it (TRN-050)."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        with self._lock:
            self._refuse_purged(conversation_id)
            state = self._runtime.get(conversation_id) or RuntimeState(conversation_id)
            decision = _keeps_requeued_answer(state, conversation_id, transition,
                                              draft.occurred_at)
            if decision.status is not Status.APPLIED:
                return Outcome.of(decision)
            staged = state.copy()
            staged.apply(decision)
            placed = self._placed(conversation_id, (draft,), None)
            self._runtime[conversation_id] = staged
            self._commit(conversation_id, placed)
        return Outcome.of(decision, copied(placed[0]))


class OwnEventIdAnsweredDuplicate(MemoryStore):
    """Bug: a transition whose eventId is an event of its own conversation answers the
    duplicate outcome, taking it for a retry of the same call (TRN-008)."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        mine = {e.event_id for e in self._ledgers.get(conversation_id, [])}
        if draft.event_id in mine:
            state = self._runtime.get(conversation_id)
            head = None if state is None else state.head()
            return Outcome(Status.DUPLICATE, 0 if head is None else head.version)
        return super()._transit(conversation_id, transition, draft)


# ---------------------------------------- claims (LED-022, PRV-021)


class BodiesDedupedWithinConversation(MemoryStore):
    """Bug: a provider/message whose sha256 the conversation already recorded is stored with
    the body recorded first, trusting the hash within one conversation (PRV-021)."""

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        known: dict[object, object] = {}
        for envelope in self._ledgers.get(conversation_id, []):
            if envelope.kind == "provider/message" and isinstance(envelope.payload, dict):
                known.setdefault(envelope.payload.get("sha256"), envelope.payload.get("message"))
        kept = []
        for draft in drafts:
            payload = draft.payload if isinstance(draft, EventDraft) else None
            if isinstance(payload, dict) and draft.kind == "provider/message":
                claimed = payload.get("sha256")
                if claimed in known:
                    draft = attrs.evolve(draft, payload={**payload, "message": known[claimed]})
                else:
                    known[claimed] = payload.get("message")
            kept.append(draft)
        return super().append(conversation_id, kept, expected_head=expected_head)


# ---------------------------------------- boundaries (ARC-013, PRJ-014)


class RefusedBundleKeepsEventIds(MemoryStore):
    """Bug: a bundle refused by the store's state (its conversation has events, or an eventId
    is stored) keeps the eventIds it had reserved before the refusal (ARC-013, SPL-055)."""

    def import_bundle(
        self, bundle: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        try:
            return super().import_bundle(bundle, projections=projections)
        except LedgerError:
            try:
                archive = decode_bundle(bundle, self._registry)
            except LedgerError:
                raise  # refused before any reservation: nothing kept
            with self._lock:
                for envelope in archive.events:
                    if envelope.event_id in self._event_ids:
                        break
                    self._event_ids.add(envelope.event_id)
            raise


class StatusHeadCountsAppendsOnly(MemoryStore):
    """Bug: projection_status takes the head from a counter that append raises, so events that
    transitions and spill operations write are missing from it (PRJ-014)."""

    def __init__(self) -> None:
        super().__init__()
        self._appended: dict[str, int] = {}

    def _append(self, conversation_id: str, drafts: Any, expected_head: Any) -> Any:
        placed = super()._append(conversation_id, drafts, expected_head)
        self._appended[conversation_id] = self._appended.get(conversation_id, 0) + len(placed)
        return placed

    def _import(self, archive: Any) -> None:
        super()._import(archive)
        self._appended[archive.conversation_id] = len(archive.events)

    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]:
        checkpoint, _ = super()._projection_status(conversation_id, name)
        return checkpoint, self._appended.get(conversation_id, 0)


ROUND_3: tuple[type[Any], ...] = (
    ChildLinksCachedPerHandle,
    RecoverableScanCachedPerHandle,
    InterruptedRequeuedRunKeepsAnswer,
    OwnEventIdAnsweredDuplicate,
    BodiesDedupedWithinConversation,
    RefusedBundleKeepsEventIds,
    StatusHeadCountsAppendsOnly,
)
"""Issue 37's round, in order."""
