"""Checks of chapter SQL, migration: version 1 files to version 2 (SQL-030 .. SQL-037).

One baseline at seq 1 per head, computed by the oracle of
:mod:`convledger_conformance.sqlite.machine_migration` from the rows alone
(SQL-030 .. SQL-035); a fault after any step, or rows that cannot migrate,
change nothing (SQL-036, SQL-037); two handles opening one version 1 file at
once: exactly one migrates (SQL-030); ``asOf`` compares times as instants where
spelling misleads (SQL-034). The helpers and the interface these
checks need are those of :mod:`convledger_conformance.sqlite.checks`.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable
from functools import partial

from convledger import canonical
from convledger.errors import LedgerError
from convledger.runtime import Accept, Acquire, Transition
from convledger.sqlite import SqliteStore
from convledger.sqlite.fixtures import (
    V1Rows,
    file_digest,
    record,
    runtime_states,
    sample_v1_rows,
    v1_rows_of,
    v1_table_rows,
    write_v1_database,
)
from convledger.sqlite.migration import STEPS
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import refused_unchanged, workspace
from convledger_conformance.sqlite.machine_migration import expected_baseline_payload
from convledger_conformance.support import draft, fail

MIGRATED_AT = "2026-03-01T12:00:00.000Z"


def counting_ids() -> Callable[[], str]:
    """An id generator: baseline-1, baseline-2, ..."""
    counter = itertools.count(1)
    return lambda: f"baseline-{next(counter)}"


@check("SQL-030", "SQL-031", "SQL-032", "SQL-033", "SQL-034", "SQL-035",
       capability=Capability.MIGRATION)
def check_sqlite_migration_baselines(ctx: CheckContext) -> None:
    """SQL-030 .. SQL-035: one baseline at seq 1 per head, with the state, asOf and v1 rows kept."""
    ids = ("SQL-030", "SQL-031", "SQL-032", "SQL-033", "SQL-034", "SQL-035")
    with workspace(ctx, ids) as (opener, directory):
        path = directory / "v1.sqlite"
        sample = sample_v1_rows()
        write_v1_database(path, sample)
        before = v1_table_rows(path)
        store = opener(path, clock=lambda: MIGRATED_AT, new_event_id=counting_ids())
        try:
            if store.outcome != "migrated":
                fail("SQL-030", f"a version 1 file was {store.outcome!r}, not migrated")
            for number, conversation in enumerate(sample.conversations, start=1):
                _check_baseline(store, conversation, number)
            # The oracle computes the payload from the rows alone, without the store.
            expected_c1 = expected_baseline_payload(sample, "c-1", MIGRATED_AT)
            if expected_c1.get("asOf") != "2026-01-01T00:00:02.5Z":
                fail("SQL-034", "the sample no longer has the asOf this check pins")
            first = store.read("c-1").items[0].payload
            if canonical.encode(first) != canonical.encode(expected_c1):
                fail(("SQL-033", "SQL-034"), f"the baseline of c-1 is {first!r}")
            empty = store.read("c-empty").items[0].payload
            if not isinstance(empty, dict) or "asOf" in empty:
                fail("SQL-034", "a conversation without messages or runs has an asOf")
            if store.append("c-1", [draft("after")])[0].seq != 2:
                fail("SQL-031", "the event after a baseline is not seq 2")
        finally:
            store.close()
        if v1_table_rows(path) != before:
            fail("SQL-035", "the migration changed rows of the version 1 tables")


AS_OF_CASES: tuple[tuple[str, tuple[str, str], str], ...] = (
    ("t-minutes", ("2026-01-01T01:00:00Z", "2026-01-01T00:59:59Z"), "2026-01-01T01:00:00Z"),
    ("t-offset-minutes", ("2026-01-01T00:00:00+05:30", "2025-12-31T18:45:00Z"),
     "2025-12-31T18:45:00Z"),
    ("t-year-zero", ("0000-12-31T00:00:00Z", "0001-01-01T00:00:00Z"), "0001-01-01T00:00:00Z"),
    ("t-tie", ("2026-01-01T00:00:00Z", "2026-01-01T05:30:00+05:30"),
     "2026-01-01T05:30:00+05:30"),
)
"""(conversation, the times of its two accepts, its ``asOf``): SQL-034's instants, written out.

