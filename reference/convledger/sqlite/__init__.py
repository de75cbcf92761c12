"""The SQLite reference store (spec chapter ``sqlite.md``, ids SQL-*).

Modules, in reading order: ``schema`` (the DDL of versions 1 and 2, as data),
``errors`` (typed refusals and the driver boundary), ``rows`` (the envelope
row codec and every ledger statement), ``baseline`` and ``migration`` (version
1 to 2), ``opening`` (create, validate, migrate or refuse), ``store`` (the
store and its transaction handle), ``located`` (the opener of a locator, for
another process) and ``factories`` (for conformance runs).
"""

from convledger.sqlite.errors import (
    AlteredSchemaError,
    DatabaseRefusal,
    Fts5PartialError,
    Fts5UnavailableError,
    Fts5UnknownError,
    MigrationRefusedError,
    NestedStoreCallError,
    NotADatabaseError,
    PartialSchemaError,
    ReadOnlyDatabaseError,
    SchemaTooNewError,
    SchemaVersionError,
    StorageFailureError,
    StorageFullError,
    StoreBusyError,
    StoreClosedError,
    UnversionedSchemaError,
)
from convledger.sqlite.factories import (
    file_store_factory,
    memory_store_factory,
    new_file_store,
    new_memory_store,
)
from convledger.sqlite.located import open_file_store
from convledger.sqlite.migration import MigrationReport
from convledger.sqlite.opening import Diagnosis, diagnose
from convledger.sqlite.schema import LATEST_VERSION
from convledger.sqlite.store import LedgerTransaction, SqliteStore

__all__ = [
    "LATEST_VERSION",
    "AlteredSchemaError",
    "DatabaseRefusal",
    "Diagnosis",
    "Fts5PartialError",
    "Fts5UnavailableError",
    "Fts5UnknownError",
    "LedgerTransaction",
    "MigrationRefusedError",
    "MigrationReport",
    "NestedStoreCallError",
    "NotADatabaseError",
    "PartialSchemaError",
    "ReadOnlyDatabaseError",
    "SchemaTooNewError",
    "SchemaVersionError",
    "SqliteStore",
    "StorageFailureError",
    "StorageFullError",
    "StoreBusyError",
    "StoreClosedError",
    "UnversionedSchemaError",
    "diagnose",
    "file_store_factory",
    "memory_store_factory",
    "new_file_store",
    "new_memory_store",
    "open_file_store",
]
