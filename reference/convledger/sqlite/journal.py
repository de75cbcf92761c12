"""The switch of an opened SQLite file to write-ahead logging (SQL-042).

It runs after the opening transaction of :mod:`convledger.sqlite.opening`
committed, so it is tried again where waiting can help rather than refuse an
open whose creation or migration already stands.
"""

from __future__ import annotations

import sqlite3
import time

from convledger.sqlite.errors import StorageFailureError


def use_wal(connection: sqlite3.Connection, busy_timeout: float) -> None:
    """SQL-042: WAL, waiting up to the busy timeout for another opener to finish.

    Switching a rollback-journal file (version 1) to WAL needs the exclusive
    lock. When another handle holds the write lock of its own open (migrating
    the same file) and waits to commit, SQLite answers this connection
    ``SQLITE_BUSY`` at once instead of calling the busy handler, since both
    waiting would deadlock; so the switch is tried again, after the other
    handle has committed, until the busy timeout (SQL-030, SQL-041).

    The switch comes after the opening transaction committed (a refused open
    leaves the file as it was, SQL-022), so a failure here would refuse an open
    whose migration or creation already stands. An I/O error or a full disk
    is therefore also tried again until the same deadline, absorbing a
    transient fault (FLT-004, FLT-006); one that lasts is raised and refuses
    the open as ``unavailable`` (FLT-003).
    """
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            break
        except sqlite3.OperationalError as error:
            if not _transient(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)
    if str(mode).lower() != "wal":
        raise StorageFailureError(
            f"could not switch the database to WAL (journal mode is {mode!r})",
            requirement="SQL-042",
        )


_TRANSIENT_AT_THE_SWITCH = ("locked", "disk I/O error", "database or disk is full")
"""What :func:`use_wal` tries again: busy, an I/O error, a full disk."""


def _transient(error: sqlite3.OperationalError) -> bool:
    return any(text in str(error) for text in _TRANSIENT_AT_THE_SWITCH)
