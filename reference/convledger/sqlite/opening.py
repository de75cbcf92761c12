"""Opening a database file: create, validate or migrate, or refuse (SQL-010 .. SQL-022).

Theory of operation
-------------------
1. Connect and configure the connection (busy timeout, ``synchronous``, the
   page size a new file gets). Nothing here writes the file. The FTS5 probe of
   step 3 runs first: ``temp`` takes the page size set last, and the probe costs
   twice the CPU in 16 KiB pages.
2. Begin the transaction *before* reading the table list: ``BEGIN IMMEDIATE``
   when the store may write, so that two processes opening one version 1 file
   cannot both migrate it (SQL-030); a deferred ``BEGIN`` for a read-only
   handle.
3. :func:`diagnose` the file: its schema version and every problem, in the
   order of the refusal table of ``errors.py``. It also probes FTS5 by
   creating and dropping a table in the ``temp`` schema (SQL-017).
4. Act: refuse with the first problem; create version 4 in an empty file;
   migrate a version 1, 2 or 3 file; accept a valid version 4 file. Commit (DUR-008).
5. Switch a file to WAL (SQL-042) only after the schema is settled, so a
   refused open has not touched a byte of the file (SQL-022, FLT-006).

Any failure rolls back, closes the connection and removes a file that did not
exist before the call (SQL-022).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import attrs

from convledger.errors import InvalidInputError, LedgerError
from convledger.kinds import KindRegistry
from convledger.sqlite import schema
from convledger.sqlite.errors import (
    AlteredSchemaError,
    Fts5PartialError,
    Fts5UnavailableError,
    Fts5UnknownError,
    PartialSchemaError,
    ReadOnlyDatabaseError,
    SchemaTooNewError,
    SchemaVersionError,
    UnversionedSchemaError,
    driver_boundary,
)
from convledger.sqlite.journal import use_wal
from convledger.sqlite.migration import MigrationReport, StepObserver, migrate

MEMORY = ":memory:"
SYNCHRONOUS_LEVELS = ("NORMAL", "FULL", "EXTRA")
"""Accepted ``synchronous`` settings (SQL-042); ``OFF`` is refused: it can corrupt a file."""


def utc_now() -> str:
    """The default clock: the current UTC time, RFC 3339 with milliseconds and ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def random_event_id() -> str:
    """The default id generator of baseline events: a random UUID."""
    return str(uuid.uuid4())


@attrs.frozen
class Settings:
    """How a store opens its file; ``reopen`` opens again with the same settings."""

    path: str
    read_only: bool = False
    synchronous: str = "FULL"
    busy_timeout: float = 5.0
    clock: Callable[[], str] = utc_now
    new_event_id: Callable[[], str] = random_event_id
    connection_hook: Callable[[sqlite3.Connection], None] | None = None
    connection_factory: type[sqlite3.Connection] = sqlite3.Connection
    """The class ``sqlite3.connect`` builds the connection with (its ``factory``)."""
    on_migration_step: StepObserver | None = None

    @property
    def in_memory(self) -> bool:
        """True for an SQLite in-memory database, which has no file."""
        return self.path == MEMORY


@attrs.frozen
class Diagnosis:
    """What :func:`diagnose` found; ``problems`` in the order an open would raise them."""

    version: int | None
    empty: bool
    fts5_available: bool
    problems: tuple[LedgerError, ...]

    @property
    def fts_status(self) -> str:
        """One word for people: ok, unavailable, partial, unknown or absent."""
        if not self.fts5_available:
            return "unavailable"
        for problem in self.problems:
            if isinstance(problem, Fts5PartialError):
                return "partial"
            if isinstance(problem, Fts5UnknownError):
                return "unknown"
        return "ok" if self.version is not None and self.version >= 2 else "absent"


@attrs.frozen
class Opened:
    """A connection over a settled schema, and what opening did to the file."""

    connection: sqlite3.Connection
    outcome: str
    """``created``, ``opened`` or ``migrated``."""
    migration: MigrationReport | None = None


def check_settings(settings: Settings) -> None:
    """Refuse settings that cannot work, before any file is touched (SQL-042)."""
    if settings.synchronous not in SYNCHRONOUS_LEVELS:
        raise InvalidInputError(
            f"synchronous must be one of {SYNCHRONOUS_LEVELS}, got {settings.synchronous!r}",
            requirement="SQL-042",
            field="synchronous",
        )
    timeout = settings.busy_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise InvalidInputError(
            f"busy_timeout must be a number of seconds >= 0, got {timeout!r}",
            requirement="SQL-041",
            field="busy_timeout",
        )


def connect(settings: Settings, *, page_size: bool = True) -> sqlite3.Connection:
    """A configured connection in autocommit mode; the store runs its own transactions.
    ``page_size=False`` leaves the page size to :func:`set_page_size` (module step 1)."""
    if settings.read_only and not settings.in_memory:
        target, uri = Path(settings.path).resolve().as_uri() + "?mode=ro", True
    else:
        target, uri = settings.path, False
    connection = sqlite3.connect(
        target,
        timeout=float(settings.busy_timeout),
        isolation_level=None,
        check_same_thread=False,
        uri=uri,
        factory=settings.connection_factory,
    )
    try:
        if settings.connection_hook is not None:
            settings.connection_hook(connection)
        connection.execute(f"PRAGMA synchronous = {settings.synchronous}")
        if page_size:
            set_page_size(connection, settings)
    except BaseException:
        connection.close()
        raise
    return connection


