"""The protocols of capabilities ``ledger`` and ``persistence`` (``ledger.md``, ``archive.md``).

:class:`LedgerStore` is what every store implements (CAP-003): append,
bounded read, head, export and import, assuming no particular database.
:class:`PersistentStore` adds ``reopen`` (capability ``persistence``). Each
further capability of ``spec/capabilities.md`` has its own protocol beside
its chapter's code (``convledger.runtime.store``, ``convledger.projections.store``,
``convledger.spills.store``, ``convledger.search.store``, ``convledger.host.store``),
each extending :class:`LedgerStore`; :func:`convledger.interface.require`
checks a declaration and narrows a store to one of them.

:class:`Page` and :class:`ImportReport` are the values the ledger operations
return, and the limits of one read and one append (LED-001, LED-007) are
constants here. The shared implementation is
:class:`convledger.store_base.StoreBase`; the checks of an append batch are
in :mod:`convledger.batch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft
from convledger.kinds import KindRegistry

DEFAULT_READ_LIMIT = 1000
"""LED-007: the page size when the caller names none."""
MAX_READ_LIMIT = 10_000
"""LED-007: the largest page a caller may ask for."""
MAX_BATCH = 10_000
"""LED-001: the most drafts one append may carry."""


@attrs.frozen
class Page:
    """One bounded read (LED-008, LED-009).

    ``next_seq`` is the seq to read from next, present only when more events
    remain inside the requested window.
    """

    items: tuple[Envelope, ...]
    next_seq: int | None = None


@attrs.frozen
class ImportReport:
    """What an import wrote."""

    conversation_id: str
    events: int
    head_seq: int


@runtime_checkable
class LedgerStore(Protocol):
    """Capability ``ledger`` (CAP-003): what every store implements; see LED and ARC."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The declared capabilities (CAP-001)."""
        ...

    @property
    def registry(self) -> KindRegistry:
        """The kinds this store lets producers append (KND-002)."""
        ...

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        """Append drafts at head+1.. atomically (LED-001 .. LED-006)."""
        ...

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = DEFAULT_READ_LIMIT,
    ) -> Page:
        """A bounded, ordered window of one ledger (LED-007 .. LED-011)."""
        ...

    def head(self, conversation_id: str) -> int:
        """The last seq of the conversation, 0 when it has none (LED-012)."""
        ...

    def export_conversation(self, conversation_id: str) -> bytes:
        """The canonical archive of one conversation (ARC-001, ARC-004)."""
        ...

    def import_conversation(self, archive: bytes) -> ImportReport:
        """Import an archive into an empty log, all or nothing (ARC-003 .. ARC-013)."""
        ...

    def close(self) -> None:
        """Release resources; the handle must not be used afterwards."""
        ...


@runtime_checkable
class PersistentStore(LedgerStore, Protocol):
    """Capability ``persistence``: the data outlives the handle."""

    def reopen(self) -> LedgerStore:
        """Close this handle and open the same data again."""
        ...
