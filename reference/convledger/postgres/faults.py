"""The fault seam of the PostgreSQL store (FLT-001, FLT-002): its cursors ask the plan.

The store's statements all run through cursors of its one connection
(``connection.execute`` makes one with the connection's ``cursor_factory``).
``inject(plan)`` sets that factory to a subclass of ``psycopg.Cursor`` whose
``execute`` and ``executemany`` ask the plan before each write point
(:func:`convledger.faults.write_point`) and, when the plan names a fault,
raise the error the server reports for it instead of sending the statement:

| fault       | psycopg error (SQLSTATE)                 |
|-------------|------------------------------------------|
| `io_error`  | ``errors.IoError`` (58030 io_error)      |
| `disk_full` | ``errors.DiskFull`` (53100 disk_full)    |
| `busy`      | ``errors.LockNotAvailable`` (55P03)      |

:func:`convledger.postgres.errors.translate` types each as it types the
real one (FLT-003: ``unavailable``, ``unavailable``, ``conflict``).
``inject(None)`` puts back ``psycopg.Cursor``: without a plan nothing of this
module runs. psycopg is imported when a plan is injected, never at import.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from convledger.faults import Fault, FaultPlan, WritePoint, write_point
from convledger.postgres.driver import psycopg_module

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

_ERRORS = {Fault.IO_ERROR: "IoError", Fault.DISK_FULL: "DiskFull", Fault.BUSY: "LockNotAvailable"}
"""The class of ``psycopg.errors`` the server's report of each fault becomes."""


def driver_error(fault: Fault, point: WritePoint) -> Exception:
    """The psycopg error of ``fault`` at ``point``."""
    cls: type[Exception] = getattr(psycopg_module().errors, _ERRORS[fault])
    return cls(f"{fault.value} (injected at a {point.kind})")


def _text(query: Any, connection: Any) -> str:
    if isinstance(query, str):
        return query
    if isinstance(query, bytes):
        return query.decode("utf-8", "replace")
    return str(query.as_string(connection))


@functools.cache
def _cursor_base() -> type[Any]:
    psycopg = psycopg_module()

    class FaultingCursor(psycopg.Cursor):  # type: ignore[misc, name-defined]
        """A cursor that asks its class's ``fault_plan`` before each write point."""

        fault_plan: FaultPlan

        def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
            self._ask(query)
            return super().execute(query, params, **options)

        def executemany(self, query: Any, params_seq: Any, **options: Any) -> Any:
            self._ask(query)
            return super().executemany(query, params_seq, **options)

        def _ask(self, query: Any) -> None:
            point = write_point(_text(query, self.connection))
            if point is None:
                return
            fault = self.fault_plan.at(point)
            if fault is not None:
                raise driver_error(fault, point)

    return FaultingCursor


def cursor_factory(plan: FaultPlan | None) -> type[Any]:
    """The ``cursor_factory`` of a connection following ``plan`` (``psycopg.Cursor`` for None)."""
    if plan is None:
        return psycopg_module().Cursor  # type: ignore[no-any-return]
    return type("PlannedCursor", (_cursor_base(),), {"fault_plan": plan})


class FaultSeam:
    """FLT-001: ``inject`` of the PostgreSQL store: the plan its cursors ask from now on."""

    _connection: Connection
    _fault_plan: FaultPlan | None = None

    def inject(self, plan: FaultPlan | None) -> None:
        """Follow ``plan`` at every later write point of this handle; None ends it."""
        self._fault_plan = plan
        self._follow_plan()

    def _follow_plan(self) -> None:
        """Give the current connection (also one made after a lost one) the plan's cursors."""
        self._connection.cursor_factory = cursor_factory(self._fault_plan)
