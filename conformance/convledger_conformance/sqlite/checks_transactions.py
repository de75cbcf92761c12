"""Checks of chapter SQL, transactions and concurrency (SQL-040 .. SQL-047).

Writes begin IMMEDIATE and a held lock is a conflict (SQL-040, SQL-041);
durability settings (SQL-042); companions share their event's transaction
(SQL-043, SQL-044); an export reads in one transaction (SQL-045); a full disk
stores nothing (SQL-046); another process appends beside this one (SQL-047).
The statements a handle executes are recorded with SQLite's trace callback.
The helpers and the interface these checks need are those of
:mod:`convledger_conformance.sqlite.checks`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from functools import partial

from convledger.errors import LedgerError
from convledger.sqlite import SqliteStore
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import plain, sqlite_store, workspace
from convledger_conformance.support import draft, fail, refused


def traced_handle(store: SqliteStore, into: list[str]) -> SqliteStore:
    """Another connection onto the store's file that records every statement it executes."""
    return type(store)(store.path, connection_hook=lambda c: c.set_trace_callback(into.append))


def transactions(trace: Sequence[str]) -> list[list[str]]:
    """The statements of a trace grouped by transaction: each group opens with a BEGIN."""
    groups: list[list[str]] = []
    for statement in trace:
        if statement.lstrip().upper().startswith("BEGIN") or not groups:
            groups.append([])
        groups[-1].append(statement.strip())
    return groups


def opening_statements(groups: Sequence[Sequence[str]]) -> str:
    """A short text of traced transactions: how many, and how each opens and ends."""
    shown = [f"{group[0][:40]!r} .. {group[-1][:40]!r} ({len(group)} statements)"
             for group in groups]
    return f"{len(groups)} group(s): {shown}"


@check("SQL-040", "SQL-041", capability=Capability.MULTI_PROCESS,
       also=(Capability.MIGRATION,))
def check_sqlite_write_lock(ctx: CheckContext) -> None:
    """SQL-040, SQL-041: writes begin IMMEDIATE before any read; a held lock is a conflict.

    That the lock keeps seqs 1..n across handles and processes is LED-017,
    checked through the interface in :mod:`convledger_conformance.ledger.checks_handles`.
    """
    with sqlite_store(ctx, ["SQL-040", "SQL-041"]) as store:
        trace: list[str] = []
        traced = traced_handle(store, trace)
        try:
            writes: list[tuple[str, list[list[str]]]] = []
            trace.clear()
            traced.append("c", [draft("traced-1"), draft("traced-2")])
            writes.append(("append", transactions(trace)))
            archive = traced.export_conversation("c")
            trace.clear()
            with contextlib.suppress(LedgerError):  # a conflict: the log is not empty
                traced.import_conversation(archive)
            writes.append(("import", transactions(trace)))
        finally:
            traced.close()
        for operation, groups in writes:
            if len(groups) != 1 or groups[0][0].upper() != "BEGIN IMMEDIATE":
                fail("SQL-040", f"{operation}: expected one transaction opened by BEGIN "
                                f"IMMEDIATE before any read, got {opening_statements(groups)}")
        waiter = type(store)(store.path, busy_timeout=0.05)
        try:
            with store.write_transaction() as tx:
                tx.append("c", [draft("held")])
                try:
                    waiter.append("c", [draft("blocked")])
                except LedgerError as error:
                    if error.kind != "conflict":
                        fail("SQL-041", f"append while another connection holds the lock: "
                                        f"expected a conflict, got {error.kind!r}")
                except Exception as error:
                    fail("SQL-041", f"append while another connection holds the lock: "
                                    f"expected a conflict, raised {error!r}")
                else:
                    fail("SQL-040", "append while another connection holds the lock: "
                                    "expected to wait and be refused, it wrote")
        finally:
            waiter.close()
        if [e.event_id for e in store.read("c").items][-1] != "held":
            fail("SQL-041", "the refused append left part of itself stored")


@check("SQL-042", capability=Capability.PERSISTENCE, also=(Capability.MIGRATION,))
def check_sqlite_durability(ctx: CheckContext) -> None:
    """SQL-042: WAL and synchronous FULL by default, NORMAL on request, OFF refused."""
    with workspace(ctx, ["SQL-042"]) as (opener, directory):
        path = directory / "durable.sqlite"
        for setting, expected in ((None, 2), ("NORMAL", 1)):
            store = opener(path) if setting is None else opener(path, synchronous=setting)
            with store.write_transaction() as tx:
                found = (tx.execute("PRAGMA journal_mode")[0][0],
                         tx.execute("PRAGMA synchronous")[0][0])
            store.close()
            if found != ("wal", expected):
                fail("SQL-042", f"synchronous {setting or 'default'} gives {found!r}")
        try:
            opener(path, synchronous="OFF").close()
        except LedgerError as error:
            if error.kind != "invalid_input":
                fail("SQL-042", f"synchronous OFF refused as {error.kind!r}")
        else:
            fail("SQL-042", "synchronous OFF was accepted")


