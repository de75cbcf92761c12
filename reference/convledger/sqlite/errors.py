"""Typed refusals of the SQLite store and the one boundary that translates driver errors.

Every class below is a subclass of one normative kind of ``convledger.errors``
(ERR-001); tests and checks match on the class or the kind, never on the text
(ERR-002). :func:`driver_boundary` is the only place where a ``sqlite3.Error``
becomes a ledger error (ERR-006, SQL-041): each store operation runs inside it,
so no raw driver exception reaches a caller.

| situation                                  | class                    | kind           |
|--------------------------------------------|--------------------------|----------------|
| schema version newer than this store       | SchemaTooNewError        | not_supported  |
| schema version unreadable                  | SchemaVersionError       | integrity      |
| tables without a version                   | UnversionedSchemaError   | integrity      |
| schema object missing                      | PartialSchemaError       | integrity      |
| schema object with another definition      | AlteredSchemaError       | integrity      |
| FTS5 not available in this SQLite          | Fts5UnavailableError     | not_supported  |
| FTS5 table, shadow table or trigger absent | Fts5PartialError         | integrity      |
| FTS5 table or trigger defined otherwise    | Fts5UnknownError         | integrity      |
| file is not a database                     | NotADatabaseError        | integrity      |
| writing needed, database read-only         | ReadOnlyDatabaseError    | unavailable    |
| disk or page limit full                    | StorageFullError         | unavailable    |
| any other storage failure                  | StorageFailureError      | unavailable    |
| version 1 data that cannot migrate         | MigrationRefusedError    | integrity      |
| busy beyond the busy timeout               | StoreBusyError           | conflict       |
| store call inside its own transaction      | NestedStoreCallError     | invalid_input  |
| call on a closed store                     | StoreClosedError         | invalid_input  |

Classes that also derive from :class:`DatabaseRefusal` mean "the file or
database could not be opened or written"; the tools exit with status 3 for
them.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from convledger.errors import (
    ConflictError,
    DuplicateError,
    IntegrityError,
    InvalidInputError,
    LedgerError,
    NotSupportedError,
    UnavailableError,
)

# Primary result codes of SQLite (https://sqlite.org/rescode.html).
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_CONSTRAINT = 19
SQLITE_NOTADB = 26
SQLITE_CONSTRAINT_PRIMARYKEY = 1555
SQLITE_CONSTRAINT_UNIQUE = 2067


class DatabaseRefusal:
    """Marker: the file or database could not be opened or written (tools exit 3)."""


class SchemaTooNewError(NotSupportedError, DatabaseRefusal):
    """The file's schema version is newer than any this store knows (SQL-012)."""

    def __init__(self, message: str, *, found: int, supported: int) -> None:
        super().__init__(message, requirement="SQL-012", capability="migration")
        self.found = found
        self.supported = supported


class SchemaVersionError(IntegrityError, DatabaseRefusal):
    """The ``meta`` table holds no readable schema version (SQL-013)."""


class UnversionedSchemaError(IntegrityError, DatabaseRefusal):
    """The file holds tables but no ``meta`` table, so its version is unknown (SQL-014)."""

    def __init__(self, message: str, *, requirement: str, tables: tuple[str, ...]) -> None:
        super().__init__(message, requirement=requirement)
        self.tables = tables


class PartialSchemaError(IntegrityError, DatabaseRefusal):
    """Objects of the file's schema version are missing (SQL-015); ``missing`` names them."""

    def __init__(self, message: str, *, requirement: str, missing: tuple[str, ...]) -> None:
        super().__init__(message, requirement=requirement)
        self.missing = missing


class AlteredSchemaError(IntegrityError, DatabaseRefusal):
    """Objects exist with another definition than their version's (SQL-016)."""

    def __init__(self, message: str, *, requirement: str, altered: tuple[str, ...]) -> None:
        super().__init__(message, requirement=requirement)
        self.altered = altered


class Fts5UnavailableError(NotSupportedError, DatabaseRefusal):
    """This SQLite cannot create or use FTS5 tables; search is never silently off (SQL-017)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, requirement="SQL-017", capability="search")


class Fts5PartialError(IntegrityError, DatabaseRefusal):
    """The FTS5 table, a shadow table or a trigger is missing (SQL-018)."""

    def __init__(self, message: str, *, missing: tuple[str, ...]) -> None:
        super().__init__(message, requirement="SQL-018")
        self.missing = missing


class Fts5UnknownError(IntegrityError, DatabaseRefusal):
    """The FTS5 table or a trigger has other columns, tokenizer or body (SQL-019)."""

    def __init__(self, message: str, *, altered: tuple[str, ...]) -> None:
        super().__init__(message, requirement="SQL-019")
        self.altered = altered


class NotADatabaseError(IntegrityError, DatabaseRefusal):
    """The file is not an SQLite database (SQL-020)."""


class ReadOnlyDatabaseError(UnavailableError, DatabaseRefusal):
    """Writing is needed but the database or its file is read-only (SQL-021)."""


class StorageFullError(UnavailableError, DatabaseRefusal):
    """The disk or the database's page limit is full; nothing was written (SQL-046)."""


class StorageFailureError(UnavailableError, DatabaseRefusal):
    """Another failure of the file or the database engine (ERR-006)."""

    def __init__(self, message: str, *, requirement: str, code: str = "") -> None:
        super().__init__(message, requirement=requirement)
        self.code = code


class MigrationRefusedError(IntegrityError, DatabaseRefusal):
    """Version 1 rows that cannot become a baseline; the file stays version 1 (SQL-037)."""


class StoreBusyError(ConflictError):
    """Another connection held the write lock longer than the busy timeout (SQL-041, DUR-012)."""


class NestedStoreCallError(InvalidInputError):
    """A store call made inside the same store's transaction scope (SQL-044)."""


class StoreClosedError(InvalidInputError):
    """A call on a store handle after ``close`` (CAP interface)."""


def translate(error: sqlite3.Error, operation: str) -> LedgerError:
    """The ledger error for one driver error (ERR-006); ``operation`` names what failed."""
    code = getattr(error, "sqlite_errorcode", 0) or 0
    name = getattr(error, "sqlite_errorname", "") or type(error).__name__
    detail = f"{operation}: {error} ({name})"
    primary = code & 0xFF
    if primary in (SQLITE_BUSY, SQLITE_LOCKED):
        return StoreBusyError(f"database busy beyond the busy timeout; {detail}",
                              requirement="SQL-041")
    if primary == SQLITE_READONLY:
        return ReadOnlyDatabaseError(f"database is read-only; {detail}", requirement="SQL-021")
    if primary == SQLITE_FULL:
        return StorageFullError(f"database or disk is full; {detail}", requirement="SQL-046")
    if primary == SQLITE_NOTADB:
        return NotADatabaseError(f"not an SQLite database; {detail}", requirement="SQL-020")
    if code == SQLITE_CONSTRAINT_UNIQUE and "event_id" in str(error):
        return DuplicateError(f"eventId already stored; {detail}", requirement="LED-003",
                              identity="")
    if code == SQLITE_CONSTRAINT_PRIMARYKEY and "events" in str(error):
        return ConflictError(f"seq already taken; {detail}", requirement="LED-013")
    return StorageFailureError(f"storage failure; {detail}", requirement="ERR-006", code=name)


@contextlib.contextmanager
def driver_boundary(operation: str) -> Iterator[None]:
    """Run a block; re-raise any ``sqlite3.Error`` as its typed ledger error (ERR-006)."""
    try:
        yield
    except sqlite3.Error as error:
        raise translate(error, operation) from error