def set_page_size(connection: sqlite3.Connection, settings: Settings) -> None:
    """SQL-010: the page size of a file this connection creates (a file's own stays)."""
    if not settings.read_only:
        connection.execute(f"PRAGMA page_size = {schema.NEW_FILE_PAGE_SIZE}")


def open_database(settings: Settings, registry: KindRegistry) -> Opened:
    """Steps 1 to 5 of the module docstring; refusals leave the file untouched."""
    check_settings(settings)
    existed = settings.in_memory or os.path.exists(settings.path)
    writing = not settings.in_memory and not settings.read_only
    if writing and existed and not os.access(settings.path, os.W_OK):
        raise ReadOnlyDatabaseError(
            f"{settings.path!r} is not writable; open it read-only", requirement="SQL-021"
        )
    connection: sqlite3.Connection | None = None
    try:
        with driver_boundary(f"open {settings.path}"):
            connection = connect(settings, page_size=False)
            fts5 = fts5_available(connection)  # before the page size: module step 1
            set_page_size(connection, settings)
            opened = _settle(connection, settings, registry, fts5)
            if not settings.read_only and not settings.in_memory:
                use_wal(connection, settings.busy_timeout)
    except BaseException:
        if connection is not None:
            connection.close()
        if not existed:
            _remove_if_empty(settings.path)
        raise
    return opened


def _settle(
    connection: sqlite3.Connection, settings: Settings, registry: KindRegistry, fts5: bool
) -> Opened:
    connection.execute("BEGIN" if settings.read_only else "BEGIN IMMEDIATE")
    try:
        diagnosis = diagnose(connection, fts5=fts5)
        opened = _act(connection, diagnosis, settings, registry)
        connection.execute("COMMIT")
    except BaseException:
        rollback(connection)
        raise
    return opened


def _act(
    connection: sqlite3.Connection,
    diagnosis: Diagnosis,
    settings: Settings,
    registry: KindRegistry,
) -> Opened:
    if diagnosis.problems:
        raise diagnosis.problems[0]
    if diagnosis.empty:
        _refuse_read_only(settings, "an empty database needs its schema created")
        for statement in schema.creation_script(schema.LATEST_VERSION):
            connection.execute(statement)
        connection.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            (schema.VERSION_KEY, str(schema.LATEST_VERSION)),
        )
        return Opened(connection, "created")
    if diagnosis.version is not None and diagnosis.version < schema.LATEST_VERSION:
        _refuse_read_only(
            settings,
            f"a version {diagnosis.version} database needs migrating to version "
            f"{schema.LATEST_VERSION}",
        )
        report = migrate(
            connection,
            from_version=diagnosis.version,
            registry=registry,
            clock=settings.clock,
            new_event_id=settings.new_event_id,
            on_step=settings.on_migration_step,
        )
        return Opened(connection, "migrated", report)
    return Opened(connection, "opened")


def _refuse_read_only(settings: Settings, why: str) -> None:
    if settings.read_only:
        raise ReadOnlyDatabaseError(
            f"{why}, but {settings.path!r} was opened read-only", requirement="SQL-021"
        )


def diagnose(connection: sqlite3.Connection, *, fts5: bool | None = None) -> Diagnosis:
    """The schema version and every problem of the file (SQL-011 .. SQL-019).

    Reads only; call it inside a transaction so the answer is one snapshot. ``fts5`` is
    :func:`fts5_available`'s answer if the caller probed already (it touches ``temp`` only).
    """
    inventory = read_inventory(connection)
    fts5 = fts5_available(connection) if fts5 is None else fts5
    if not inventory:
        problems: list[LedgerError] = [] if fts5 else [_unavailable()]
        return Diagnosis(None, True, fts5, tuple(problems))
    version, version_problem = read_version(connection, inventory)
    if version_problem is not None:
        return Diagnosis(version, False, fts5, (version_problem,))
    assert version is not None
    problems = [] if fts5 else [_unavailable()]
    problems.extend(core_problems(inventory, version))
    if version >= 2:
        problems.extend(fts_problems(inventory, version))
    return Diagnosis(version, False, fts5, tuple(problems))


Inventory = dict[str, tuple[str, str]]
"""Schema objects of a file: name -> (type, DDL), without SQLite's own objects."""


def read_inventory(connection: sqlite3.Connection) -> Inventory:
    """Every table, index, view and trigger in ``sqlite_master`` (SQLite's own excepted)."""
    found = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return {
        name: (kind, sql or "") for kind, name, sql in found if not name.startswith("sqlite_")
    }


