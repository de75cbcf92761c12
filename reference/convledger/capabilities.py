"""Declared capabilities (chapter ``capabilities.md``, CAP-001 .. CAP-004).

A store declares what it supports; nothing is detected by introspection
(CAP-001). An operation of an undeclared capability raises
:class:`NotSupportedError` (CAP-002).
"""

from __future__ import annotations

import enum

from convledger.errors import NotSupportedError


class Capability(enum.Enum):
    """What a store may declare (chapter ``capabilities.md``)."""

    LEDGER = "ledger"
    """Append, bounded read, export, import. Required (CAP-003)."""
    PERSISTENCE = "persistence"
    """``reopen`` returns a store over the same data."""
    TRANSITIONS = "transitions"
    """Runtime transitions and bounded operational reads."""
    PROJECTIONS = "projections"
    """Projection definitions and honest checkpoints."""
    SPILLS = "spills"
    """Binary spill objects with authorization recheck."""
    SEARCH = "search"
    """Full-text search, default-denied across conversations."""
    PURGE = "purge"
    """Purging a conversation."""
    MIGRATION = "migration"
    """Opening and migrating schema version 1 databases (SQLite stores)."""
    MULTI_PROCESS = "multi_process"
    """Several processes may write the same store."""


def not_supported(capability: Capability, operation: str) -> NotSupportedError:
    """The CAP-002 refusal of an operation whose capability the store does not declare."""
    return NotSupportedError(
        f"{operation} needs capability {capability.value!r}, which this store does not declare",
        requirement="CAP-002",
        capability=capability.value,
    )
