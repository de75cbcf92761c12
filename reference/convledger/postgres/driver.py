"""The driver of the PostgreSQL store, psycopg 3, imported only when a store is made.

``convledger.postgres`` imports without psycopg installed: nothing here
imports it at module level. :func:`psycopg_module` imports it when a store is
constructed and, when it is missing, refuses with :class:`DriverMissingError`
(``not_supported``), whose message names the extra that installs it
(``pip install "convledger[postgres]"``).

:func:`connect` opens one connection in autocommit mode: the store begins and
ends every transaction itself (``BEGIN``, ``COMMIT``, ``ROLLBACK``), as the
SQLite store does, and sets the connection's ``search_path`` to the store's
schema so that every statement names its tables unqualified (PGS-002).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

import attrs

from convledger.errors import NotSupportedError

if TYPE_CHECKING:
    import psycopg

    Connection = psycopg.Connection[tuple[Any, ...]]
    """One connection of the store (rows as tuples)."""

EXTRA = "postgres"
"""The optional dependency group that installs the driver (pyproject.toml)."""
INSTALL = f'pip install "convledger[{EXTRA}]"'


class DriverMissingError(NotSupportedError):
    """psycopg 3 is not installed; the message names the extra that installs it."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the PostgreSQL store needs psycopg 3 ({detail}); install it with: {INSTALL}",
            requirement="PGS-001",
            capability="ledger",
        )


def psycopg_module() -> ModuleType:
    """``psycopg``, imported now; :class:`DriverMissingError` when it is not installed."""
    try:
        return importlib.import_module("psycopg")
    except ImportError as error:
        raise DriverMissingError(str(error)) from error


@attrs.frozen
class Settings:
    """What opening a connection needs; the same for every handle of one store."""

    dsn: str
    schema: str
    connect_timeout: float
    lock_timeout: float
    statement_timeout: float | None

    def to_json(self) -> dict[str, object]:
        """The settings that travel in a locator (LED-016)."""
        return {
            "dsn": self.dsn,
            "schema": self.schema,
            "connectTimeout": self.connect_timeout,
            "lockTimeout": self.lock_timeout,
            "statementTimeout": self.statement_timeout,
        }


APPLICATION_PREFIX = "convledger:"


def application_name(schema: str) -> str:
    """PGS-053: the ``application_name`` of every connection of a store: its schema's name."""
    return (APPLICATION_PREFIX + schema)[:63]


def connect(settings: Settings) -> Connection:
    """A new autocommit connection whose ``search_path`` is the store's schema (PGS-002).

    ``lock_timeout`` bounds the wait for a conversation's row lock (PGS-011);
    ``statement_timeout``, when set, bounds every statement (PGS-013). The
    caller runs this inside the driver boundary, which makes a server that
    cannot be reached ``unavailable``.
    """
    psycopg = psycopg_module()
    # PGS-070: the DSN may name several hosts (libpq: host=a,b, target_session_attrs=read-write);
    # every connection, a reconnection too (PGS-013), goes through it to the host taking writes.
    connection: Connection = psycopg.connect(
        settings.dsn,
        autocommit=True,
        connect_timeout=max(1, round(settings.connect_timeout)),
        application_name=application_name(settings.schema),
    )
    try:
        sql = psycopg.sql
        statements = [
            sql.SQL("SET search_path TO {}").format(sql.Identifier(settings.schema)),
            sql.SQL("SET lock_timeout = {}").format(
                sql.Literal(f"{round(settings.lock_timeout * 1000)}ms")),
        ]
        if settings.statement_timeout is not None:
            statements.append(sql.SQL("SET statement_timeout = {}").format(
                sql.Literal(f"{round(settings.statement_timeout * 1000)}ms")))
        connection.execute(sql.SQL("; ").join(statements))  # one round trip
    except BaseException:
        connection.close()
        raise
    return connection
