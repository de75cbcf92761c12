"""The guardian of a process's fresh schemas: it drops them when the process dies (PGS-069).

A process that makes fresh stores (``new_schema_store``, ``serve-wire --store
postgres``) drops their schemas when the stores close and, for those left,
when it exits (PGS-051). A process killed with SIGKILL runs neither: the
conformance client kills a server that does not exit within 5 s of the end of
its input, and the crash and fault checks kill servers on purpose. So the
first fresh schema of a process also starts its guardian, a small child
process (:func:`start`), and tells it every schema it makes and every one it
drops, one JSON line each on the guardian's standard input
(:func:`Guardian.made`, :func:`Guardian.dropped`).

The guardian only reads. Its input ends when the process that started it has
exited, however it ended (the kernel closes the pipe of a killed process;
children started later do not inherit it, ``close_fds``); the guardian then
drops every schema it was told about and not told gone, in one statement per
database, and exits. It ignores SIGINT and SIGTERM, so an interrupted run is
cleaned up too; a schema a connection still uses waits for the lock as long
as ``lock_timeout`` says, and a failed drop is retried one schema at a time.

Run as ``python -c`` with its own code (:data:`PROGRAM`), it needs psycopg and
nothing of the reference.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from typing import IO

PROGRAM = r"""
import json, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
left = {}
for line in sys.stdin:
    try:
        sign, dsn, schema = json.loads(line)
    except ValueError:
        continue
    if sign == "+":
        left.setdefault(dsn, set()).add(schema)
    else:
        left.get(dsn, set()).discard(schema)
import psycopg
from psycopg import sql
def drop(connection, names):
    connection.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
        sql.SQL(", ").join(sql.Identifier(name) for name in sorted(names))))
for dsn, names in left.items():
    if not names:
        continue
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as connection:
            connection.execute("SET lock_timeout = '30s'")
            try:
                drop(connection, names)
            except psycopg.Error:
                for name in names:
                    try:
                        drop(connection, [name])
                    except psycopg.Error:
                        pass
    except psycopg.Error:
        pass  # nobody reads it: .ci/run's scripts/pg_drop_leftovers.py reports what is left
"""
"""The guardian's whole program (PGS-069)."""


class Guardian:
    """The write end of one guardian's input."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._lock = threading.Lock()

    def _tell(self, sign: str, dsn: str, schema: str) -> None:
        stdin: IO[bytes] | None = self.process.stdin
        if stdin is None:
            return
        line = json.dumps([sign, dsn, schema]).encode("utf-8") + b"\n"
        with self._lock:
            try:
                stdin.write(line)
                stdin.flush()
            except (OSError, ValueError):  # the guardian is gone: atexit still drops
                pass

    def made(self, dsn: str, schema: str) -> None:
        """PGS-069: ``schema`` exists now; drop it if this process dies first."""
        self._tell("+", dsn, schema)

    def dropped(self, dsn: str, schema: str) -> None:
        """``schema`` is gone (or renamed): nothing to do for it any more."""
        self._tell("-", dsn, schema)


_GUARDIAN: list[Guardian | None] = []
_START_LOCK = threading.Lock()


def start() -> Guardian | None:
    """This process's guardian, started on first use; None when it cannot start."""
    with _START_LOCK:
        if not _GUARDIAN:
            try:
                environment = {**os.environ,
                               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
                process = subprocess.Popen(
                    [sys.executable, "-c", PROGRAM], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment,
                    close_fds=True,
                    start_new_session=True,  # a signal to the caller's group spares it
                )
            except OSError:
                _GUARDIAN.append(None)
            else:
                _GUARDIAN.append(Guardian(process))
        return _GUARDIAN[0]


def current() -> Guardian | None:
    """This process's guardian if one runs (never starts one)."""
    with _START_LOCK:
        return _GUARDIAN[0] if _GUARDIAN else None


def release() -> None:
    """At a normal exit, after this process dropped its schemas: end the guardian's input.

    A schema made afterwards (a test calling the exit hook itself) starts a new guardian.
    """
    with _START_LOCK:
        found = _GUARDIAN.pop() if _GUARDIAN else None
    if found is not None and found.process.stdin is not None:
        with contextlib.suppress(OSError):
            found.process.stdin.close()