@check("SQL-043", "SQL-044", "ENV-005", capability=Capability.MIGRATION)
def check_sqlite_transaction_scope(ctx: CheckContext) -> None:
    """SQL-043, SQL-044: companions commit and roll back with their event; nested calls refused.

    The handle checks a conversationId as the store does (ENV-005): its ``head`` refused
    no empty or over-long id before the mutation run of issue 37 found it unchecked.
    """
    insert = "INSERT INTO projections VALUES (?, 'p', 1, ?, '{}', '2024-01-01T00:00:00Z')"
    with sqlite_store(ctx, ["SQL-043", "SQL-044"]) as store:
        with contextlib.suppress(RuntimeError), store.write_transaction() as tx:
            tx.append("a", [draft("a-1")])
            tx.execute(insert, ("a", 1))
            raise RuntimeError("fault after both writes")
        with store.write_transaction() as tx:
            tx.append("b", [draft("b-1")])
            tx.execute(insert, ("b", 1))
            try:
                store.head("b")
            except LedgerError as error:
                if error.kind != "invalid_input":
                    fail("SQL-044", f"a nested call was refused as {error.kind!r}")
            else:
                fail("SQL-044", "a call inside the store's own scope was served")
            if tx.append("b", [draft("b-2")])[0].seq != 2:
                fail("SQL-044", "the scope was not usable after the refused call")
            for bad in ("", "x" * 1025):  # ENV-005, LIM-001 hold inside the scope too (issue 37)
                refused(partial(tx.head, bad), "invalid_input", ("ENV-005", "SQL-043"),
                        f"the transaction handle's head({bad[:3]!r}...)")
        connection = plain(store.path)
        rows_ = connection.execute("SELECT conversation_id FROM projections").fetchall()
        connection.close()
        if rows_ != [("b",)] or store.head("a") != 0 or store.head("b") != 2:
            fail("SQL-043", f"companions {rows_!r} disagree with the committed events")


@check("SQL-045", capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_export_snapshot(ctx: CheckContext) -> None:
    """SQL-045: an export reads its events and companions in one read transaction.

    That exports taken beside other handles' appends hold whole batches is
    LED-018, checked through the interface in
    :mod:`convledger_conformance.ledger.checks_handles`.
    """
    with sqlite_store(ctx, ["SQL-045"]) as store:
        store.append("c", [draft("e-1"), draft("e-2")])
        trace: list[str] = []
        traced = traced_handle(store, trace)
        try:
            trace.clear()
            traced.export_conversation("c")
        finally:
            traced.close()
        groups = transactions(trace)
        reads = [statement for group in groups for statement in group
                 if statement.upper().startswith(("SELECT", "WITH"))]
        if (
            len(groups) != 1
            or groups[0][0].upper() not in ("BEGIN", "BEGIN DEFERRED")
            or groups[0][-1].upper() not in ("COMMIT", "END")
            or not reads
        ):
            fail("SQL-045", f"export: expected every read inside one BEGIN .. COMMIT, got "
                            f"{opening_statements(groups)}")


@check("SQL-046", capability=Capability.PERSISTENCE, also=(Capability.MIGRATION,))
def check_sqlite_full_disk(ctx: CheckContext) -> None:
    """SQL-046: a write past the page limit is an unavailable refusal that stores nothing."""

    def limit(connection: sqlite3.Connection) -> None:
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages + 4}")

    with workspace(ctx, ["SQL-046"]) as (opener, directory):
        path = directory / "full.sqlite"
        opener(path).close()
        store = opener(path, connection_hook=limit)
        try:
            store.append("c", [draft("small")])
            before = store.export_conversation("c")
            try:
                store.append("c", [draft(f"big-{n}", "x" * 4000) for n in range(200)])
            except LedgerError as error:
                if error.kind != "unavailable":
                    fail("SQL-046", f"a full database refused as {error.kind!r}")
            else:
                fail("SQL-046", "800 KB went into a database limited to 4 more pages")
            if store.export_conversation("c") != before:
                fail("SQL-046", "the refused write left part of itself stored")
        finally:
            store.close()


_WRITER = textwrap.dedent(
    """
    import importlib, sys
    from convledger.envelope import EventDraft
    module, name = sys.argv[1].split(":")
    store = getattr(importlib.import_module(module), name)(sys.argv[2], busy_timeout=60)
    for n in range(int(sys.argv[3])):
        store.append("shared", [EventDraft(
            event_id=f"child-{n}", kind="state/set", occurred_at="2024-01-01T00:00:00Z",
            payload={"name": "n", "version": 1, "value": n, "actor": "child"})])
    store.close()
    """
)


@check("SQL-047", capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_processes_share_a_file(ctx: CheckContext) -> None:
    """SQL-047: a process that opens the file by its path appends beside this one: 1..n.

    The child opens the file with the store class and the path, not through a
    locator: SQL-047 is about every process that opens the file (the
    ``convledger`` tools do so). Handles and processes opened through the
    interface are LED-017's, in :mod:`convledger_conformance.ledger.checks_handles`.
    """
    count = 60
    with sqlite_store(ctx, ["SQL-047"]) as store:
        cls = type(store)
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, f"{cls.__module__}:{cls.__qualname__}", store.path,
             str(count)],
            stderr=subprocess.PIPE,
        )
        try:
            for n in range(count):
                store.append("shared", [draft(f"parent-{n}")])
        finally:
            _, err = child.communicate(timeout=300)
        if child.returncode != 0:
            fail("SQL-047", f"the other process failed: {err.decode(errors='replace')}")
        events = store.read("shared", limit=1000).items
        if [e.seq for e in events] != list(range(1, 2 * count + 1)) or len(
            {e.event_id for e in events}
        ) != 2 * count:
            fail("SQL-047", "two processes appending left gaps or repeats")
