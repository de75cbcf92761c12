"""Factories and the locator's opener of the PostgreSQL store (LED-016, PGS-051).

A conformance run takes a factory, never a shared instance: each Hypothesis
example gets its own store. :func:`new_schema_store` makes each store in a
fresh schema ``convledger_test_<uuid>`` of the database ``CONVLEDGER_PG_DSN``
names (default :data:`DEFAULT_DSN`) and drops that schema when the store
closes (``reopen`` hands the duty to the reopened handle). Schemas a process
made and did not drop (a store never closed) are dropped when it exits, so a
run leaves the server as it found it.

A process killed with SIGKILL runs no exit hook: its guardian
(:mod:`convledger.postgres.guardian`, PGS-069) drops what it left. :func:`track`
and :func:`untrack` keep the live set and tell the guardian; at exit every
schema left is dropped in one statement per database (:func:`drop_schemas`),
so a server with many stores exits within the 5 s its client waits.

Fresh stores are cheap: :mod:`convledger.postgres.recycling` (PGS-053).

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
from convledger.postgres import guardian
from convledger.postgres.driver import psycopg_module
from convledger.postgres.errors import driver_boundary
from convledger.postgres.schema import RELATIONS
from convledger.postgres.store import PostgresStore

DSN_VARIABLE = "CONVLEDGER_PG_DSN"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
SCHEMA_PREFIX = "convledger_test_"
PREFIX_VARIABLE = "CONVLEDGER_PG_SCHEMA_PREFIX"
"""PGS-051: names another prefix for the schemas of fresh stores (runs side by side)."""


def schema_prefix() -> str:
    """The prefix of this process's schemas: ``CONVLEDGER_PG_SCHEMA_PREFIX`` or the default."""
    return os.environ.get(PREFIX_VARIABLE) or SCHEMA_PREFIX

StoreMaker = Callable[[], PostgresStore]

_LIVE: set[tuple[str, str]] = set()
"""(dsn, schema) of every schema this process made and has not dropped yet."""
_LIVE_LOCK = threading.Lock()


def configured_dsn() -> str:
    """The DSN of ``CONVLEDGER_PG_DSN``, or :data:`DEFAULT_DSN`."""
    return os.environ.get(DSN_VARIABLE) or DEFAULT_DSN


def track(dsn: str, schema: str) -> None:
    """PGS-051, PGS-069: ``schema`` is this process's to drop; its guardian knows it too."""
    with _LIVE_LOCK:
        _LIVE.add((dsn, schema))
    found = guardian.start()
    if found is not None:
        found.made(dsn, schema)


def untrack(dsn: str, schema: str) -> None:
    """``schema`` was dropped (or renamed away): neither this process nor its guardian drops it."""
    with _LIVE_LOCK:
        _LIVE.discard((dsn, schema))
    found = guardian.current()  # none yet: nothing was told, so nothing to take back
    if found is not None:
        found.dropped(dsn, schema)


def drop_schemas(dsn: str, schemas: list[str]) -> None:
    """Drop ``schemas`` and everything in them, in one statement (one connection, one lock)."""
    if not schemas:
        return
    psycopg = psycopg_module()
    sql = psycopg.sql
    with driver_boundary("drop schema"), psycopg.connect(dsn, autocommit=True,
                                                         connect_timeout=5) as connection:
        connection.execute("SET lock_timeout = '30s'")
        connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
            sql.SQL(", ").join(sql.Identifier(schema) for schema in schemas)))
    for schema in schemas:
        untrack(dsn, schema)


def drop_schema(dsn: str, schema: str) -> None:
    """Drop ``schema`` and everything in it (a test schema, when its store closes)."""
    drop_schemas(dsn, [schema])


def _drop_leftovers() -> None:
    """At exit: every schema left, one statement per database; the guardian gets the rest."""
    with _LIVE_LOCK:
        left = sorted(_LIVE)
    by_dsn: dict[str, list[str]] = {}
    for dsn, schema in left:
        by_dsn.setdefault(dsn, []).append(schema)
    for dsn, schemas in by_dsn.items():
        try:
            drop_schemas(dsn, schemas)
        except Exception:  # one at a time, so one busy schema does not keep the others
            for schema in schemas:
                try:
                    drop_schema(dsn, schema)
                except Exception:
                    continue
    guardian.release()


atexit.register(_drop_leftovers)


def schema_store_factory(dsn: str | None = None, **options: Any) -> StoreMaker:
    """A maker of stores, each in a new schema of ``dsn`` dropped when it closes."""

    def make() -> PostgresStore:
        target = configured_dsn() if dsn is None else dsn
        schema = f"{schema_prefix()}{uuid.uuid4().hex}"
        track(target, schema)
        try:
            return PostgresStore(target, schema=schema,
                                 on_close=lambda: drop_schema(target, schema), **options)
        except BaseException:
            drop_schema(target, schema)
            raise

    return make


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
