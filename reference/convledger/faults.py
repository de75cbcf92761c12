"""The fault seam of the Python stores (chapter ``faults.md``, ids FLT-*).

A store that offers the seam (FLT-001) takes a :class:`FaultPlan` with
``inject(plan)``: from then on, before each *write point* of the store (each
statement that writes, each lock it takes for a write, each commit), the
store asks the plan whether that point fails, and when the plan names a
:class:`Fault` the store's driver raises that fault's own error in place of
running the statement. The error then travels the store's ordinary path: the
transaction rolls back and the driver boundary turns it into a typed refusal
(FLT-003), so the seam exercises the store's real failure handling, not a
copy of it. ``inject(None)`` ends the plan.

| fault       | SQLite raises                          | PostgreSQL raises     | kind (FLT-003) |
|-------------|----------------------------------------|-----------------------|----------------|
| `io_error`  | ``SQLITE_IOERR_WRITE``, ``_FSYNC`` at commit | ``58030 io_error`` | `unavailable` |
| `disk_full` | ``SQLITE_FULL``                        | ``53100 disk_full``   | `unavailable`  |
| `busy`      | ``SQLITE_BUSY``                        | ``55P03`` (lock)      | `conflict`     |

This module is the seam's vocabulary only; the plans that count and fail
points are the suite's (``convledger_conformance.faults``).
"""

from __future__ import annotations

import enum
import re
from typing import Protocol

import attrs


class Fault(enum.Enum):
    """What a failing write point fails with (FLT-002)."""

    IO_ERROR = "io_error"
    DISK_FULL = "disk_full"
    BUSY = "busy"


@attrs.frozen
class WritePoint:
    """One write point: ``commit``, ``lock`` or ``write``, and the statement that is its."""

    kind: str
    statement: str


class FaultPlan(Protocol):
    """Asked before each write point; the :class:`Fault` to raise there, or None (FLT-002)."""

    def at(self, point: WritePoint) -> Fault | None: ...


_WRITES = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b", re.I)
_COMMIT = re.compile(r"\s*(COMMIT|END|RELEASE)\b", re.I)
_PRAGMA_SET = re.compile(r"\s*PRAGMA\s+\w+\s*=", re.I)
_LOCK = re.compile(r"\bFOR\s+(UPDATE|NO\s+KEY\s+UPDATE|SHARE)\b", re.I)


def write_point(statement: str) -> WritePoint | None:
    """FLT-002: the write point a statement is, or None for reads and transaction control.

    Writes are data and schema statements and pragmas that set a value; a
    ``SELECT .. FOR UPDATE`` takes a write lock; ``COMMIT`` is where the
    engine makes the transaction durable (its fsync). ``BEGIN`` and
    ``ROLLBACK`` are not points: a failure to roll back is not a write that
    failed.
    """
    if _COMMIT.match(statement):
        return WritePoint("commit", statement)
    if _WRITES.match(statement) or _PRAGMA_SET.match(statement):
        return WritePoint("write", statement)
    if _LOCK.search(statement):
        return WritePoint("lock", statement)
    return None
