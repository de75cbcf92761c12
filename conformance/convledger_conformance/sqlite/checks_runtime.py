"""Checks of chapter SQL, runtime part: runtime objects and purge (SQL-050, SQL-051, SQL-056 ..).

This module checks the runtime schema objects (SQL-050, SQL-051, SQL-057) and
the rows a purge deletes (SQL-050, SQL-056, SQL-069), and holds the helpers of
every runtime SQL check; the others are in
:mod:`~convledger_conformance.sqlite.checks_runtime_transactions` (SQL-052,
SQL-053) and :mod:`~convledger_conformance.sqlite.checks_runtime_records`
(SQL-051, SQL-054, SQL-055, SQL-057).

Like :mod:`convledger_conformance.sqlite.checks`, these checks need the factory to make
:class:`convledger.sqlite.SqliteStore` instances (or subclasses) on files, and
they run under the capability ``migration`` (``multi_process`` where a second
handle is opened), which only a store on a file declares (SQL-048); such a
store must also declare ``transitions`` and ``purge``. Beside the store API
they look at three things the store cannot hide: the rows of the file, read
with plain ``sqlite3`` connections; the statements a handle executes, recorded
with SQLite's trace callback installed by the ``connection_hook`` option; and
the query plans SQLite makes for those statements.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

from convledger.errors import LedgerError
from convledger.runtime.operations import PurgeOutcome
from convledger.runtime.transitions import (
    Accept,
    Acquire,
    Checkpoint,
    Fence,
    Interrupt,
    Operation,
    Terminal,
    Transition,
)
from convledger.runtime.view import Status
from convledger.sqlite import SqliteStore, schema
from convledger.sqlite.fixtures import sample_v1_rows, write_v1_database
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import plain, sqlite_store, workspace
from convledger_conformance.support import STAMP, draft, fail

PURGED_AT = "2026-04-01T08:00:00.000Z"
"""The purge time the injected clock gives (SQL-050)."""
ROW_TABLES: tuple[tuple[str, str], ...] = (
    ("events", "conversation_id"),
    ("events_fts", "conversation_id"),
    ("search_pending", "conversation_id"),
    ("heads", "conversation_id"),
    ("runs", "conversation_id"),
    ("admissions", "conversation_id"),
    ("messages", "conversation_id"),
    ("projections", "conversation_id"),
    ("spills", "conversation_id"),
    ("schedules", "conversation_id"),
    ("children", "parent_conversation_id"),
    ("children", "child_conversation_id"),
)
"""Every table that holds rows of a conversation, by the column naming it (SQL-056, SQL-073:
an event's index row or its pending row)."""
_INDEX_TABLES = ("events_fts.conversation_id", "search_pending.conversation_id")
RUNTIME_TABLES = ("heads", "runs", "admissions", "messages")

Traced = list[str]


# -- shared helpers ----------------------------------------------------------------------------


@contextlib.contextmanager
def runtime_store(ctx: CheckContext, ids: Sequence[str]) -> Iterator[SqliteStore]:
    """A fresh SQLite store on a file that declares transitions and purge (SQL-048)."""
    with sqlite_store(ctx, ids) as store:
        missing = {Capability.TRANSITIONS, Capability.PURGE} - store.capabilities
        if missing:
            fail(ids, f"an SQLite store on a file must declare {sorted(c.value for c in missing)}")
        yield store


def tracing(into: Traced) -> Callable[[sqlite3.Connection], None]:
    """A connection hook recording every statement the connection executes."""

    def hook(connection: sqlite3.Connection) -> None:
        connection.set_trace_callback(into.append)

    return hook


def applied(store: SqliteStore, conversation: str, steps: Sequence[Transition], ids: Sequence[str],
            *, prefix: str = "t") -> None:
    """Apply ``steps`` in order; each must apply (the script is valid by the rules of TRN)."""
    for number, step in enumerate(steps, start=1):
        outcome = store.transition(conversation, step, event_id=f"{prefix}-{conversation}-{number}",
                                   occurred_at=f"2026-02-01T00:00:{number:02d}Z")
        if outcome.status is not Status.APPLIED:
            fail(ids, f"transition {step!r} on {conversation!r} was {outcome.status.value}")


def finished_script(suffix: str = "") -> list[Transition]:
    """A run admitted twice (coalesced), taken, checkpointed, stepped and ended; one interrupted.

    The second accept joins the queued run (revision 1, TRN-023); acquire takes
    it to revision 2 and token 1; each fenced write moves the revision on.
    """
    owner = f"w{suffix}"
    return [
        Accept(f"k-1{suffix}", f"in-1{suffix}", f"r-1{suffix}", f"a-1{suffix}", {"text": "hi"}),
        Accept(f"k-2{suffix}", f"in-2{suffix}", f"r-2{suffix}", f"a-2{suffix}", {"text": "and"}),
        Acquire(f"r-1{suffix}", owner),
        Checkpoint(f"r-1{suffix}", Fence(owner, 2, 1),
                   {"id": "d", "status": "streaming", "parts": ["pa", "rt"]}),
        Operation(f"r-1{suffix}", Fence(owner, 3, 1), {"tool": "search"}),
        Terminal(f"r-1{suffix}", Fence(owner, 4, 1), "success", {"text": "done"}),
        Accept(f"k-3{suffix}", f"in-3{suffix}", f"r-3{suffix}", f"a-3{suffix}", {"text": "x"}),
        Interrupt(f"r-3{suffix}"),
    ]


def active_script(suffix: str = "") -> list[Transition]:
    """A running run (owned, recoverable) and a queued one behind it."""
    return [
        Accept(f"k-1{suffix}", f"in-1{suffix}", f"r-1{suffix}", f"a-1{suffix}", {"text": "go"}),
        Acquire(f"r-1{suffix}", f"w{suffix}"),
        Accept(f"k-2{suffix}", f"in-2{suffix}", f"r-2{suffix}", f"a-2{suffix}", {"text": "next"}),
    ]


def conversation_rows(path: str | Path, conversation: str) -> dict[str, list[tuple[object, ...]]]:
    """Every row of ``conversation`` in every table that holds its rows, in a fixed order."""
    connection = plain(path)
    try:
        return {
            f"{table}.{column}": sorted(
                (tuple(row) for row in connection.execute(
                    f"SELECT * FROM {table} WHERE {column} = ?", (conversation,))),
                key=repr,
            )
            for table, column in ROW_TABLES
        }
    finally:
        connection.close()


def whole_file(path: str | Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table that holds conversation rows, plus ``purged``."""
    connection = plain(path)
    try:
        tables = sorted({table for table, _ in ROW_TABLES} | {"purged"})
        return {
            table: sorted((tuple(row) for row in connection.execute(f"SELECT * FROM {table}")),
                          key=repr)
            for table in tables
        }
    finally:
        connection.close()


def refused(call: Callable[[], object], kind: str, ids: Sequence[str], what: str) -> None:
    """Expect ``call`` to raise a ledger error of ``kind``."""
    try:
        call()
    except LedgerError as error:
        if error.kind != kind:
            fail(ids, f"{what}: refused as {error.kind!r}, expected {kind!r} ({error!r})")
        return
    except Exception as error:
        fail(ids, f"{what}: raised {error!r}, expected a ledger error of kind {kind!r}")
    fail(ids, f"{what}: accepted, expected a refusal of kind {kind!r}")


_CONTROL = re.compile(r"\s*(BEGIN|COMMIT|END|ROLLBACK)\b", re.IGNORECASE)


def transactions(trace: Sequence[str]) -> list[list[str]]:
    """The statements of a trace grouped by transaction, each from its BEGIN to its end."""
    groups: list[list[str]] = []
    current: list[str] | None = None
    for statement in trace:
        if re.match(r"\s*BEGIN\b", statement, re.IGNORECASE):
            current = [statement]
            groups.append(current)
        elif current is not None:
            current.append(statement)
            if _CONTROL.match(statement):
                current = None
    return groups


def _position(group: Sequence[str], pattern: str) -> int | None:
    compiled = re.compile(pattern, re.IGNORECASE)
    return next((n for n, sql in enumerate(group) if compiled.search(sql)), None)


# -- schema objects (SQL-050, SQL-051, SQL-057) --------------------------------------------------


def _check_runtime_objects(path: str | Path, ids: Sequence[str], what: str) -> None:
    connection = plain(path)
    try:
        stored = {(kind, name): sql for kind, name, sql in connection.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL")}
    finally:
        connection.close()
    blame = {"purged": "SQL-050", "runs_active": "SQL-051", "runs_recoverable": "SQL-051"}
    for item in schema.V2_RUNTIME:
        found = stored.get((item.type, item.name))
        if found is None or schema.normalize_sql(found) != item.normalized:
            fail(blame.get(item.name, "SQL-057"),
                 f"{what}: {item.type} {item.name} is missing or defined as {found!r}")


@check("SQL-050", "SQL-051", "SQL-057", capability=Capability.MIGRATION)
def check_sqlite_runtime_schema_objects(ctx: CheckContext) -> None:
    """SQL-050, SQL-051, SQL-057: purged and the runtime indexes as defined, new or migrated.

    Dropping any one of them makes the file unopenable (integrity): the store
    never serves a file whose bounded reads would scan or whose tombstones are gone.
    """
    ids = ("SQL-050", "SQL-051", "SQL-057")
    with runtime_store(ctx, ids) as store:
        _check_runtime_objects(store.path, ids, "a new file")
    with workspace(ctx, ids) as (opener, directory):
        v1 = directory / "v1.sqlite"
        write_v1_database(v1, sample_v1_rows())
        opener(v1).close()
        _check_runtime_objects(v1, ids, "a migrated file")
        for number, item in enumerate(schema.V2_RUNTIME):
            path = directory / f"without-{number}.sqlite"
            opener(path).close()
            connection = plain(path)
            connection.execute(f"DROP {item.type.upper()} {item.name}")
            connection.close()
            requirement = "SQL-050" if item.name == "purged" else (
                "SQL-051" if item.name.startswith("runs_") and "assistant" not in item.name
                else "SQL-057")
            refused(partial(_open_and_close, opener, path), "integrity", [requirement],
                    f"a file without {item.name}")


def _open_and_close(opener: Callable[..., SqliteStore], path: Path) -> None:
    opener(path).close()


# -- tombstones and purge (SQL-050, SQL-056) ------------------------------------------------------


def _companion_rows(store: SqliteStore, conversation: str, other: str) -> None:
    """Rows of every table kept beside the ledger, written with an event (SQL-043)."""
    with store.write_transaction() as tx:
        tx.append(conversation, [draft(f"side-{conversation}", {"note": "zebra"})])
        tx.execute("INSERT INTO projections VALUES (?, 'p', 1, 1, '{}', ?)",
                   (conversation, STAMP))
        tx.execute("INSERT INTO spills VALUES"
                   " (?, 'ref', 'text/plain', 1, 'h', 'a', 1, NULL, x'00')", (conversation,))
        tx.execute("INSERT INTO schedules VALUES (?, 's', NULL, 'armed', '{}')", (conversation,))
        tx.execute("INSERT INTO children VALUES (?, ?, 'open', 1, '{}')", (conversation, other))
        tx.execute("INSERT INTO children VALUES (?, ?, 'open', 1, '{}')", (other, conversation))


def _deny_delete_from(table: str) -> Callable[[sqlite3.Connection], None]:
    """A connection hook: statements deleting from ``table`` cannot be prepared."""

    def hook(connection: sqlite3.Connection) -> None:
        def authorize(action: int, first: str | None, *_: str | None) -> int:
            if action == sqlite3.SQLITE_DELETE and first == table:
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK

        connection.set_authorizer(authorize)

    return hook


@check("SQL-050", "SQL-056", "SQL-069", capability=Capability.MIGRATION)
def check_sqlite_purge_rows(ctx: CheckContext) -> None:
    """SQL-050, SQL-056, SQL-069: a purge deletes its conversation's rows in one transaction.

    Every table (FTS5 included) but ``children`` loses exactly the
    conversation's rows, and the child links naming it stay (SQL-069); the
    tombstone carries the injected clock's time and survives a second purge,
    refused writes and a reopen; active runs refuse the purge with nothing
    deleted; a purge that fails half way deletes nothing.
    """
    ids = ("SQL-050", "SQL-056", "SQL-069")
    with runtime_store(ctx, ids), workspace(ctx, ids) as (opener, directory):
        path = directory / "purge.sqlite"
        trace: Traced = []
        store = opener(path, clock=lambda: PURGED_AT, connection_hook=tracing(trace))
        try:
            for conversation in ("c\x00ü", "other"):
                applied(store, conversation, finished_script(), ids)
                _companion_rows(store, conversation, "other" if conversation != "other" else "x")
            applied(store, "busy", active_script(), ids)
            untouched = conversation_rows(path, "other")
            whole = whole_file(path)
            refused(lambda: store.purge("busy"), "conflict", ["SQL-056"],
                    "a purge of a conversation with active runs")
            if whole_file(path) != whole:
                fail("SQL-056", "a refused purge changed the file")
            # a purge whose last delete cannot run: nothing of it may remain
            failing = opener(path, connection_hook=_deny_delete_from("schedules"))
            with contextlib.suppress(Exception):
                failing.purge("c\x00ü")
            failing.close()
            if whole_file(path) != whole:
                fail("SQL-056", "a purge that failed half way left part of itself in the file")
            found = conversation_rows(path, "c\x00ü")
            before = [rows for name, rows in found.items() if name not in _INDEX_TABLES]
            if not all(before[:-2]) or not before[-1] or not any(
                found[name] for name in _INDEX_TABLES
            ):
                fail("SQL-056", "the set-up did not give the conversation rows in every table")
            del trace[:]
            if store.purge("c\x00ü") is not PurgeOutcome.PURGED:
                fail("SQL-056", "the first purge did not answer purged")
            _check_purge_transaction(trace)
            remaining = conversation_rows(path, "c\x00ü")
            left = {t: r for t, r in remaining.items() if r and not t.startswith("children.")}
            if left:
                fail("SQL-056", f"after the purge the conversation still has rows: {left!r}")
            links = {t: r for t, r in remaining.items() if t.startswith("children.")}
            if links != {t: r for t, r in found.items() if t.startswith("children.")}:
                fail("SQL-069", "the purge deleted or changed the child links naming it")
            kept = conversation_rows(path, "other")
            expected = untouched  # the links between the two stay (SQL-069)
            if kept != expected:
                fail("SQL-056", "the purge deleted or changed rows of another conversation")
            _expect_tombstone(path, "c\x00ü")
            if store.purge("c\x00ü") is not PurgeOutcome.ALREADY_PURGED:
                fail("SQL-050", "a second purge did not answer already_purged")
            refused(lambda: store.append("c\x00ü", [draft("late")]), "purged", ["SQL-050"],
                    "an append after the purge")
        finally:
            store.close()
        reopened = opener(path, clock=lambda: "2027-01-01T00:00:00Z")
        try:
            if reopened.purge("c\x00ü") is not PurgeOutcome.ALREADY_PURGED:
                fail("SQL-050", "after a reopen the purge was forgotten")
        finally:
            reopened.close()
        _expect_tombstone(path, "c\x00ü")


def _expect_tombstone(path: str | Path, conversation: str) -> None:
    connection = plain(path)
    try:
        found = connection.execute("SELECT conversation_id, purged_at FROM purged").fetchall()
    finally:
        connection.close()
    if found != [(conversation, PURGED_AT)]:
        fail("SQL-050", f"purged holds {found!r}, expected one row dated by the store's clock")


def _check_purge_transaction(trace: Sequence[str]) -> None:
    """SQL-056: one BEGIN IMMEDIATE holds the active-run check, every delete and the tombstone."""
    writes = [n for n, group in enumerate(transactions(trace))
              if any(re.search(r"\b(DELETE|INSERT)\b", sql, re.I) for sql in group)]
    groups = transactions(trace)
    if len(writes) != 1:
        fail("SQL-056", f"the purge wrote in {len(writes)} transactions: {trace!r}")
    group = groups[writes[0]]
    if not re.match(r"\s*BEGIN\s+IMMEDIATE\b", group[0], re.I) or not re.match(
        r"\s*(COMMIT|END)\b", group[-1], re.I
    ):
        fail("SQL-056", f"the purge is not one committed BEGIN IMMEDIATE: {group!r}")
    check_runs = _position(group, r"\bFROM\s+runs\b")
    first_delete = _position(group, r"\bDELETE\b")
    tombstone = _position(group, r"\bINSERT\b.*\bpurged\b")
    if check_runs is None or first_delete is None or check_runs > first_delete:
        fail("SQL-056", "the purge did not check for active runs inside its transaction first")
    if tombstone is None:
        fail("SQL-056", "the tombstone was not inserted in the purge's transaction")
