"""Declared capabilities and the one capability table (chapter ``capabilities.md``).

A store declares what it supports; nothing is detected by introspection
(CAP-001). An operation of an undeclared capability raises
:class:`NotSupportedError` (CAP-002).

:data:`OPERATIONS` is the table of ``spec/capabilities.md`` as data: for each
capability, the operations it covers, by the name the spec and the wire
protocol give them and by the Python method that serves them. It is the only
copy in code: the wire server's request table (WIR-013), the refusals a
reference store inherits for what it does not implement (CAP-002), the
suite's probes of absent capabilities and the state machines' probes are all
derived from it, and ``tests/test_capability_table.py`` compares it with the
spec's table.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import attrs

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
    FACT_ROWS = "fact_rows"
    """Child links and schedules kept beside the ledger (FCT, SQL-068, SQL-069)."""
    MIGRATION = "migration"
    """Opening and migrating schema version 1 databases (SQLite stores)."""
    MULTI_PROCESS = "multi_process"
    """Several processes may write the same store."""


@attrs.frozen
class Operation:
    """One operation of the capability table.

    ``name`` is the spec's name, which is also the wire protocol's request
    type when ``wire`` is true; ``method`` is the Python method of a store.
    """

    name: str
    method: str
    wire: bool = True


def _operations(*pairs: tuple[str, str], wire: bool = True) -> tuple[Operation, ...]:
    return tuple(Operation(name, method, wire) for name, method in pairs)


OPERATIONS: Final[Mapping[Capability, tuple[Operation, ...]]] = {
    Capability.LEDGER: _operations(
        ("append", "append"),
        ("read", "read"),
        ("head", "head"),
        ("exportConversation", "export_conversation"),
        ("importConversation", "import_conversation"),
    ),
    Capability.PERSISTENCE: _operations(("reopen", "reopen")),
    Capability.TRANSITIONS: _operations(
        ("transition", "transition"),
        ("loadRun", "load_run"),
        ("listActiveRuns", "list_active_runs"),
        ("loadSnapshot", "load_snapshot"),
        ("scanRecoverable", "scan_recoverable"),
    ),
    Capability.PURGE: _operations(("purge", "purge")),
    Capability.PROJECTIONS: _operations(
        ("catchUp", "catch_up"),
        ("loadCheckpoint", "load_checkpoint"),
        ("projectionStatus", "projection_status"),
    ),
    Capability.SPILLS: _operations(
        ("putSpill", "put_spill"),
        ("getSpill", "get_spill"),
        ("deleteSpill", "delete_spill"),
        ("exportBundle", "export_bundle"),
        ("importBundle", "import_bundle"),
    ),
    Capability.SEARCH: _operations(("search", "search")),
    Capability.FACT_ROWS: _operations(
        ("writeFactRows", "write_fact_rows"),
        ("childLinks", "child_links"),
        ("schedules", "schedules"),
        wire=False,
    ),
    Capability.MIGRATION: (),
    Capability.MULTI_PROCESS: _operations(
        ("openHandle", "open_handle"),
        ("locator", "locator"),
        wire=False,
    ),
}
"""CAP-001, CAP-002: every capability's operations, as ``spec/capabilities.md`` lists them.

Capability ``migration`` is a property of opening a database, not an
operation. The operations of ``fact_rows`` and ``multi_process`` are called
in process only (the wire protocol does not carry them, WIR-021).
"""


def capability_of(method: str) -> Capability:
    """The capability whose operation the Python method ``method`` serves."""
    for capability, operations in OPERATIONS.items():
        if any(operation.method == method for operation in operations):
            return capability
    raise KeyError(method)


def optional_operations() -> tuple[tuple[Capability, Operation], ...]:
    """Every operation of every optional capability, in the table's order (CAP-002)."""
    return tuple(
        (capability, operation)
        for capability, operations in OPERATIONS.items()
        if capability is not Capability.LEDGER
        for operation in operations
    )


def not_supported(capability: Capability, operation: str) -> NotSupportedError:
    """The CAP-002 refusal of an operation whose capability the store does not declare."""
    return NotSupportedError(
        f"{operation} needs capability {capability.value!r}, which this store does not declare",
        requirement="CAP-002",
        capability=capability.value,
    )
