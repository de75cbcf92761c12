"""The PostgreSQL reference store (spec chapter ``postgres.md``, ids PGS-*).

Modules, in reading order: ``driver`` (psycopg 3, imported only when a store
is made: this package imports without it, PGS-001), ``schema`` (the tables and
indexes of version 1, as data), ``errors`` (typed refusals and the driver
boundary), ``opening`` (create, validate or refuse a schema), ``rows`` (the
envelope row codec and every ledger statement), ``runtime_view`` and
``runtime`` (the runtime's rows, transitions and purge), ``transaction`` (the
row lock and the statements of one write), ``store`` (the store) and
``factories`` (fresh schemas for conformance runs, the locator's opener),
``recycling`` (fresh stores from emptied schemas, PGS-053), ``companions``,
``companion_store`` and ``search`` (projections, spills, search: schema
version 2).
"""

from convledger.postgres.driver import DriverMissingError, Settings
from convledger.postgres.errors import (
    AlteredSchemaError,
    DatabaseRefusal,
    PartialSchemaError,
    SchemaTooNewError,
    SchemaVersionError,
    ServerUnavailableError,
    StatementTimeoutError,
    StorageFailureError,
    StoreBusyError,
    StoreClosedError,
    StoreConflictError,
    UnversionedSchemaError,
)
from convledger.postgres.factories import (
    DEFAULT_DSN,
    DSN_VARIABLE,
    configured_dsn,
    drop_schema,
    open_located_store,
    schema_store_factory,
)
from convledger.postgres.recycling import new_schema_store, recycling_store_factory
from convledger.postgres.schema import LATEST_VERSION
from convledger.postgres.store import CAPABILITIES, PostgresStore

__all__ = [
    "CAPABILITIES",
    "DEFAULT_DSN",
    "DSN_VARIABLE",
    "LATEST_VERSION",
    "AlteredSchemaError",
    "DatabaseRefusal",
    "DriverMissingError",
    "PartialSchemaError",
    "PostgresStore",
    "SchemaTooNewError",
    "SchemaVersionError",
    "ServerUnavailableError",
    "Settings",
    "StatementTimeoutError",
    "StorageFailureError",
    "StoreBusyError",
    "StoreClosedError",
    "StoreConflictError",
    "UnversionedSchemaError",
    "configured_dsn",
    "drop_schema",
    "new_schema_store",
    "open_located_store",
    "recycling_store_factory",
    "schema_store_factory",
]