A minute is 60 s up to the next hour; an offset's minutes count (``+05:30`` is 18:30 the day
before); year 0000 is the year before 0001 (ENV-008 admits it); two spellings of one instant
tie and the greater text wins. Run ``r-1`` is accepted and acquired (placing its messages)
at the first time, run ``r-2`` accepted at the second, so each time is a record's.
Found by the mutation run of issue 37 (``docs/mutation.md``): the sample's times have no
offset minutes, no year 0000 and no hour boundary."""


def as_of_rows() -> V1Rows:
    """The version 1 rows of :data:`AS_OF_CASES`."""
    script: list[tuple[str, Transition, str]] = []
    for conversation, (first, second), _as_of in AS_OF_CASES:
        script += [
            (conversation, Accept("k-1", "in-1", "r-1", "a-1", {"text": "one"}), first),
            (conversation, Acquire("r-1", "w"), first),
            (conversation, Accept("k-2", "in-2", "r-2", "a-2", {"text": "two"}), second),
        ]
    return v1_rows_of(runtime_states(script))


@check("SQL-034", "SQL-033", capability=Capability.MIGRATION)
def check_sqlite_migration_as_of_instants(ctx: CheckContext) -> None:
    """SQL-034: asOf compares times as instants: minutes, offset minutes, year 0000, ties."""
    ids = ("SQL-034", "SQL-033")
    with workspace(ctx, ids) as (opener, directory):
        path = directory / "v1-times.sqlite"
        rows = as_of_rows()
        write_v1_database(path, rows)
        store = opener(path, clock=lambda: MIGRATED_AT, new_event_id=counting_ids())
        try:
            if store.outcome != "migrated":
                fail("SQL-030", f"a version 1 file was {store.outcome!r}, not migrated")
            for conversation, times, as_of in AS_OF_CASES:
                expected = expected_baseline_payload(rows, conversation, MIGRATED_AT)
                if expected.get("asOf") != as_of:
                    fail("SQL-034", f"the oracle's asOf of {times} is {expected.get('asOf')!r}")
                payload = store.read(conversation).items[0].payload
                got = payload.get("asOf") if isinstance(payload, dict) else None
                if got != as_of:
                    fail("SQL-034", f"asOf of a conversation with times {list(times)}: "
                         f"expected {as_of!r}, got {got!r}")
                if canonical.encode(payload) != canonical.encode(expected):
                    fail("SQL-033", f"the baseline of {conversation!r} is {payload!r}")
        finally:
            store.close()


def _check_baseline(store: SqliteStore, conversation: str, number: int) -> None:
    page = store.read(conversation)
    if len(page.items) != 1 or page.items[0].seq != 1:
        fail("SQL-031", f"conversation {conversation!r} holds {len(page.items)} events")
    baseline = page.items[0]
    payload = baseline.payload
    if (baseline.kind, baseline.schema_version, baseline.ignorable) != (
        "runtime/baseline", 1, False
    ) or baseline.occurred_at != MIGRATED_AT or baseline.event_id != f"baseline-{number}":
        fail("SQL-032", f"baseline of {conversation!r} is {baseline!r}")
    if not isinstance(payload, dict) or payload.get("migratedAt") != MIGRATED_AT:
        fail("SQL-032", f"baseline payload of {conversation!r} has no migratedAt of the clock")
    try:
        store.registry.check_payload("runtime/baseline", 1, payload)
    except LedgerError as error:
        fail("SQL-033", f"baseline of {conversation!r} breaks its schema: {error!r}")


@check("SQL-036", "SQL-037", capability=Capability.MIGRATION)
def check_sqlite_migration_is_atomic(ctx: CheckContext) -> None:
    """SQL-036, SQL-037: a failure after any step, or rows that cannot migrate, change nothing."""
    with workspace(ctx, ["SQL-036", "SQL-037"]) as (opener, directory):
        for step in STEPS:
            path = directory / f"fault-{step}.sqlite"
            write_v1_database(path)
            before = file_digest(path)

            def fault(done: str, at: str = step) -> None:
                if done == at:
                    raise RuntimeError(f"injected after {done}")

            with contextlib.suppress(RuntimeError):
                opener(path, on_migration_step=fault).close()
                fail("SQL-036", f"a fault after {step} did not stop the migration")
            if file_digest(path) != before:
                fail("SQL-036", f"a fault after {step} left the file changed")
        orphan = V1Rows(runs=(("ghost", "r", 1, "queued", "2026-01-01T00:00:00Z", record({})),))
        bad_time = V1Rows(
            heads=(("h", 1, "2026-01-01T00:00:00Z", record({})),),
            messages=(("h", 1, "m", 1, "yesterday", record({})),),
        )
        for number, rows_ in enumerate((orphan, bad_time)):
            path = directory / f"bad-{number}.sqlite"
            write_v1_database(path, rows_)
            refused_unchanged(partial(opener, path), path, "integrity", ["SQL-037"],
                              "version 1 rows that cannot migrate")


@check("SQL-030", capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_migration_race(ctx: CheckContext) -> None:
    """SQL-030: two handles opening one version 1 file at once: exactly one migrates."""
    with workspace(ctx, ["SQL-030"]) as (opener, directory):
        path = directory / "race.sqlite"
        write_v1_database(path)
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def open_it() -> None:
            barrier.wait()
            store = opener(path, busy_timeout=30)
            outcomes.append(store.outcome)
            store.close()

        threads = [threading.Thread(target=open_it) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if sorted(outcomes) != ["migrated", "opened"]:
            fail("SQL-030", f"two racing opens gave {outcomes!r}")
        store = opener(path)
        heads = [store.head(c) for c in sample_v1_rows().conversations]
        store.close()
        if heads != [1, 1, 1]:
            fail("SQL-030", f"after the race the baselines are {heads!r}")
