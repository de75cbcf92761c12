"""convledger: the reference store and tools of the conversation event ledger (ADR 0175).

Read ``spec/`` beside this package: every module names the chapter it
implements and every rule cites the requirement id it enforces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convledger.lazy_names import lazy_names

if TYPE_CHECKING:
    from convledger.archive import Archive, decode_archive, encode_archive, inspect_archive
    from convledger.canonical import JsonValue
    from convledger.envelope import Envelope, EventDraft
    from convledger.errors import (
        ERROR_KINDS,
        CanonicalJsonError,
        ConflictError,
        DuplicateError,
        IntegrityError,
        InvalidInputError,
        LedgerError,
        NotFoundError,
        NotSupportedError,
        PurgedError,
        ReplayRefusedError,
        UnauthorizedError,
        UnavailableError,
    )
    from convledger.kinds import KindRegistry, KindSpec, default_registry
    from convledger.memory import MemoryStore
    from convledger.replay import Verdict, admit, replay
    from convledger.store import Capability, ImportReport, LedgerStore, Page, StoreBase

_HOMES = {
    "Archive": "archive", "decode_archive": "archive", "encode_archive": "archive",
    "inspect_archive": "archive", "JsonValue": "canonical", "Envelope": "envelope",
    "EventDraft": "envelope", "ERROR_KINDS": "errors", "CanonicalJsonError": "errors",
    "ConflictError": "errors", "DuplicateError": "errors", "IntegrityError": "errors",
    "InvalidInputError": "errors", "LedgerError": "errors", "NotFoundError": "errors",
    "NotSupportedError": "errors", "PurgedError": "errors", "ReplayRefusedError": "errors",
    "UnauthorizedError": "errors", "UnavailableError": "errors", "KindRegistry": "kinds",
    "KindSpec": "kinds", "default_registry": "kinds", "MemoryStore": "memory",
    "Verdict": "replay", "admit": "replay", "replay": "replay", "Capability": "store",
    "ImportReport": "store", "LedgerStore": "store", "Page": "store", "StoreBase": "store",
}
"""The module of ``convledger`` each public name comes from.

They are imported when first used (PEP 562), not with the package, so a process that needs
one part (``python -m convledger canon``, a wire server of the in-memory store) does not
import the others: the conformance suite starts such processes by the dozen (issue 34).
"""


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals(), submodules=True)


__version__ = "0.1.0"
SPEC_VERSION = "0.1"
"""The version of ``spec/`` this package implements."""

__all__ = [
    "ERROR_KINDS",
    "SPEC_VERSION",
    "Archive",
    "CanonicalJsonError",
    "Capability",
    "ConflictError",
    "DuplicateError",
    "Envelope",
    "EventDraft",
    "ImportReport",
    "IntegrityError",
    "InvalidInputError",
    "JsonValue",
    "KindRegistry",
    "KindSpec",
    "LedgerError",
    "LedgerStore",
    "MemoryStore",
    "NotFoundError",
    "NotSupportedError",
    "Page",
    "PurgedError",
    "ReplayRefusedError",
    "StoreBase",
    "UnauthorizedError",
    "UnavailableError",
    "Verdict",
    "__version__",
    "admit",
    "decode_archive",
    "default_registry",
    "encode_archive",
    "inspect_archive",
    "replay",
]
