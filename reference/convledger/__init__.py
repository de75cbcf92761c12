"""convledger: the reference store and tools of the conversation event ledger (ADR 0175).

Read ``spec/`` beside this package: every module names the chapter it
implements and every rule cites the requirement id it enforces.
"""

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
