"""Fresh stores from the emptied schemas of closed ones (PGS-053).

A conformance run at profile ``ci`` makes thousands of stores, and a schema
costs about 0.2 s to create and 0.1 s to drop (measured on 2 cores under
load): most of a run. :func:`recycling_store_factory`, the one
:func:`new_schema_store` uses, keeps the schemas of closed stores instead.

When a store closes, its schema goes to one background worker, so that
closing costs the caller nothing. The worker asks the server whether any
connection of that schema is left (every connection of a store carries the
schema in its ``application_name``, :func:`convledger.postgres.driver.application_name`);
if none is, it deletes every row of the schema but ``meta``'s and renames the
schema to a new ``convledger_test_<uuid>`` in one transaction (so a locator or
a handle of the closed store can never reach the next store), and puts it in
the pool. A schema that still has a connection is dropped instead. The next
store the factory makes takes a schema from the pool when there is one and
skips the comparison with the catalog (``emptied=True``): the schema was
created by the store class and emptied by this process, with no other
connection on it. Whatever is pooled or live when the process exits is
dropped (the worker is drained first).
"""

from __future__ import annotations

import atexit
import queue
import threading
import uuid
from typing import Any

from convledger.postgres.driver import application_name, psycopg_module
from convledger.postgres.errors import driver_boundary
from convledger.postgres.factories import (
    _LIVE_LOCK,
    StoreMaker,
    configured_dsn,
    drop_schema,
    schema_prefix,
    track,
    untrack,
)
from convledger.postgres.store import PostgresStore

TABLES_TO_EMPTY = (
    "events", "conversations", "heads", "runs", "admissions", "messages", "purged", "children",
    "schedules", "projections", "spills", "search_words",
)
"""PGS-053: every table of schema version 2 that holds rows of a store (``meta`` stays)."""

OTHER_CONNECTIONS = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"

_POOL: dict[str, list[str]] = {}
"""Emptied schemas ready for the next store, by DSN (each one in the factories' live set too)."""
_CLOSED: queue.Queue[tuple[str, str] | None] = queue.Queue()
"""(dsn, schema) of closed stores, for the worker; None stops it."""
_WORKER: list[threading.Thread] = []


def recycle(dsn: str, schema: str) -> None:
    """PGS-053: empty and rename the schema of a closed store for the next one, or drop it."""
    psycopg = psycopg_module()
    sql = psycopg.sql
    fresh = f"{schema_prefix()}{uuid.uuid4().hex}"
    track(dsn, fresh)  # PGS-069: the guardian knows the new name before the rename commits
    try:
        with driver_boundary("recycle schema"), psycopg.connect(
            dsn, autocommit=True, connect_timeout=5
        ) as connection:
            found = connection.execute(
                OTHER_CONNECTIONS, (application_name(schema),)).fetchone()
            if found is None or int(found[0]) != 0:
                connection.close()
                untrack(dsn, fresh)
                drop_schema(dsn, schema)  # a handle is still connected: never reuse its schema
                return
            with connection.transaction():
                connection.execute("SET LOCAL lock_timeout = '30s'")
                connection.execute(sql.SQL("; ").join(
                    sql.SQL("DELETE FROM {}.{}").format(sql.Identifier(schema),
                                                        sql.Identifier(table))
                    for table in TABLES_TO_EMPTY))
                connection.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                    sql.Identifier(schema), sql.Identifier(fresh)))
    except BaseException:
        untrack(dsn, fresh)  # not renamed: the old name stays live and is dropped at exit
        raise
    untrack(dsn, schema)
    with _LIVE_LOCK:
        _POOL.setdefault(dsn, []).append(fresh)


_EXITING = threading.Event()
"""Set at exit: closed stores are no longer emptied for reuse, only dropped with the rest."""


def _work() -> None:
    while (item := _CLOSED.get()) is not None:
        try:
            if not _EXITING.is_set():
                recycle(*item)
        except Exception:  # left in the live set: dropped when the process exits
            pass
        finally:
            _CLOSED.task_done()
    _CLOSED.task_done()


def _closed(dsn: str, schema: str) -> None:
    with _LIVE_LOCK:
        if not _WORKER:
            worker = threading.Thread(target=_work, name="convledger-recycle", daemon=True)
            worker.start()
            _WORKER.append(worker)
    _CLOSED.put((dsn, schema))


def settle() -> None:
    """Wait until every closed store's schema is pooled or dropped."""
    if _WORKER:
        _CLOSED.join()


def _stop() -> None:
    _EXITING.set()  # what is still queued stays live: the factories' hook drops it at once
    if _WORKER:
        _CLOSED.put(None)
        _WORKER[0].join(timeout=60)


atexit.register(_stop)  # runs before the factories' hook, which drops what is left


def recycling_store_factory(
    dsn: str | None = None, *, store_class: type[PostgresStore] = PostgresStore, **options: Any
) -> StoreMaker:
    """A maker of fresh stores that reuses the emptied schemas of closed ones (PGS-053)."""

    def make() -> PostgresStore:
        target = configured_dsn() if dsn is None else dsn
        with _LIVE_LOCK:
            pooled = _POOL.get(target, [])
            emptied = bool(pooled)
            schema = pooled.pop() if pooled else f"{schema_prefix()}{uuid.uuid4().hex}"
        if not emptied:
            track(target, schema)
        try:
            return store_class(target, schema=schema, emptied=emptied,
                               on_close=lambda: _closed(target, schema), **options)
        except BaseException:
            drop_schema(target, schema)
            raise

    return make


_RECYCLING = recycling_store_factory()


def new_schema_store() -> PostgresStore:
    """A fresh store: ``--store convledger.postgres:new_schema_store`` (PGS-051, PGS-053)."""
    return _RECYCLING()


# Its pool of emptied schemas and the drops at exit are this process's: a forked copy
# would take the same pooled schemas and never drop its own (``--jobs`` refuses it).
new_schema_store.fork_safe = False  # type: ignore[attr-defined]
