"""Settling an append whose outcome is unknown (chapter DUR, DUR-017 .. DUR-020).

An append refused with ``unavailable`` after the store may have committed it
(a connection lost during ``COMMIT``, a timeout, a server gone with the
request in flight) is *indeterminate* (ERR-013): it is stored whole or not at
all (DUR-002), and the caller does not know which. :func:`settle_append` finds
out with the operations every store has (``append``, ``read``), and ends with
the batch stored exactly once and its stored envelopes in hand:

- the envelopes: the first attempt did not commit; ``appended``.
- ``duplicate`` (no expected head): an eventId is stored; read it back: ``committed``
  when the batch is found whole, at consecutive seqs, with the drafts' contents, else
  ``duplicate``.
- ``conflict`` (an expected head): read the seqs after the expected head: ``committed``
  when they hold the batch, else ``conflict``.
- ``unavailable``: still unknown; raised, settle again later.

It is exact because an eventId is stored at most once in a store (LED-003)
and a batch is stored whole or not at all (LED-004, DUR-002): one eventId of
the batch found with the batch's contents proves the whole batch committed,
at the seqs read back. The caller's eventIds must be its own (never sent in
another batch), which every producer of fresh eventIds (UUIDs) satisfies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import attrs

from convledger import canonical
from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, DuplicateError
from convledger.store_interface import Page

PAGE = 1000
"""Events per read while looking for the batch."""


class Appending(Protocol):
    """What settling needs of a store: ``append`` and ``read`` (chapter LED)."""

    def append(self, conversation_id: str, drafts: Sequence[EventDraft], *,
               expected_head: int | None = None) -> tuple[Envelope, ...]: ...

    def read(self, conversation_id: str, *, from_seq: int = 1, to_seq: int | None = None,
             limit: int = 1000) -> Page: ...


@attrs.frozen
class Settled:
    """How an indeterminate append ended: its stored envelopes, and whether settling stored them."""

    outcome: Literal["committed", "appended"]
    """``committed``: the first attempt had committed (DUR-018, DUR-019); ``appended``: it had
    not, and the retry stored the batch now (DUR-017)."""
    envelopes: tuple[Envelope, ...]


def same_event(draft: EventDraft, stored: Envelope) -> bool:
    """DUR-020: the stored envelope is this draft (eventId, kind, occurredAt, payload, flags)."""
    return (draft.event_id == stored.event_id and draft.kind == stored.kind
            and draft.occurred_at == stored.occurred_at
            and draft.schema_version == stored.schema_version
            and draft.ignorable == stored.ignorable
            and canonical.encode(draft.payload) == canonical.encode(stored.payload))


def settle_append(
    store: Appending,
    conversation_id: str,
    drafts: Sequence[EventDraft],
    *,
    expected_head: int | None = None,
    from_seq: int = 1,
) -> Settled:
    """DUR-017 .. DUR-020: the outcome of an indeterminate append, the batch stored exactly once.

    ``from_seq`` is a seq at or before the batch's first (the head the caller
    last saw plus one; 1 when it knows nothing): the read back starts there.
    Raises ``duplicate`` or ``conflict`` when the batch is not this caller's
    committed batch, and ``unavailable`` (or any other refusal) as the retry
    raised it.
    """
    batch = tuple(drafts)
    try:
        return Settled("appended", store.append(conversation_id, batch,
                                                   expected_head=expected_head))
    except ConflictError as refusal:
        # DUR-019: LED-005 comes before LED-003 (ERR-010), so a committed first attempt with an
        # expected head answers conflict: the batch, if it committed, is right after that head.
        if expected_head is None or refusal.actual is None:
            raise
        found = _window(store, conversation_id, expected_head + 1, len(batch))
        if _is_batch(batch, found):
            return Settled("committed", found)
        raise
    except DuplicateError:
        # DUR-018: an eventId of the batch is stored; find the first one, then check the rest.
        located = _find(store, conversation_id, batch, from_seq)
        if located is not None:
            return Settled("committed", located)
        raise


def _window(store: Appending, conversation_id: str, first: int, count: int) -> tuple[Envelope, ...]:
    page = store.read(conversation_id, from_seq=first, to_seq=first + count - 1, limit=count)
    return tuple(page.items)


def _is_batch(batch: tuple[EventDraft, ...], found: tuple[Envelope, ...]) -> bool:
    """DUR-020: the batch whole, in order, at consecutive seqs, with the drafts' contents."""
    return (len(found) == len(batch)
            and all(same_event(d, e) for d, e in zip(batch, found, strict=True))
            and [e.seq for e in found] == list(range(found[0].seq, found[0].seq + len(found))))


def _find(store: Appending, conversation_id: str, batch: tuple[EventDraft, ...],
          from_seq: int) -> tuple[Envelope, ...] | None:
    """The batch as stored in this conversation from ``from_seq`` on, or None."""
    first_id = batch[0].event_id
    seq: int | None = max(1, from_seq)
    while seq is not None:
        page = store.read(conversation_id, from_seq=seq, limit=PAGE)
        for envelope in page.items:
            if envelope.event_id == first_id:
                found = _window(store, conversation_id, envelope.seq, len(batch))
                return found if _is_batch(batch, found) else None
        seq = page.next_seq
    return None
