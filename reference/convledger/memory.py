"""The in-memory reference store: the ledger core as plainly as it can be written.

One lock makes every primitive atomic and serializes concurrent callers
(LED-013). :class:`StoreBase` hands :meth:`MemoryStore._append` payloads that
share nothing with the caller, and every envelope this store returns carries a
copy of its payload, so a caller that mutates a dict it holds cannot change
the ledger (LED-014).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from convledger.archive import Archive
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, DuplicateError
from convledger.kinds import KindRegistry
from convledger.store import StoreBase


class MemoryStore(StoreBase):
    """A volatile store: one list of envelopes per conversation."""

    def __init__(self, *, registry: KindRegistry | None = None) -> None:
        super().__init__(registry=registry)
        self._lock = threading.Lock()
        self._ledgers: dict[str, list[Envelope]] = {}
        self._event_ids: set[str] = set()

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._lock:
            ledger = self._ledgers.get(conversation_id, [])
            head = len(ledger)
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
            placed = tuple(
                Envelope.from_draft(draft, conversation_id, head + offset)
                for offset, draft in enumerate(drafts, start=1)
            )
            self._ledgers.setdefault(conversation_id, ledger).extend(placed)
            self._event_ids.update(draft.event_id for draft in drafts)
        return tuple(_copied_envelope(envelope) for envelope in placed)

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

    def _import(self, archive: Archive) -> None:
        with self._lock:
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
            self._ledgers[archive.conversation_id] = list(archive.events)
            self._event_ids.update(envelope.event_id for envelope in archive.events)


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
