"""Checks of chapter FLT: every write point of every write operation failed once.

One check per write operation of :data:`~.scenarios.SCENARIOS` (its name is
``faults_<operation>``), run on a store that declares ``multi_process``
(FLT-001: such a store, in process, offers the seam), plus the sweep of a
version 1 migration for a store that declares ``migration``. Each check runs
:func:`~.scenarios.sweep` on one store from the factory, with a second one as
the source of archives to import.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from convledger.errors import LedgerError
from convledger.sqlite.faults import planned
from convledger.sqlite.fixtures import file_digest, v1_table_rows, write_v1_database
from convledger.store import Capability, LedgerStore
from convledger_conformance.differences import first_difference
from convledger_conformance.faults.digest import digest
from convledger_conformance.faults.plans import KINDS, CountingPlan, FailingPlan, rounds
from convledger_conformance.faults.scenarios import IDS, SCENARIOS, Scenario, Sweep, sweep
from convledger_conformance.registry import CheckContext, CheckFunction, check
from convledger_conformance.sqlite.checks import workspace
from convledger_conformance.support import fail, fresh_store

MIGRATION_IDS = ("FLT-001", "FLT-002", "FLT-003", "FLT-006")


def run_sweep(ctx: CheckContext, scenario: Scenario) -> Sweep:
    """The sweep of ``scenario`` on a fresh store, with a second one made when it needs one."""
    made: list[LedgerStore] = []

    def source() -> LedgerStore:
        if not made:
            made.append(ctx.factory())
        return made[0]

    try:
        with fresh_store(ctx) as store:
            return sweep(store, source, scenario, ctx.profile)
    finally:
        for other in made:
            other.close()


def _register(scenario: Scenario) -> CheckFunction:
    def body(ctx: CheckContext) -> None:
        run_sweep(ctx, scenario)

    body.__name__ = f"check_faults_{scenario.name}"
    body.__doc__ = (f"FLT-001 .. FLT-005: each write point of {scenario.name} failed once is "
                    "refused by kind, leaves the store as it was, and the retry succeeds.")
    return check("FLT-001", *IDS, capability=Capability.MULTI_PROCESS,
                 also=scenario.needs)(body)


for _scenario in SCENARIOS:
    _register(_scenario)


def _deterministic() -> dict[str, Callable[[], str]]:
    """A clock and eventIds for baseline events that are the same in every open (SQL-032)."""
    counter = itertools.count(1)
    return {"clock": lambda: "2026-01-01T00:00:00.000Z",
            "new_event_id": lambda: f"baseline-{next(counter)}"}


CONVERSATIONS = ("c-1", "c\x00ü", "c-empty")
"""The conversations of the sample version 1 file (``sqlite.fixtures.sample_v1_rows``)."""


def migration_sweep(ctx: CheckContext) -> Sweep:
    """FLT-006: fail each write point of opening (migrating) a version 1 file once."""
    with workspace(ctx, MIGRATION_IDS) as (opener, directory):
        first = directory / "v1-0.sqlite"
        write_v1_database(first)
        counting = CountingPlan()
        store = opener(first, connection_factory=planned(counting), **_deterministic())
        points = len(counting.points)  # the reads of the digest below end with COMMIT too
        try:
            expected = digest(store, CONVERSATIONS)
        finally:
            store.close()
        if not points:
            fail("FLT-002", "migrating: the store asked the plan about no write point")
        refused = absorbed = 0
        for number, (n, fault) in enumerate(rounds(points, ctx.profile), start=1):
            path = directory / f"v1-{number}.sqlite"
            write_v1_database(path)
            before = (file_digest(path), v1_table_rows(path))
            plan = FailingPlan(n, fault)
            try:
                opener(path, connection_factory=planned(plan), **_deterministic()).close()
            except LedgerError as error:
                if error.kind != KINDS[fault]:
                    fail("FLT-003", f"migrating: {fault.value} at point {n} refused as "
                                    f"{error.kind!r}, expected {KINDS[fault]!r}")
                refused += 1
                if (file_digest(path), v1_table_rows(path)) != before:
                    assert plan.failed is not None
                    fail("FLT-006", f"migrating: {fault.value} at point {n} of {points} "
                                    f"({plan.failed.kind}: {plan.failed.statement[:60]!r}) "
                                    "was refused but changed the version 1 file")
            else:
                absorbed += 1
            if plan.failed is None:
                fail("FLT-002", f"migrating: round {n} never reached its injected point")
            store = opener(path, **_deterministic())
            try:
                changed = first_difference(expected, digest(store, CONVERSATIONS))
                if changed is not None:
                    fail("FLT-006", f"migrating after {fault.value} at point {n}: the store "
                                    f"differs from one migrated without a fault at {changed}")
            finally:
                store.close()
        return Sweep("migration", points, refused, absorbed)


@check(*MIGRATION_IDS, capability=Capability.MIGRATION, also=(Capability.MULTI_PROCESS,))
def check_faults_migration(ctx: CheckContext) -> None:
    """FLT-006: each write point of a version 1 migration failed once leaves version 1."""
    migration_sweep(ctx)
