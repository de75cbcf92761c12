"""Typed refusals of the PostgreSQL store and the one boundary that translates driver errors.

Every class below is a subclass of one normative kind of ``convledger.errors``
(ERR-001). :func:`driver_boundary` is the only place where a psycopg error
becomes a ledger error (ERR-006, PGS-014): each store operation runs inside it,
so no raw driver exception reaches a caller.

| situation                                       | class                  | kind          |
|-------------------------------------------------|------------------------|---------------|
| psycopg not installed                           | DriverMissingError     | not_supported |
| schema version newer than this store            | SchemaTooNewError      | not_supported |
| schema version unreadable                       | SchemaVersionError     | integrity     |
| tables without a ``meta`` table                 | UnversionedSchemaError | integrity     |
| schema object missing                           | PartialSchemaError     | integrity     |
| schema object with another definition           | AlteredSchemaError     | integrity     |
| serialization failure or deadlock, retries spent| StoreConflictError     | conflict      |
| a row lock not granted within ``lock_timeout``  | StoreBusyError         | conflict      |
| server down, connection lost, refused           | ServerUnavailableError | unavailable   |
| statement timeout                               | StatementTimeoutError  | unavailable   |
| any other failure of the server                 | StorageFailureError    | unavailable   |
| call on a closed store                          | StoreClosedError       | invalid_input |

A serialization failure or a deadlock is not translated here: the boundary
raises :class:`RetryableFailure`, which the store's transaction loop catches
to run the whole transaction again (PGS-012); only when its attempts are spent
does the caller see :class:`StoreConflictError`.
"""

from __future__ import annotations

import contextlib
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
from convledger.postgres.driver import DriverMissingError, psycopg_module

__all__ = [
    "AlteredSchemaError",
    "DatabaseRefusal",
    "DriverMissingError",
    "PartialSchemaError",
    "RetryableFailure",
    "SchemaTooNewError",
    "SchemaVersionError",
    "ServerUnavailableError",
    "StatementTimeoutError",
    "StorageFailureError",
    "StoreBusyError",
    "StoreClosedError",
    "StoreConflictError",
    "UnversionedSchemaError",
    "driver_boundary",
]

EVENT_ID_CONSTRAINT = "events_event_id_key"
"""The unique constraint that refuses a repeated eventId in any conversation (PGS-004)."""


class DatabaseRefusal:
    """Marker: the database could not be opened or written (tools exit 3)."""


class SchemaTooNewError(NotSupportedError, DatabaseRefusal):
    """The schema's version is newer than any this store knows (PGS-021)."""

    def __init__(self, message: str, *, found: int, supported: int) -> None:
        super().__init__(message, requirement="PGS-021", capability="ledger")
        self.found = found
        self.supported = supported


class SchemaVersionError(IntegrityError, DatabaseRefusal):
    """The ``meta`` table holds no readable schema version (PGS-022)."""


class UnversionedSchemaError(IntegrityError, DatabaseRefusal):
    """The schema holds relations but no ``meta`` table, so its version is unknown (PGS-022)."""

    def __init__(self, message: str, *, tables: tuple[str, ...]) -> None:
        super().__init__(message, requirement="PGS-022")
        self.tables = tables


class PartialSchemaError(IntegrityError, DatabaseRefusal):
    """Objects of the schema's version are missing (PGS-023); ``missing`` names them."""

    def __init__(self, message: str, *, missing: tuple[str, ...]) -> None:
        super().__init__(message, requirement="PGS-023")
        self.missing = missing


class AlteredSchemaError(IntegrityError, DatabaseRefusal):
    """Objects exist with another definition than their version's (PGS-023)."""

    def __init__(self, message: str, *, altered: tuple[str, ...]) -> None:
        super().__init__(message, requirement="PGS-023")
        self.altered = altered


class StoreConflictError(ConflictError):
    """A serialization failure or deadlock outlived the store's retries (PGS-012)."""


class StoreBusyError(ConflictError):
    """A conversation's row lock was not granted within ``lock_timeout`` (PGS-011)."""


class ServerUnavailableError(UnavailableError, DatabaseRefusal):
    """The server cannot be reached, is shutting down, or the connection was lost (PGS-013)."""


class StatementTimeoutError(UnavailableError):
    """A statement ran past ``statement_timeout`` and was cancelled (PGS-013)."""


class StorageFailureError(UnavailableError, DatabaseRefusal):
    """Another failure of the server (ERR-006)."""

    def __init__(self, message: str, *, requirement: str, code: str = "") -> None:
        super().__init__(message, requirement=requirement)
        self.code = code


class StoreClosedError(InvalidInputError):
    """A call on a store handle after ``close`` (CAP interface)."""


class RetryableFailure(Exception):
    """A serialization failure or deadlock: the transaction may run again (PGS-012)."""

    def __init__(self, cause: BaseException, operation: str) -> None:
        super().__init__(f"{operation}: {cause}")
        self.cause = cause


def translate(error: Exception, operation: str) -> LedgerError | RetryableFailure:
    """The ledger error for one driver error (ERR-006, PGS-014)."""
    psycopg = psycopg_module()
    errors = psycopg.errors
    state = getattr(getattr(error, "diag", None), "sqlstate", None) or ""
    detail = f"{operation}: {error} (SQLSTATE {state or 'none'})"
    if isinstance(error, (errors.SerializationFailure, errors.DeadlockDetected)):
        return RetryableFailure(error, operation)
    if isinstance(error, errors.LockNotAvailable):
        return StoreBusyError(f"a row lock was not granted in time; {detail}",
                              requirement="PGS-011")
    if isinstance(error, errors.QueryCanceled):
        return StatementTimeoutError(f"statement cancelled; {detail}", requirement="PGS-013")
    if isinstance(error, errors.UniqueViolation):
        constraint = getattr(error.diag, "constraint_name", None)
        if constraint == EVENT_ID_CONSTRAINT:
            return DuplicateError(f"eventId already stored; {detail}", requirement="LED-003",
                                  identity="")
        return ConflictError(f"a concurrent write took the row first; {detail}",
                             requirement="PGS-011")
    if isinstance(error, psycopg.DataError):
        return InvalidInputError(f"the server refused a value; {detail}",
                                 requirement="ERR-006")
    # PGS-013, ERR-013: a lost connection is unavailable; after a COMMIT was sent, indeterminate.
    if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
        return ServerUnavailableError(f"the server is unavailable; {detail}",
                                      requirement="PGS-013")
    return StorageFailureError(f"storage failure; {detail}", requirement="ERR-006", code=state)


@contextlib.contextmanager
def driver_boundary(operation: str) -> Iterator[None]:
    """Run a block; re-raise any psycopg error as its typed ledger error (ERR-006, PGS-014)."""
    try:
        yield
    except LedgerError:
        raise
    except Exception as error:
        if not _is_driver_error(error):
            raise
        raise translate(error, operation) from error


def _is_driver_error(error: Exception) -> bool:
    psycopg = psycopg_module()
    return isinstance(error, psycopg.Error)
