"""The statement recorder: the SQL statements, and their parameters, a reference SQLite store runs.

The raw floor replays exactly what the reference store asked ``sqlite3`` to
do, so the recorder must capture each ``execute`` and ``executemany`` call as
the store made it: the SQL text with its ``?`` placeholders, the parameters as
the store bound them, and ``executemany`` as one call over all its rows.

It does so through public seams of :class:`~convledger.sqlite.SqliteStore`
only: ``connection_factory=RecordingConnection`` makes the store's connection
a :class:`sqlite3.Connection` subclass that logs those calls while
:func:`recording` is on, and ``connection_hook`` hands that connection to the
harness. No private attribute of the store is read or replaced.

``Connection.set_trace_callback`` (installed from ``connection_hook``) was
considered and is not enough for the floor: SQLite reports each *step* with
the parameters expanded into literals (``executemany`` of 100 rows becomes
100 statement texts), repeats the statement at the start of every trigger
subprogram, and adds FTS5's internal statements as ``--`` comments. Replaying
expanded texts would make bare ``sqlite3`` parse a new ~1 kB statement per row
instead of binding values to one cached prepared statement, which is not the
floor the store is measured against. (``tests/test_bench.py`` uses the trace
to check, from SQLite's side, that a replay runs what the store ran.)
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from convledger.sqlite import SqliteStore

Statement = tuple[str, str, Any]
"""(``execute`` or ``executemany``, SQL, parameters) as the store passed them."""


class RecordingConnection(sqlite3.Connection):
    """An ``sqlite3`` connection that logs every statement it is given while :attr:`recording`.

    Outside :func:`recording` it behaves exactly as :class:`sqlite3.Connection`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recording = False
        self.log: list[Statement] = []

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        """Log (while recording), then run, one statement."""
        if self.recording:
            self.log.append(("execute", sql, parameters))
        return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        """Log (while recording, materialized), then run, one statement over many rows."""
        if not self.recording:
            return super().executemany(sql, parameters)
        materialized = [tuple(row) for row in parameters]
        self.log.append(("executemany", sql, materialized))
        return super().executemany(sql, materialized)

    def take(self) -> list[Statement]:
        """The statements logged since the last call."""
        taken, self.log = self.log, []
        return taken


def recording_store(path: Path) -> tuple[SqliteStore, RecordingConnection]:
    """A reference store on ``path`` and its connection, recording only inside :func:`recording`."""
    opened: list[RecordingConnection] = []

    def keep(connection: sqlite3.Connection) -> None:
        assert isinstance(connection, RecordingConnection), type(connection)
        opened.append(connection)

    store = SqliteStore(path, connection_factory=RecordingConnection, connection_hook=keep)
    (connection,) = opened
    return store, connection


@contextlib.contextmanager
def recording(connection: RecordingConnection) -> Iterator[RecordingConnection]:
    """Log the statements run on ``connection`` inside the block (``take`` them as they come)."""
    connection.take()
    connection.recording = True
    try:
        yield connection
    finally:
        connection.recording = False