def read_version(
    connection: sqlite3.Connection, inventory: Inventory
) -> tuple[int | None, LedgerError | None]:
    """SQL-001, SQL-012 .. SQL-014: the version in ``meta``, or the problem that hides it."""
    if inventory.get(schema.META_TABLE, ("",))[0] != "table":
        tables = tuple(sorted(inventory))
        return None, UnversionedSchemaError(
            f"the file holds {', '.join(tables)} but no {schema.META_TABLE} table",
            requirement="SQL-014",
            tables=tables,
        )
    try:
        row = connection.execute(
            "SELECT value FROM meta WHERE key = ?", (schema.VERSION_KEY,)
        ).fetchone()
    except sqlite3.OperationalError:
        row = None
    text = row[0] if row is not None else None
    if not isinstance(text, str) or re.fullmatch(r"[1-9][0-9]{0,8}", text) is None:
        return None, SchemaVersionError(
            f"meta holds no readable schema_version (found {text!r})", requirement="SQL-013"
        )
    version = int(text)
    if version > schema.LATEST_VERSION:
        return version, SchemaTooNewError(
            f"schema version {version} is newer than {schema.LATEST_VERSION}, the newest this "
            "store knows",
            found=version,
            supported=schema.LATEST_VERSION,
        )
    return version, None


def core_problems(inventory: Inventory, version: int) -> list[LedgerError]:
    """SQL-015, SQL-016: missing and altered ordinary objects of ``version``."""
    expected = schema.core_objects(version)
    missing = tuple(item.name for item in expected if item.name not in inventory)
    altered = [
        item.name
        for item in expected
        if item.name in inventory and not _same(inventory[item.name], item)
    ]
    later: set[str] = set()
    if version == 1:
        later = {item.name for item in schema.V2_LEDGER + schema.V2_RUNTIME}
        later.add(schema.FTS_TABLE.name)
    if version < 4:  # SQL-016: the objects version 4 adds cannot be there yet
        later |= {item.name for item in schema.V4_OBJECTS}
    altered.extend(sorted(later & set(inventory)))
    problems: list[LedgerError] = []
    if missing:
        problems.append(
            PartialSchemaError(
                f"schema version {version} lacks {', '.join(missing)}",
                requirement="SQL-015",
                missing=missing,
            )
        )
    if altered:
        problems.append(
            AlteredSchemaError(
                f"schema version {version} defines {', '.join(altered)} otherwise",
                requirement="SQL-016",
                altered=tuple(altered),
            )
        )
    return problems


def fts_problems(inventory: Inventory, version: int) -> list[LedgerError]:
    """SQL-018, SQL-019, SQL-071: the FTS5 index of version 2, 3 or 4 is partial or unknown."""
    table = schema.FTS_TABLE
    triggers = schema.fts_triggers(version)
    if table.name in inventory and not _same(inventory[table.name], table):
        return [Fts5UnknownError(
            f"{table.name} is defined otherwise than version {version} defines it",
            altered=(table.name,),
        )]
    wanted = (table.name, *schema.FTS_SHADOW_TABLES, *(item.name for item in triggers))
    missing = tuple(name for name in wanted if name not in inventory)
    if missing:
        return [Fts5PartialError(f"the FTS5 index lacks {', '.join(missing)}", missing=missing)]
    altered = tuple(item.name for item in triggers if not _same(inventory[item.name], item))
    # SQL-071: versions 3 and 4 index from Python; version 2's insert trigger would index twice.
    if version >= 3 and schema.FTS_INSERT_TRIGGER.name in inventory:
        altered = (*altered, schema.FTS_INSERT_TRIGGER.name)
    if altered:
        return [Fts5UnknownError(f"FTS5 triggers defined otherwise: {', '.join(altered)}",
                                 altered=altered)]
    return []


def fts5_available(connection: sqlite3.Connection) -> bool:
    """SQL-017: can this connection create an FTS5 table? Probed in the ``temp`` schema."""
    try:
        connection.execute("CREATE VIRTUAL TABLE temp.convledger_fts5_probe USING fts5(text)")
    except sqlite3.DatabaseError as error:
        if (getattr(error, "sqlite_errorcode", 0) & 0xFF) not in (1, 23):  # FLT-004: I/O too
            raise  # only SQLITE_ERROR (no such module) or SQLITE_AUTH means no FTS5 here
        return False
    connection.execute("DROP TABLE temp.convledger_fts5_probe")
    return True


def _same(found: tuple[str, str], expected: schema.SchemaObject) -> bool:
    """SQL-011: the same type, and the same DDL once normalized (equal text is equal so)."""
    kind, sql = found
    if kind != expected.type:
        return False
    return sql == expected.sql or schema.normalize_sql(sql) == expected.normalized


def _unavailable() -> Fts5UnavailableError:
    return Fts5UnavailableError(
        "this SQLite cannot create FTS5 tables; the store will not run with search disabled"
    )


def rollback(connection: sqlite3.Connection) -> None:
    """End a failed transaction (FLT-005); a failing rollback must not hide the first error."""
    if connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")


def _remove_if_empty(path: str) -> None:
    """SQL-022: a file this open created, and refused, does not stay behind."""
    with contextlib.suppress(OSError):
        if os.path.getsize(path) == 0:
            os.remove(path)
