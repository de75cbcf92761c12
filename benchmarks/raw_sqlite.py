"""Same-run calibration: the statements a store runs, executed by bare ``sqlite3``.

Absolute timings on shared CI runners mean little; a store's time divided by
the time bare ``sqlite3`` needs for the SAME statements on the SAME schema
(triggers included), measured in the same run and interleaved with the store,
does. That quotient is what the gate budgets (issue 8): bare ``sqlite3`` with
pre-serialized rows is the physical floor of a schema in Python, so the ratio
says how much the store adds on top (validation, encoding, decoding, Python
objects).

What this module gives a benchmark:

* :class:`RawSqlite`: one bare connection on a schema (DDL plus pragmas),
  which runs a write transaction of given :class:`Statement` objects, a
  fetch, and a fetch whose JSON column is decoded with ``json.loads`` (the
  floor of a read that returns decoded envelopes).
* :func:`interleave`: run several contenders in rotating order, one call each
  per round, so machine drift (other jobs, CPU frequency, page cache) hits all
  of them alike; :func:`median` and :func:`spread` summarize the samples.
* :func:`cached_file`: build a large fixture file once (a 1e6-event ledger)
  and reuse it across runs.

The caller passes the store's own DDL and statements, so the floor always
matches the schema being measured. (``bench_sqlite.py`` does not build its
floor by hand: it records the store's statements and replays them, see
``convledger_bench``; this module is for experiments.)
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import attrs

from convledger_bench import interleave, median, spread

Row = Sequence[object]


@attrs.frozen
class Statement:
    """One SQL statement of a transaction, as the store would execute it.

    ``rows`` makes it an ``executemany`` over pre-serialized rows (a batch
    insert); ``fetch`` reads the result rows (a head lookup), so their cost
    counts as it does in the store.
    """

    sql: str
    params: Row = ()
    rows: Sequence[Row] | None = None
    fetch: bool = False


class RawSqlite:
    """A bare ``sqlite3`` connection on a given schema, in autocommit mode.

    ``ddl`` is one script (run with ``executescript``) or a sequence of single
    statements; ``pragmas`` run first, so ``page_size`` and ``journal_mode``
    apply to the new file exactly as the store sets them.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ddl: str | Sequence[str] = (),
        pragmas: Sequence[str] = (),
    ) -> None:
        self.path = Path(path)
        self.connection = sqlite3.connect(self.path, isolation_level=None)
        for pragma in pragmas:
            self.connection.execute(pragma).fetchall()
        if isinstance(ddl, str):
            self.connection.executescript(ddl)
        else:
            for statement in ddl:
                self.connection.execute(statement)

    def transaction(self, statements: Iterable[Statement], *, immediate: bool = True) -> None:
        """Run ``statements`` in one transaction (``BEGIN IMMEDIATE`` by default), then COMMIT.

        On any error the transaction is rolled back and the error re-raised.
        """
        cursor = self.connection.cursor()
        cursor.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        try:
            for statement in statements:
                if statement.rows is not None:
                    cursor.executemany(statement.sql, statement.rows)
                else:
                    cursor.execute(statement.sql, statement.params)
                    if statement.fetch:
                        cursor.fetchall()
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise

    def load(self, sql: str, rows: Iterable[Row], *, batch: int = 10_000) -> int:
        """Bulk-insert pre-serialized rows, ``batch`` per transaction; return how many."""
        count = 0
        chunk: list[Row] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) == batch:
                self.transaction([Statement(sql, rows=chunk)])
                count += len(chunk)
                chunk = []
        if chunk:
            self.transaction([Statement(sql, rows=chunk)])
            count += len(chunk)
        return count

    def fetch(self, sql: str, params: Row = ()) -> list[tuple[object, ...]]:
        """The rows of one query, as the store's driver would fetch them."""
        return self.connection.execute(sql, tuple(params)).fetchall()

    def fetch_decoded(self, sql: str, params: Row = (), *, column: int = 0) -> list[object]:
        """The rows of one query with the JSON text in ``column`` decoded by ``json.loads``.

        The floor of a bounded read that returns decoded envelopes: the fetch
        plus the cheapest possible decode, with no validation at all.
        """
        return [json.loads(row[column]) for row in self.connection.execute(sql, tuple(params))]

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


# -- interleaved timing ------------------------------------------------------------------
#
# ``interleave``, ``median`` and ``spread`` are ``convledger_bench``'s, re-exported:
# one implementation for these benchmarks and for an implementer's ``--bench`` run.

__all__ = [
    "RawSqlite",
    "Statement",
    "cached_file",
    "interleave",
    "median",
    "spread",
]


# -- large fixtures cached on disk -----------------------------------------------------------


def cached_file(cache_dir: Path, name: str, build: Callable[[Path], None]) -> Path:
    """``cache_dir / name``, built by ``build(path)`` the first time only.

    ``build`` writes a temporary path that is renamed into place when it
    returns, so an interrupted build never leaves a half-made file that a
    later run would trust. ``build`` must close its connections (checkpointing
    any WAL) before it returns. Change ``name`` when what ``build`` makes changes.
    """
    target = cache_dir / name
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = cache_dir / f".{name}.{os.getpid()}.partial"
    partial.unlink(missing_ok=True)
    try:
        build(partial)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target
