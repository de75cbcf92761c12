"""The fault seam of the SQLite store (FLT-001, FLT-002): its connection asks the plan.

Every connection of :class:`~convledger.sqlite.SqliteStore` is made from
:func:`faulting_factory` of its ``connection_factory``. While no plan is set,
which is always outside tests, its statements run through the base class
unchanged and at no extra cost; ``inject(plan)`` switches the connection to
the :func:`asking` subclass, whose ``execute`` and ``executemany`` (the only
two calls the store's statements go through) ask the ``fault_plan`` before
each write point (:func:`convledger.faults.write_point`), and ``inject(None)``
switches it back. When the plan names a fault, the connection raises the
``sqlite3.OperationalError`` SQLite itself raises for it, with its result
code, instead of running the statement:

| fault       | error code (name)                                  |
|-------------|----------------------------------------------------|
| `io_error`  | 778 ``SQLITE_IOERR_WRITE``; at a commit 1034 ``SQLITE_IOERR_FSYNC`` |
| `disk_full` | 13 ``SQLITE_FULL``                                 |
| `busy`      | 5 ``SQLITE_BUSY``                                  |

so :func:`convledger.sqlite.errors.translate` types it as it types the real
one (FLT-003: ``unavailable``, ``unavailable``, ``conflict``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from convledger.faults import Fault, FaultPlan, WritePoint, write_point

_FAULTS: dict[tuple[Fault, str], tuple[str, int, str]] = {
    (Fault.IO_ERROR, "write"): ("disk I/O error", 778, "SQLITE_IOERR_WRITE"),
    (Fault.IO_ERROR, "lock"): ("disk I/O error", 778, "SQLITE_IOERR_WRITE"),
    (Fault.IO_ERROR, "commit"): ("disk I/O error", 1034, "SQLITE_IOERR_FSYNC"),
    (Fault.DISK_FULL, "write"): ("database or disk is full", 13, "SQLITE_FULL"),
    (Fault.DISK_FULL, "lock"): ("database or disk is full", 13, "SQLITE_FULL"),
    (Fault.DISK_FULL, "commit"): ("database or disk is full", 13, "SQLITE_FULL"),
    (Fault.BUSY, "write"): ("database is locked", 5, "SQLITE_BUSY"),
    (Fault.BUSY, "lock"): ("database is locked", 5, "SQLITE_BUSY"),
    (Fault.BUSY, "commit"): ("database is locked", 5, "SQLITE_BUSY"),
}
"""The error SQLite raises for each fault at each kind of write point."""


def driver_error(fault: Fault, point: WritePoint) -> sqlite3.OperationalError:
    """The ``sqlite3`` error of ``fault`` at ``point``, with SQLite's result code and name."""
    message, code, name = _FAULTS[(fault, point.kind)]
    error = sqlite3.OperationalError(f"{message} (injected at a {point.kind})")
    error.sqlite_errorcode = code
    error.sqlite_errorname = name
    return error


class FaultingConnection(sqlite3.Connection):
    """A connection with the fault seam (FLT-002): :meth:`FaultSeam.inject` sets its plan.

    While no plan is set it runs every statement exactly as its base class
    does, at no cost per statement: only :func:`asking` subclasses override
    ``execute`` and ``executemany``, and ``inject`` moves a connection between
    the quiet class and its asking one (the two have one layout, so
    ``__class__`` may change on a live connection).
    """

    fault_plan: FaultPlan | None = None


class _Asks:
    """The override of an asking class: consult ``fault_plan`` before each write point."""

    __slots__ = ()
    fault_plan: FaultPlan | None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        self._ask(sql)
        return super().execute(sql, parameters)  # type: ignore[misc,no-any-return]

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        self._ask(sql)
        return super().executemany(sql, parameters)  # type: ignore[misc,no-any-return]

    def _ask(self, sql: str) -> None:
        plan = self.fault_plan
        if plan is None:
            return
        point = write_point(sql)
        if point is None:
            return
        fault = plan.at(point)
        if fault is not None:
            raise driver_error(fault, point)


_MADE: dict[type[sqlite3.Connection], type[FaultingConnection]] = {}
_ASKING: dict[type[FaultingConnection], type[FaultingConnection]] = {}
_QUIET: dict[type[FaultingConnection], type[FaultingConnection]] = {}


def faulting_factory(base: type[sqlite3.Connection]) -> type[FaultingConnection]:
    """``base`` with the seam: itself if it has it, else a subclass of both (made once)."""
    if issubclass(base, FaultingConnection):
        return base
    if base not in _MADE:
        _MADE[base] = type(f"Faulting{base.__name__}", (FaultingConnection, base), {})
    return _MADE[base]


def asking(quiet: type[FaultingConnection]) -> type[FaultingConnection]:
    """The subclass of ``quiet`` whose statements ask ``fault_plan`` first (made once)."""
    if quiet in _QUIET:  # already an asking class
        return quiet
    if quiet not in _ASKING:
        made = type(f"Asking{quiet.__name__}", (_Asks, quiet), {})
        _ASKING[quiet] = made
        _QUIET[made] = quiet
    return _ASKING[quiet]


def quiet(connection_class: type[FaultingConnection]) -> type[FaultingConnection]:
    """The class without the per-statement check that :func:`asking` made ``connection_class``
    from (itself when it asks nothing)."""
    return _QUIET.get(connection_class, connection_class)


def planned(plan: FaultPlan, base: type[sqlite3.Connection] = sqlite3.Connection) -> type[
    FaultingConnection
]:
    """A ``connection_factory`` whose connections follow ``plan`` from their first statement.

    What a store's ``inject`` cannot reach: the statements of opening a file,
    a migration among them (FLT-006), run before the store exists.
    """
    made = type("PlannedConnection", (faulting_factory(base),), {"fault_plan": plan})
    return asking(made)


class FaultSeam:
    """FLT-001: ``inject`` of the SQLite store: the plan its connection asks from now on."""

    _connection: sqlite3.Connection

    def inject(self, plan: FaultPlan | None) -> None:
        """Follow ``plan`` at every later write point of this handle; None ends it."""
        connection = self._connection
        if not isinstance(connection, FaultingConnection):  # made by faulting_factory always
            raise TypeError(f"{type(connection).__name__} has no fault seam")
        connection.fault_plan = plan
        base = quiet(type(connection))
        connection.__class__ = base if plan is None else asking(base)
