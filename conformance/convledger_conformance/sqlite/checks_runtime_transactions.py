"""Checks of chapter SQL, runtime part: transactions of purges and transitions (SQL-052, SQL-053).

A handle opened before a purge is refused every write once the tombstone is
there (SQL-052); a transition reads the head, writes its rows and its event
in one ``BEGIN IMMEDIATE`` transaction, a fault after any write leaves nothing,
and racing handles apply one transition each (SQL-053). The helpers and what
these checks need of the store are those of
:mod:`convledger_conformance.sqlite.checks_runtime`.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Sequence

from convledger.errors import LedgerError
from convledger.runtime.operations import PurgeOutcome
from convledger.runtime.transitions import Accept, Acquire, Transition
from convledger.sqlite import SqliteStore
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import plain
from convledger_conformance.sqlite.checks_runtime import (
    RUNTIME_TABLES,
    Traced,
    _position,
    applied,
    conversation_rows,
    finished_script,
    refused,
    runtime_store,
    tracing,
    transactions,
    whole_file,
)
from convledger_conformance.support import STAMP, draft, fail

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
