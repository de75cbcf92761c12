"""The values of the runtime operations (chapter ``transitions.md``).

:class:`PurgeOutcome`, :class:`RecoveryCursor` and :class:`RecoveryPage`
are what ``purge`` and ``scan_recoverable`` answer, and the recovery order
(TRN-083, TRN-085). The protocols and the abstract bases of capabilities
``transitions`` and ``purge`` are in :mod:`convledger.runtime.store`.
"""

from __future__ import annotations

import enum

import attrs

from convledger.runtime.records import Run

TRANSITION_SCHEMA_VERSION = 1
MAX_SCAN_LIMIT = 1000
"""TRN-083: the largest page ``scan_recoverable`` serves."""


class PurgeOutcome(enum.Enum):
    """What ``purge`` answers (TRN-090, TRN-091)."""

    PURGED = "purged"
    ALREADY_PURGED = "already_purged"


@attrs.frozen(order=True)
class RecoveryCursor:
    """A keyset position: the last (conversationId, ordinal) a page returned (TRN-083).

    Conversations are ordered by the code points of their ids (which is the
    order of their UTF-8 bytes), never by a locale collation (TRN-083, TRN-085).
    """

    conversation_id: str
    ordinal: int

    @classmethod
    def after(cls, run: Run) -> RecoveryCursor:
        """The cursor just past ``run``."""
        return cls(run.conversation_id, run.ordinal)


@attrs.frozen
class RecoveryPage:
    """One page of ``scan_recoverable``; ``next`` is present exactly when more remain."""

    runs: tuple[Run, ...]
    next: RecoveryCursor | None = None


def recovery_order(run: Run) -> tuple[bytes, int]:
    """TRN-083, TRN-085: code-point order of conversation ids (their UTF-8 bytes), then ordinal."""
    return run.conversation_id.encode("utf-8", "surrogatepass"), run.ordinal


def after_cursor(run: Run, cursor: RecoveryCursor | None) -> bool:
    """True when ``run`` comes strictly after ``cursor`` in recovery order."""
    if cursor is None:
        return True
    key = (cursor.conversation_id.encode("utf-8", "surrogatepass"), cursor.ordinal)
    return recovery_order(run) > key


__all__ = [
    "MAX_SCAN_LIMIT",
    "PurgeOutcome",
    "RecoveryCursor",
    "RecoveryPage",
    "after_cursor",
    "recovery_order",
]
