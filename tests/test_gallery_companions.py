"""The checks kill every broken store of the projections, spills and search galleries.

``galleries/projections.py``, ``galleries/spills.py`` and ``galleries/search.py``:
each broken store runs, at the ``ci`` profile and derandomized, the focused
checks that cover one of its tagged ids (the state machines excepted: they
catch these bugs too, but slowly); the report must fail at least those ids.
``pytest -s`` prints which checks killed each store and after how many examples
(runs are unshrunk: Hypothesis stops at the first failing example).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger_conformance.report import PASSED
from convledger_conformance.requirements import active_ids
from convledger_conformance.runner import run_suite
from galleries import BrokenStore, projections, search, spills
from galleries.sqlite import factory_of
from kill_table import focused, kill

CHAPTERS: dict[str, tuple[tuple[BrokenStore, ...], str, tuple[str, ...]]] = {
    "projections": (tuple(projections.BROKEN), "PRJ-", ("memory", "sqlite")),
    "spills": (tuple(spills.BROKEN), "SPL-", ("memory", "sqlite")),
    "search": (tuple(search.BROKEN), "SRC-", ("sqlite",)),
}
"""Each gallery: its broken stores, the prefix of the ids they break, the reference stores
that declare the chapter's capability (the in-memory store has no search)."""
REFERENCE: dict[str, Callable[[], object]] = {
    "memory": MemoryStore, "sqlite": factory_of(SqliteStore),
}
EVERY = [broken for stores, _, _ in CHAPTERS.values() for broken in stores]


@pytest.mark.parametrize("broken", EVERY, ids=lambda b: b.name)
def test_focused_checks_kill_the_broken_store(broken: BrokenStore) -> None:
    """The focused checks covering a broken store's tagged ids fail those ids at ci."""
    checks = list(broken.selected())
    assert checks, f"no focused check covers {broken.catches}"
    row = kill(broken, checks)
    print(f"\n{row.line()}")
    assert set(broken.catches) <= row.failed


@pytest.mark.parametrize(
    ("chapter", "store"),
    [(chapter, store) for chapter, (_, _, stores) in CHAPTERS.items() for store in stores],
)
def test_the_focused_checks_pass_the_reference(chapter: str, store: str) -> None:
    """Every check that kills a broken store passes the reference stores it applies to."""
    ids = {item for broken in CHAPTERS[chapter][0] for item in broken.catches}
    report = run_suite(REFERENCE[store], profile="ci", checks=focused(ids),  # type: ignore[arg-type]
                       derandomize=True)
    bad = {r.name: r.status for r in report.checks if r.status not in (PASSED, "not_run")}
    assert not bad


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_broken_store_is_of_its_chapter(chapter: str) -> None:
    """Each broken store is tagged with active ids of its chapter, and named once."""
    stores, prefix, _ = CHAPTERS[chapter]
    assert stores and len({b.name for b in stores}) == len(stores)
    for broken in stores:
        assert broken.chapter == chapter and set(broken.catches) <= active_ids()
        assert all(item.startswith(prefix) for item in broken.catches)
