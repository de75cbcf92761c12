"""Checks of chapter SQL for projections and spills (SQL-060 .. SQL-064, PRJ-013, SPL-022).

Like the other SQL checks these need an SQLite store on a file (capability
``migration``); they look at the rows with plain ``sqlite3`` connections,
corrupt a spill's bytes the way a disk could, and race catch-ups on two
handles of one file (``multi_process``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from functools import partial

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.projections import SUMMARY
from convledger.sqlite import SqliteStore
from convledger.store import Capability
from convledger_conformance.projections.model import counting, expected_state, ledger
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import plain, sqlite_store
from convledger_conformance.support import STAMP, drafts, fail, refused

OPERATION: dict[str, JsonValue] = {"operationId": "op-1", "authorization": {"user": "u"}}


@check("SQL-060", "SQL-061", "PRJ-013", capability=Capability.MULTI_PROCESS,
       also=(Capability.PROJECTIONS, Capability.MIGRATION))
def check_sqlite_catch_ups_on_two_handles(ctx: CheckContext) -> None:
    """SQL-060, SQL-061, PRJ-013: catch-ups racing on two handles never regress a checkpoint."""
    ids = ("SQL-060", "SQL-061", "PRJ-013")
    with sqlite_store(ctx, ids) as store:
        other = type(store)(store.path)
        definition = counting()
        store.append("c", drafts("seed", 4))
        barrier = threading.Barrier(4)
        crashes: list[BaseException] = []
        seen: list[int] = []

        def catcher(handle: SqliteStore) -> None:
            barrier.wait()
            try:
                for _ in range(12):
                    handle.catch_up("c", definition, max_events=2)
            except BaseException as error:
                crashes.append(error)

        def appender() -> None:
            barrier.wait()
            for n in range(8):
                other.append("c", drafts(f"race-{n}", 1))

        def watcher() -> None:
            connection = plain(store.path)
            barrier.wait()
            try:
                for _ in range(40):
                    row = connection.execute(
                        "SELECT upto_seq FROM projections WHERE conversation_id = 'c'"
                    ).fetchone()
                    seen.append(0 if row is None else int(row[0]))
            finally:
                connection.close()

        threads = [threading.Thread(target=catcher, args=(store,)),
                   threading.Thread(target=catcher, args=(other,)),
                   threading.Thread(target=appender), threading.Thread(target=watcher)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            other.close()
        if crashes and not all(getattr(c, "kind", "") == "conflict" for c in crashes):
            fail("PRJ-013", f"a catch-up on two handles failed: {crashes[0]!r}")
        if seen != sorted(seen):
            fail(("PRJ-013", "SQL-060"), f"a reader saw upto_seq move backwards: {seen}")
        stored = store.catch_up("c", definition, max_events=1000)
        events = ledger(store, "c")
        if stored.upto_seq != events[-1].seq or canonical.encode(stored.state) != expected_state(
            definition, events, stored.upto_seq, store
        ):
            fail("PRJ-013", "after the race the checkpoint is not the fold of the ledger")
        connection = plain(store.path)
        try:
            row = connection.execute(
                "SELECT version, upto_seq, state, updated_at FROM projections"
                " WHERE conversation_id = 'c' AND name = ?", (definition.name,)
            ).fetchone()
        finally:
            connection.close()
        if row is None or (row[0], row[1]) != (1, stored.upto_seq) or row[2] != canonical.encode(
            stored.state
        ).decode("utf-8") or not isinstance(row[3], str):
            fail("SQL-061", f"the projections row is {row!r}")


@check("SPL-022", "SPL-023", "SQL-062", "SQL-063", capability=Capability.MIGRATION,
       also=(Capability.SPILLS,))
def check_sqlite_spill_rows_and_corruption(ctx: CheckContext) -> None:
    """SPL-022, SPL-023, SQL-062, SQL-063: rows as specified; corrupted bytes are integrity."""
    ids = ("SPL-022", "SQL-062", "SQL-063")
    with sqlite_store(ctx, ids) as store:
        store.put_spill("c", b"original", media_type="text/plain", operation=OPERATION,
                        reference="r", event_id="s-1", occurred_at=STAMP)
        connection = plain(store.path)
        try:
            row = connection.execute(
                "SELECT media_type, byte_size, sha256, authorization, created_seq, expires_at,"
                " data FROM spills WHERE conversation_id = 'c' AND reference = 'r'"
            ).fetchone()
            want = ("text/plain", 8, hashlib.sha256(b"original").hexdigest(),
                    canonical.encode(OPERATION).decode("utf-8"), 1, None, b"original")
            if row is None or tuple(row) != want:
                fail("SQL-062", f"the spills row is {row!r}")
            for corrupt in (b"ORIGINAL", b"origina", b"original!"):
                connection.execute("UPDATE spills SET data = ? WHERE reference = 'r'", (corrupt,))
                error = refused(partial(store.get_spill, "c", "r", authorize=lambda _: True),
                                "integrity", "SPL-022", f"get of corrupted bytes {corrupt!r}")
                if corrupt in str(error).encode():
                    fail("SPL-022", "the integrity error carries the corrupted bytes")
                refused(partial(store.get_spill, "c", "r", authorize=lambda _: False),
                        "unauthorized", "SPL-023", "a denied get of a corrupted object")
            connection.execute("UPDATE spills SET data = 'original' WHERE reference = 'r'")
            refused(partial(store.get_spill, "c", "r", authorize=lambda _: True), "integrity",
                    "SPL-022", "get of bytes stored as text")
            store.delete_spill("c", "r", event_id="d-1", occurred_at=STAMP)
            if connection.execute("SELECT count(*) FROM spills").fetchone() != (0,):
                fail("SQL-063", "delete_spill left the spills row")
        finally:
            connection.close()


@check("SQL-064", "SQL-066", capability=Capability.MIGRATION,
       also=(Capability.PROJECTIONS, Capability.SPILLS, Capability.SEARCH))
def check_sqlite_reads_in_one_transaction(ctx: CheckContext) -> None:
    """SQL-064, SQL-066: exports and searches read everything inside one read transaction."""
    ids = ("SQL-064", "SQL-066")
    with sqlite_store(ctx, ids) as store:
        store.append("c", drafts("c", 2))
        store.catch_up("c", SUMMARY)
        store.put_spill("c", b"x", media_type="text/plain", operation=OPERATION,
                        reference="r", event_id="s-1", occurred_at=STAMP)
        executed: list[str] = []

        def trace(connection: sqlite3.Connection) -> None:
            connection.set_trace_callback(executed.append)

        traced = type(store)(store.path, connection_hook=trace)
        try:
            for requirement, call, tables in (
                ("SQL-064", traced.export_conversation, ("events", "projections", "spills")),
                ("SQL-064", traced.export_bundle, ("events", "projections", "spills")),
                ("SQL-066", partial(traced.search, "c", "slot",
                                    authorize=lambda _: True), ("events_fts", "events")),
            ):
                executed.clear()
                call("c") if requirement == "SQL-064" else call()  # type: ignore[call-arg]
                _one_transaction(executed, tables, requirement)
        finally:
            traced.close()


def _one_transaction(executed: list[str], tables: tuple[str, ...], requirement: str) -> None:
    begins = [n for n, sql in enumerate(executed) if sql.strip().upper().startswith("BEGIN")]
    ends = [n for n, sql in enumerate(executed) if sql.strip().upper() in ("COMMIT", "END")]
    if len(begins) != 1 or len(ends) != 1:
        fail(requirement, f"the read ran {len(begins)} transactions: {executed!r}")
    inside = " ".join(executed[begins[0]:ends[0]])
    for table in tables:
        if f"FROM {table}" not in inside and f"FROM {table} " not in inside:
            fail(requirement, f"{table} was not read inside the read transaction")
