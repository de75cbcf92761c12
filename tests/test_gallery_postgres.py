"""The suite kills every broken store of the PostgreSQL gallery (``galleries/postgres.py``).

Each broken PostgresStore runs, at the ``ci`` profile, derandomized and
unshrunk, the focused checks of the ids it is tagged with; the report must
fail at least those ids, and the same checks must pass the reference
PostgresStore (at ci with ``-m slow``; at smoke in ``test_postgres_conformance.py``).
The kill rows are printed (``pytest -s`` shows them). The stores live in
fresh schemas of ``CONVLEDGER_PG_DSN`` (the ``pg_dsn`` fixture), dropped when
they close.
"""

from __future__ import annotations

import pytest

from convledger.postgres import PostgresStore
from convledger_conformance.report import PASSED
from convledger_conformance.requirements import active_ids
from convledger_conformance.runner import DECLARATION_CHECK, FRESH_CHECK, run_suite
from galleries import BrokenStore
from galleries import postgres as gallery
from galleries.postgres import BROKEN, factory_of
from kill_table import kill


@pytest.mark.parametrize("broken", BROKEN, ids=lambda broken: broken.name)
def test_the_focused_checks_kill_the_broken_postgres_store(
    broken: BrokenStore, pg_dsn: str
) -> None:
    """The checks covering a broken PostgresStore's tagged ids fail at least those ids at ci."""
    row = kill(broken, list(broken.selected()))
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)


@pytest.mark.slow
def test_the_focused_checks_pass_the_reference_postgres_store(pg_dsn: str) -> None:
    """Every check that kills a broken PostgresStore passes the reference PostgresStore.

    Slow (about 50 s at ci on two shared cores): the default run has every one
    of these checks pass the reference at smoke (``test_postgres_conformance.py``).
    """
    checks = {item.name: item for broken in BROKEN for item in broken.selected()}
    report = run_suite(factory_of(PostgresStore), profile="ci", checks=list(checks.values()),
                       derandomize=True, shrink=False)
    assert {r.name: r.status for r in report.checks} == {
        **{name: PASSED for name in checks}, DECLARATION_CHECK: PASSED, FRESH_CHECK: PASSED,
    }, [r.message for r in report.checks if r.status != PASSED]


def test_every_broken_postgres_store_names_its_one_bug() -> None:
    """Each broken PostgresStore's docstring names its first tagged id; every tag is active."""
    assert len(BROKEN) >= 5
    assert len({b.name for b in BROKEN}) == len(BROKEN)
    for broken in BROKEN:
        assert broken.catches and set(broken.catches) <= active_ids()
        doc = getattr(gallery, broken.name).__doc__ or ""
        assert doc.split(":")[0] == broken.catches[0]
