"""Checks of chapter SQL, runtime part: tombstones, indexes, transitions and purge (SQL-050 ..).

Like ``sqlite.py``, these checks need the factory to make
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
import inspect
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.runtime.operations import PurgeOutcome
from convledger.runtime.records import Admission, Message, Run
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
"""Every table that holds rows of a conversation, by the column naming it (SQL-056)."""
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
            before = [rows for rows in conversation_rows(path, "c\x00ü").values()]
            if not all(before[:-2]) or not before[-1]:
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
            if links != {t: r for t, r in zip(remaining, before, strict=True)
                         if t.startswith("children.")}:
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


# -- the tombstone seen by other handles (SQL-052) -------------------------------------------------


@check("SQL-052", capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_purged_refuses_other_handles(ctx: CheckContext) -> None:
    """SQL-052: a handle opened before the purge is refused append, transition and import.

    Each refused write reads the tombstone after its ``BEGIN IMMEDIATE``, and
    nothing of it is stored.
    """
    ids = ("SQL-052",)
    with runtime_store(ctx, ids) as store:
        applied(store, "gone", finished_script(), ids)
        store.append("gone", [draft("plain-1")])
        archive = store.export_conversation("gone")
        trace: Traced = []
        other = type(store)(store.path, connection_hook=tracing(trace))
        try:
            if other.head("gone") != 9 or other.load_run("gone", "r-1") is None:
                fail("SQL-052", "the second handle does not see the conversation before the purge")
            if store.purge("gone") is not PurgeOutcome.PURGED:
                fail("SQL-052", "the purge did not answer purged")
            attempts: list[tuple[str, Callable[[], object]]] = [
                ("append", lambda: other.append("gone", [draft("plain-2")])),
                ("transition", lambda: other.transition(
                    "gone", Accept("k-9", "in-9", "r-9", "a-9", {"text": "again"}),
                    event_id="t-again", occurred_at=STAMP)),
                ("import", lambda: other.import_conversation(archive)),
            ]
            for what, call in attempts:
                del trace[:]
                refused(call, "purged", ids, f"an {what} through a handle opened before the purge")
                groups = transactions(trace)
                write = next((g for g in groups if re.match(r"\s*BEGIN\s+IMMEDIATE", g[0], re.I)),
                             None)
                if write is None or _position(write, r"\bFROM\s+purged\b") is None:
                    fail(ids, f"the refused {what} did not read purged inside BEGIN IMMEDIATE: "
                         f"{trace!r}")
        finally:
            other.close()
        left = {t: r for t, r in conversation_rows(store.path, "gone").items() if r}
        if left:
            fail(ids, f"refused writes left rows of the purged conversation: {left!r}")


# -- one transaction per transition (SQL-053) ---------------------------------------------------


FAULT_LABELS = ("head", "run", "admission", "message", "event")


@check("SQL-053", capability=Capability.MIGRATION)
def check_sqlite_transition_transaction(ctx: CheckContext) -> None:
    """SQL-053: a transition reads the head, writes its rows and event in one BEGIN IMMEDIATE.

    The trace shows the head read after BEGIN IMMEDIATE and before every
    write, and one COMMIT after the event; a duplicate eventId rolls the whole
    transition back; a fault after any write (``fault_probe``, when the store
    takes it) leaves the file as it was; two handles racing on one
    conversation move the head exactly once per applied transition.
    """
    ids = ("SQL-053",)
    with runtime_store(ctx, ids) as store:
        opener = type(store)
        trace: Traced = []
        traced = opener(store.path, connection_hook=tracing(trace))
        try:
            applied(traced, "c", [Accept("k-1", "in-1", "r-1", "a-1", {"text": "hi"})], ids)
            _check_transition_trace(trace)
            whole = whole_file(store.path)
            refused(lambda: traced.transition("c", Acquire("r-1", "w"), event_id="t-c-1",
                                              occurred_at=STAMP),
                    "duplicate", ids, "a transition with a stored eventId")
            if whole_file(store.path) != whole or not any(
                re.match(r"\s*ROLLBACK\b", sql, re.I) for sql in trace
            ):
                fail(ids, "a transition refused at its event did not roll back every row")
        finally:
            traced.close()
        if "fault_probe" in inspect.signature(opener).parameters:
            _check_faults(opener, store.path)
        _check_racing_handles(store)


def _check_transition_trace(trace: Sequence[str]) -> None:
    groups = [g for g in transactions(trace) if _position(g, r"\bINTO\s+events\b") is not None]
    if len(groups) != 1:
        fail("SQL-053", f"the transition's event was written in {len(groups)} transactions")
    group = groups[0]
    if not re.match(r"\s*BEGIN\s+IMMEDIATE\b", group[0], re.I) or not re.match(
        r"\s*(COMMIT|END)\b", group[-1], re.I
    ):
        fail("SQL-053", f"the transition is not one committed BEGIN IMMEDIATE: {group!r}")
    head_read = _position(group, r"\bSELECT\b.*\bFROM\s+heads\b")
    writes = [n for n, sql in enumerate(group)
              if re.search(r"\b(INSERT|UPDATE|DELETE)\b", sql, re.I)]
    written = {table for table in (*RUNTIME_TABLES, "events")
               if _position(group, rf"\b(INTO|UPDATE)\s+{table}\b") is not None}
    if head_read is None or not writes or head_read > writes[0]:
        fail("SQL-053", "the transition did not read its head inside the transaction first")
    if written != {"heads", "runs", "admissions", "events"}:
        fail("SQL-053", f"an accept wrote only {sorted(written)} in its transaction")


class _Fault(Exception):
    """The fault a probe injects."""


def _check_faults(opener: Callable[..., SqliteStore], path: str) -> None:
    """TRN-004 in SQLite: a fault after any write of a transition leaves the file unchanged."""
    accept = Accept("k-f", "in-f", "r-f", "a-f", {"text": "f"})
    steps: dict[str, Transition] = {
        "head": accept, "run": accept, "admission": accept, "event": accept,
        "message": Acquire("r-0", "w0"),  # places the input and the answer (TRN-032)
    }
    setup = opener(path)
    try:
        applied(setup, "faulty", [Accept("k-0", "in-0", "r-0", "a-0", {"text": "0"})], ["SQL-053"])
    finally:
        setup.close()
    for label in FAULT_LABELS:
        step = steps[label]
        whole = whole_file(path)

        def probe(done: str, at: str = label) -> None:
            if done == at:
                raise _Fault(done)

        faulty = opener(path, fault_probe=probe)
        try:
            faulty.transition("faulty", step, event_id=f"fault-{label}", occurred_at=STAMP)
        except _Fault:
            pass
        except LedgerError as error:
            fail("SQL-053", f"a fault after the {label} write surfaced as {error!r}")
        else:
            fail("SQL-053", f"no write labelled {label!r} was probed")
        finally:
            faulty.close()
        if whole_file(path) != whole:
            fail("SQL-053", f"a fault after the {label} write left part of the transition")


def _check_racing_handles(store: SqliteStore) -> None:
    """Two handles accepting into one conversation: the head version counts applied ones."""
    other = type(store)(store.path)
    errors: list[BaseException] = []

    def accept(handle: SqliteStore, name: str) -> None:
        try:
            for n in range(8):
                handle.transition("race", Accept(f"k-{name}{n}", f"in-{name}{n}", f"r-{name}{n}",
                                                 f"a-{name}{n}", {"text": name}),
                                  event_id=f"race-{name}{n}", occurred_at=STAMP)
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    try:
        threads = [threading.Thread(target=accept, args=(handle, name))
                   for handle, name in ((store, "a"), (other, "b"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other.close()
    if errors:
        fail("SQL-053", f"a transition beside another handle failed: {errors[0]!r}")
    connection = plain(store.path)
    try:
        version = connection.execute("SELECT version FROM heads WHERE conversation_id = 'race'"
                                     ).fetchone()
        events = connection.execute("SELECT count(*) FROM events WHERE conversation_id = 'race'"
                                    ).fetchone()
    finally:
        connection.close()
    if version != (16,) or events != (16,):
        fail("SQL-053", f"16 applied transitions left head {version!r} and {events!r} events")


# -- the records and their columns (SQL-051, SQL-054) -----------------------------------------


COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "heads": (("conversation_id", "conversationId"), ("version", "version")),
    "runs": (("conversation_id", "conversationId"), ("run_id", "runId"),
             ("ordinal", "ordinal"), ("state", "state"), ("updated_at", "updatedAt")),
    "admissions": (("conversation_id", "conversationId"),
                   ("idempotency_key", "idempotencyKey"), ("run_id", "runId"),
                   ("ordinal", "ordinal"), ("admitted_at", "admittedAt")),
    "messages": (("conversation_id", "conversationId"), ("position", "position"),
                 ("message_id", "messageId"), ("active", "active"), ("created_at", "createdAt")),
}
"""Each runtime column and the record member it mirrors (SQL-054, SQL-051 for state)."""


def _runtime_rows(path: str | Path, conversation: str) -> dict[str, list[dict[str, object]]]:
    connection = plain(path)
    connection.row_factory = sqlite3.Row
    try:
        return {
            table: [dict(row) for row in connection.execute(
                f"SELECT * FROM {table} WHERE conversation_id = ? ORDER BY record",
                (conversation,))]
            for table in RUNTIME_TABLES
        }
    finally:
        connection.close()


def _check_rows(store: SqliteStore, conversation: str, last_at: str, what: str) -> None:
    stored = _runtime_rows(store.path, conversation)
    snapshot = store.load_snapshot(conversation)
    export = canonical.decode(store.export_conversation(conversation))
    assert isinstance(export, dict) and isinstance(export["companions"], dict)
    companion = export["companions"].get("runtime")
    assert isinstance(companion, dict)
    expected: dict[str, set[bytes]] = {
        "heads": {canonical.encode(snapshot.head.to_json())},
        "runs": {canonical.encode(item) for item in _list(companion, "runs")},
        "admissions": {canonical.encode(item) for item in _list(companion, "admissions")},
        "messages": {canonical.encode(item) for item in _list(companion, "messages")},
    }
    for table, rows in stored.items():
        records: set[bytes] = set()
        for row in rows:
            text = row["record"]
            if not isinstance(text, str):
                fail("SQL-054", f"{what}: a {table} record is not text")
            value = canonical.decode(text.encode("utf-8"))
            if canonical.encode(value).decode("utf-8") != text:
                fail("SQL-054", f"{what}: a {table} record is not canonical JSON: {text!r}")
            records.add(text.encode("utf-8"))
            assert isinstance(value, dict)
            for column, member in COLUMNS[table]:
                mirrored = value.get(member)
                if isinstance(mirrored, bool):
                    mirrored = int(mirrored)
                if row[column] != mirrored:
                    requirement = "SQL-051" if column == "state" else "SQL-054"
                    fail(requirement, f"{what}: {table}.{column} is {row[column]!r}, its record "
                         f"says {mirrored!r}")
            if table == "heads" and row["updated_at"] != last_at:
                fail("SQL-054", f"{what}: heads.updated_at is {row['updated_at']!r}, not the "
                     f"time of the last transition {last_at!r}")
        if records != expected[table]:
            fail("SQL-054", f"{what}: the {table} records differ from the store's own records")
    for run in snapshot.active_runs:
        if store.load_run(conversation, run.run_id) != run:
            fail("SQL-054", f"{what}: load_run and load_snapshot disagree on {run.run_id!r}")
    for table, parse in (("runs", Run.from_json), ("messages", Message.from_json),
                         ("admissions", Admission.from_json)):
        for text in expected[table]:
            parse(canonical.decode(text))  # records of chapter TRN (TRN-011)


def _list(companion: dict[str, JsonValue], member: str) -> list[JsonValue]:
    value = companion.get(member)
    return value if isinstance(value, list) else []


@check("SQL-051", "SQL-054", capability=Capability.MIGRATION)
def check_sqlite_runtime_records(ctx: CheckContext) -> None:
    """SQL-051, SQL-054: every runtime row holds its canonical TRN record and mirrors it.

    Rows written by transitions and rows written by an import of their export
    hold the store's own records, as canonical JSON, with ``runs.state`` and
    every other column equal to the record's member, and ``heads.updated_at``
    the time of the last transition.
    """
    ids = ("SQL-051", "SQL-054")
    with runtime_store(ctx, ids) as store:
        script = [*finished_script(), *active_script("+")]
        applied(store, "c\x00ü", script, ids)
        last_at = f"2026-02-01T00:00:{len(script):02d}Z"
        _check_rows(store, "c\x00ü", last_at, "after transitions")
        archive = store.export_conversation("c\x00ü")
        with runtime_store(ctx, ids) as target:
            target.import_conversation(archive)
            _check_rows(target, "c\x00ü", last_at, "after an import")
            if _runtime_rows(target.path, "c\x00ü") != _runtime_rows(store.path, "c\x00ü"):
                fail("SQL-054", "an import wrote other rows than the transitions it replays")


# -- bounded reads (SQL-055, SQL-057) -------------------------------------------------------------


_NAMES_EVENTS = re.compile(r"\bevents\b", re.IGNORECASE)
_RUNTIME_TABLE = re.compile(r"\b(heads|runs|admissions|messages)\b", re.IGNORECASE)


def _plans(path: str | Path, statements: Sequence[str]) -> dict[str, list[str]]:
    connection = plain(path)
    try:
        return {sql: [str(row[3]) for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}")]
                for sql in statements}
    finally:
        connection.close()


def _searches_only(plans: dict[str, list[str]], requirement: str, what: str) -> None:
    for sql, plan in plans.items():
        for line in plan:
            if line.startswith("SCAN") and _RUNTIME_TABLE.search(line):
                fail(requirement, f"{what}: {sql!r} scans: {plan!r}")


def _uses(plans: dict[str, list[str]], index: str, requirement: str, what: str) -> None:
    if not any(line.startswith("SEARCH") and re.search(rf"\bINDEX {index}\b", line)
               for plan in plans.values() for line in plan):
        fail(requirement, f"{what}: no statement searched {index}: {plans!r}")


@check("SQL-055", "SQL-057", capability=Capability.MIGRATION)
def check_sqlite_bounded_reads(ctx: CheckContext) -> None:
    """SQL-055, SQL-057: the bounded reads and a transition's lookups are searches, never events.

    The statements each operation really executes (trace callback) must not
    name ``events``, must never be planned as a scan of a runtime table, and
    must search the index the chapter names for them.
    """
    ids = ("SQL-055", "SQL-057")
    with runtime_store(ctx, ids) as store:
        for number in range(4):
            applied(store, f"c-{number}", [*finished_script(), *active_script("+")], ids,
                    prefix=f"p{number}")
        trace: Traced = []
        traced = type(store)(store.path, connection_hook=tracing(trace))
        try:
            reads: list[tuple[str, Callable[[], object], str]] = [
                ("load_run", lambda: traced.load_run("c-1", "r-1+"), ""),
                ("list_active_runs", lambda: traced.list_active_runs("c-1"), "runs_active"),
                ("load_snapshot", lambda: traced.load_snapshot("c-2"), "messages_active"),
                ("scan_recoverable", lambda: traced.scan_recoverable(limit=2), "runs_recoverable"),
            ]
            for name, call, index in reads:
                del trace[:]
                call()
                statements = [sql for sql in trace if not _CONTROL.match(sql)]
                if not statements:
                    fail("SQL-055", f"{name} executed no statement")
                if any(_NAMES_EVENTS.search(sql) for sql in statements):
                    fail("SQL-055", f"{name} read events: {statements!r}")
                plans = _plans(store.path, statements)
                _searches_only(plans, "SQL-055", name)
                if index:
                    _uses(plans, index, "SQL-055", name)
            del trace[:]
            applied(traced, "c-3", [Accept("k-new", "in-new", "r-new", "a-new", {"text": "n"})],
                    ids, prefix="lookup")
            lookups = [sql for sql in trace if "json_extract" in sql and sql.lstrip().upper()
                       .startswith("SELECT")]
            plans = _plans(store.path, lookups)
            _searches_only(plans, "SQL-057", "a transition's identity lookups")
            _uses(plans, "admissions_by_input", "SQL-057", "the admission of an input")
            _uses(plans, "runs_by_assistant", "SQL-057", "the run of an answer")
        finally:
            traced.close()
