"""Factories and the locator's opener of the PostgreSQL store (LED-016, PGS-051).

A conformance run takes a factory, never a shared instance: each Hypothesis
example gets its own store. :func:`new_schema_store` makes each store in a
fresh schema ``convledger_test_<uuid>`` of the database ``CONVLEDGER_PG_DSN``
names (default :data:`DEFAULT_DSN`) and drops that schema when the store
closes (``reopen`` hands the duty to the reopened handle). Schemas a process
made and did not drop (a store never closed) are dropped when it exits, so a
run leaves the server as it found it.

Fresh stores are cheap (PGS-053)
--------------------------------
A conformance run at profile ``ci`` makes thousands of stores, and a schema
costs about 0.2 s to create and 0.1 s to drop (measured on 2 cores): most of a
run. :func:`recycling_store_factory`, the one :func:`new_schema_store` uses,
keeps the schemas of closed stores instead: when a store closes and no
connection of that schema is left on the server (every connection of a store
carries the schema in its ``application_name``), the factory deletes every
row of the schema in one transaction, renames the schema to a new
``convledger_test_<uuid>`` (so a locator or a handle of the closed store can
never reach the next store) and hands it to the next store it makes. That
store skips the comparison with the catalog (``emptied=True``): the schema
was created by this store class and emptied by this factory, in this process,
with no other connection on it. A schema that still has a
connection is dropped as before. Whatever the pool holds when the process
exits is dropped.

:func:`open_located_store` is the opener a store's locator names: the JSON
argument ``{"store", "dsn", "schema", "connectTimeout", "lockTimeout",
"statementTimeout"}`` of :meth:`PostgresStore.locator`. A locator carries the
DSN, so it is trusted configuration (as ``--store`` is).
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

from convledger.errors import InvalidInputError, NotFoundError
from convledger.handles import store_class
from convledger.postgres.driver import application_name, psycopg_module
from convledger.postgres.errors import driver_boundary
from convledger.postgres.schema import RELATIONS
from convledger.postgres.store import PostgresStore

DSN_VARIABLE = "CONVLEDGER_PG_DSN"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
SCHEMA_PREFIX = "convledger_test_"

StoreMaker = Callable[[], PostgresStore]

_LIVE: set[tuple[str, str]] = set()
"""(dsn, schema) of every schema this process made and has not dropped yet."""
_LIVE_LOCK = threading.Lock()


def configured_dsn() -> str:
    """The DSN of ``CONVLEDGER_PG_DSN``, or :data:`DEFAULT_DSN`."""
    return os.environ.get(DSN_VARIABLE) or DEFAULT_DSN


def drop_schema(dsn: str, schema: str) -> None:
    """Drop ``schema`` and everything in it (a test schema, when its store closes)."""
    psycopg = psycopg_module()
    sql = psycopg.sql
    with driver_boundary("drop schema"), psycopg.connect(dsn, autocommit=True,
                                                         connect_timeout=5) as connection:
        connection.execute("SET lock_timeout = '30s'")
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
            sql.Identifier(schema)))
    with _LIVE_LOCK:
        _LIVE.discard((dsn, schema))


def _drop_leftovers() -> None:
    with _LIVE_LOCK:
        left = sorted(_LIVE)
    for dsn, schema in left:
        try:
            drop_schema(dsn, schema)
        except Exception:
            continue


atexit.register(_drop_leftovers)


def schema_store_factory(dsn: str | None = None, **options: Any) -> StoreMaker:
    """A maker of stores, each in a new schema of ``dsn`` dropped when it closes."""

    def make() -> PostgresStore:
        target = configured_dsn() if dsn is None else dsn
        schema = f"{SCHEMA_PREFIX}{uuid.uuid4().hex}"
        with _LIVE_LOCK:
            _LIVE.add((target, schema))
        try:
            return PostgresStore(target, schema=schema,
                                 on_close=lambda: drop_schema(target, schema), **options)
        except BaseException:
            drop_schema(target, schema)
            raise

    return make


TABLES_TO_EMPTY = (
    "events", "conversations", "heads", "runs", "admissions", "messages", "purged", "children",
    "schedules", "projections", "spills", "search_words",
)
"""PGS-053: every table of schema version 2 that holds rows of a store (``meta`` stays)."""

_POOL: dict[str, list[str]] = {}
"""Emptied schemas ready for the next store, by DSN (each one in :data:`_LIVE` too)."""

OTHER_CONNECTIONS = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"


def _recycle(dsn: str, schema: str) -> None:
    """PGS-053: empty and rename the schema of a closed store for the next one, or drop it."""
    psycopg = psycopg_module()
    sql = psycopg.sql
    fresh = f"{SCHEMA_PREFIX}{uuid.uuid4().hex}"
    with driver_boundary("recycle schema"), psycopg.connect(dsn, autocommit=True,
                                                            connect_timeout=5) as connection:
        found = connection.execute(OTHER_CONNECTIONS, (application_name(schema),)).fetchone()
        if found is None or int(found[0]) != 0:
            connection.close()
            drop_schema(dsn, schema)  # a handle is still connected: never reuse its schema
            return
        with connection.transaction():
            connection.execute("SET LOCAL lock_timeout = '30s'")
            connection.execute(sql.SQL("; ").join(
                sql.SQL("DELETE FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(table))
                for table in TABLES_TO_EMPTY))
            connection.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                sql.Identifier(schema), sql.Identifier(fresh)))
    with _LIVE_LOCK:
        _LIVE.discard((dsn, schema))
        _LIVE.add((dsn, fresh))
        _POOL.setdefault(dsn, []).append(fresh)


def recycling_store_factory(
    dsn: str | None = None, *, store_class: type[PostgresStore] = PostgresStore, **options: Any
) -> StoreMaker:
    """A maker of fresh stores that reuses the emptied schemas of closed ones (PGS-053)."""

    def make() -> PostgresStore:
        target = configured_dsn() if dsn is None else dsn
        with _LIVE_LOCK:
            pooled = _POOL.get(target, [])
            emptied = bool(pooled)
            schema = pooled.pop() if pooled else f"{SCHEMA_PREFIX}{uuid.uuid4().hex}"
            _LIVE.add((target, schema))
        try:
            return store_class(target, schema=schema, emptied=emptied,
                                 on_close=lambda: _recycle(target, schema), **options)
        except BaseException:
            drop_schema(target, schema)
            raise

    return make


_RECYCLING = recycling_store_factory()


def new_schema_store() -> PostgresStore:
    """A fresh store: ``--store convledger.postgres:new_schema_store`` (PGS-051, PGS-053)."""
    return _RECYCLING()


_MEMBERS = frozenset(
    {"store", "dsn", "schema", "connectTimeout", "lockTimeout", "statementTimeout"}
)


def open_located_store(argument: str) -> PostgresStore:
    """Open the schema a locator's ``argument`` names, as the store class it names (PGS-052).

    A malformed argument is refused with ``invalid_input``; a schema that does
    not exist (any more) with ``not_found``, since opening it would create an
    empty store instead of reaching the one the locator was made for.
    """
    try:
        document = json.loads(argument)
    except (TypeError, ValueError) as error:
        raise _malformed(f"the argument is not JSON text: {error}") from error
    if not isinstance(document, dict) or set(document) != _MEMBERS:
        raise _malformed(f"the argument must be an object with exactly {sorted(_MEMBERS)}")
    dsn, schema = document["dsn"], document["schema"]
    if not isinstance(dsn, str) or not isinstance(schema, str) or not schema:
        raise _malformed("dsn and schema must be text")
    timeouts = [document[name] for name in ("connectTimeout", "lockTimeout")]
    statement = document["statementTimeout"]
    if any(isinstance(value, bool) or not isinstance(value, (int, float)) for value in timeouts):
        raise _malformed("connectTimeout and lockTimeout must be numbers of seconds")
    if statement is not None and (isinstance(statement, bool)
                                  or not isinstance(statement, (int, float))):
        raise _malformed("statementTimeout must be a number of seconds or null")
    cls = store_class(document["store"], PostgresStore, "open_located_store")
    if not _schema_exists(dsn, schema):
        raise NotFoundError(f"no PostgreSQL store in schema {schema!r}", requirement="PGS-052")
    return cls(dsn, schema=schema, connect_timeout=float(timeouts[0]),
               lock_timeout=float(timeouts[1]),
               statement_timeout=None if statement is None else float(statement))


def _schema_exists(dsn: str, schema: str) -> bool:
    psycopg = psycopg_module()
    with driver_boundary("open located"), psycopg.connect(dsn, autocommit=True,
                                                          connect_timeout=5) as connection:
        return connection.execute(RELATIONS, {"schema": schema}).fetchone() is not None


def _malformed(message: str) -> InvalidInputError:
    return InvalidInputError(f"open_located_store: {message}", requirement="LED-016",
                             field="argument")
