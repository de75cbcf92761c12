"""The in-memory reference store: the ledger and the runtime as plainly as they can be written.

One lock makes every primitive atomic and serializes concurrent callers
(LED-013). A transition decides over the conversation's
:class:`RuntimeState`, stages its writes on a copy and its event beside it,
and only then swaps both in: an exception anywhere before the swap leaves
nothing behind (TRN-004). ``fault_probe``, when given, is called with a label
after each staged write, so tests can prove exactly that.

:class:`StoreBase` hands :meth:`MemoryStore._append` payloads that
share nothing with the caller, and every envelope this store returns carries a
copy of its payload, so a caller that mutates a dict it holds cannot change
the ledger (LED-014).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from convledger.archive import Archive
from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, DuplicateError, PurgedError
from convledger.kinds import KindRegistry
from convledger.runtime.companion import companions_for, runtime_of
from convledger.runtime.operations import RecoveryCursor, after_cursor, recovery_order
from convledger.runtime.records import Run
from convledger.runtime.rules import decide
from convledger.runtime.state import RuntimeState, Snapshot, snapshot_of
from convledger.runtime.transitions import Transition
from convledger.runtime.view import HeadWrite, Outcome, Status
from convledger.store import StoreBase

FaultProbe = Callable[[str], None]


class MemoryStore(StoreBase):
    """A volatile store: one list of envelopes and one runtime state per conversation."""

    declared = frozenset({Capability.LEDGER, Capability.TRANSITIONS, Capability.PURGE})

    def __init__(
        self, *, registry: KindRegistry | None = None, fault_probe: FaultProbe | None = None
    ) -> None:
        super().__init__(registry=registry)
        self._lock = threading.Lock()
        self._ledgers: dict[str, list[Envelope]] = {}
        self._event_ids: set[str] = set()
        self._runtime: dict[str, RuntimeState] = {}
        self._purged: set[str] = set()
        self._fault_probe = fault_probe

    # -- ledger core ---------------------------------------------------------------------------

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._lock:
            placed = self._placed(conversation_id, drafts, expected_head)
            self._commit(conversation_id, placed)
        return tuple(_copied_envelope(envelope) for envelope in placed)

    def _placed(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        """The drafts at head+1.., after every check; nothing is stored yet (lock held)."""
        self._refuse_purged(conversation_id)
        head = len(self._ledgers.get(conversation_id, []))
        if expected_head is not None and expected_head != head:
            raise ConflictError(
                f"expected head {expected_head}, the ledger is at {head}",
                requirement="LED-005",
                actual=head,
            )
        for draft in drafts:
            if draft.event_id in self._event_ids:
                raise DuplicateError(
                    f"eventId {draft.event_id!r} already exists",
                    requirement="LED-003",
                    identity=draft.event_id,
                )
        return tuple(
            Envelope.from_draft(draft, conversation_id, head + offset)
            for offset, draft in enumerate(drafts, start=1)
        )

    def _commit(self, conversation_id: str, placed: tuple[Envelope, ...]) -> None:
        self._ledgers.setdefault(conversation_id, []).extend(placed)
        self._event_ids.update(envelope.event_id for envelope in placed)

    def _refuse_purged(self, conversation_id: str) -> None:
        """TRN-092: a purged conversation takes nothing more, forever."""
        if conversation_id in self._purged:
            raise PurgedError(
                f"conversation {conversation_id!r} was purged",
                requirement="TRN-092",
                conversation_id=conversation_id,
            )

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        with self._lock:
            ledger = self._ledgers.get(conversation_id, [])
            stop = len(ledger) if to_seq is None else min(len(ledger), to_seq)
            window = ledger[from_seq - 1 : min(stop, from_seq - 1 + limit)]
        return [_copied_envelope(envelope) for envelope in window]

    def _head(self, conversation_id: str) -> int:
        with self._lock:
            return len(self._ledgers.get(conversation_id, []))

    def _snapshot_events(self, conversation_id: str) -> Sequence[Envelope]:
        with self._lock:
            return list(self._ledgers.get(conversation_id, []))

    def _export_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue]]:
        with self._lock:
            events = list(self._ledgers.get(conversation_id, []))
            return events, companions_for(self._runtime.get(conversation_id))

    def _import(self, archive: Archive) -> None:
        with self._lock:
            self._refuse_purged(archive.conversation_id)
            head = len(self._ledgers.get(archive.conversation_id, []))
            if head:
                raise ConflictError(
                    f"conversation {archive.conversation_id!r} already has {head} events",
                    requirement="ARC-009",
                    actual=head,
                )
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

    # -- runtime transitions (chapter transitions.md) ------------------------------------------

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        with self._lock:
            self._refuse_purged(conversation_id)
            state = self._runtime.get(conversation_id) or RuntimeState(conversation_id)
            decision = decide(state, conversation_id, transition, draft.occurred_at)
            if decision.status is not Status.APPLIED:
                return Outcome.of(decision)  # TRN-004: nothing written
            assert decision.head_write is not None
            staged = state.copy()
            _compare_and_swap(staged, decision.head_write)
            self._probe("head")
            for record in decision.writes:
                staged.put(record)
                self._probe(type(record).__name__.lower())
            placed = self._placed(conversation_id, (draft,), None)
            self._probe("event")
            self._runtime[conversation_id] = staged
            self._commit(conversation_id, placed)
        return Outcome.of(decision, _copied_envelope(placed[0]))

    def _probe(self, label: str) -> None:
        if self._fault_probe is not None:
            self._fault_probe(label)

    def _load_run(self, conversation_id: str, run_id: str) -> Run | None:
        with self._lock:
            state = self._runtime.get(conversation_id)
            return None if state is None else state.run(run_id)

    def _active_runs(self, conversation_id: str) -> list[Run]:
        with self._lock:
            state = self._runtime.get(conversation_id)
            return [] if state is None else list(state.active_runs())

    def _snapshot(self, conversation_id: str) -> Snapshot | None:
        with self._lock:
            state = self._runtime.get(conversation_id)
            return None if state is None else snapshot_of(state)

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        with self._lock:
            owned = [
                run
                for state in self._runtime.values()
                for run in state.runs.values()
                if run.state.owned and after_cursor(run, after)
            ]
        return sorted(owned, key=recovery_order)[:limit]

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            if conversation_id in self._purged:
                return False
            state = self._runtime.get(conversation_id)
            if state is not None and state.active_runs():
                raise ConflictError(
                    f"conversation {conversation_id!r} has active runs", requirement="TRN-091"
                )
            for envelope in self._ledgers.pop(conversation_id, []):
                self._event_ids.discard(envelope.event_id)
            self._runtime.pop(conversation_id, None)
            self._purged.add(conversation_id)
            return True


def _compare_and_swap(state: RuntimeState, write: HeadWrite) -> None:
    """TRN-003: the head moves only from the version the decision was made on."""
    current = 0 if state.head_record is None else state.head_record.version
    if current != write.expected:
        raise ConflictError(
            f"head version is {current}, expected {write.expected}",
            requirement="TRN-003",
            actual=current,
        )
    state.head_record = write.head


def _copied_envelope(envelope: Envelope) -> Envelope:
    return Envelope(
        schema_version=envelope.schema_version,
        event_id=envelope.event_id,
        conversation_id=envelope.conversation_id,
        seq=envelope.seq,
        kind=envelope.kind,
        occurred_at=envelope.occurred_at,
        payload=_copied_payload(envelope.payload),
        ignorable=envelope.ignorable,
    )


def _copied_payload(payload: JsonValue) -> JsonValue:
    """A copy of a decoded payload that shares no list or dict with it (LED-014).

    It uses a work list of (original, copy) pairs instead of recursion, so it
    copies any depth the decoder accepted.
    """
    todo: list[tuple[_Container, _Container]] = []
    root = _fresh(payload, todo)
    while todo:
        source, target = todo.pop()
        if isinstance(source, dict) and isinstance(target, dict):
            for key, item in source.items():
                target[key] = _fresh(item, todo)
        elif isinstance(source, list) and isinstance(target, list):
            target.extend(_fresh(item, todo) for item in source)
    return root


_Container = dict[str, JsonValue] | list[JsonValue]


def _fresh(value: JsonValue, todo: list[tuple[_Container, _Container]]) -> JsonValue:
    """``value`` itself when immutable, else an empty container queued to be filled."""
    if isinstance(value, dict):
        copied: _Container = {}
    elif isinstance(value, list):
        copied = []
    else:
        return value  # str, int, float, bool and None are immutable
    todo.append((value, copied))
    return copied
