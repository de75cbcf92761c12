"""The hostile-input checks kill every broken store of the limits gallery (``galleries/limits.py``).

In process through the focused checks, and over the wire: the server serving
a store whose driver raises answers ``internal``, which the corpus reports as
a failure, never as a refusal (WIR-008, LIM-012).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from convledger_conformance.hostile.checks import run_corpus
from convledger_conformance.registry import all_checks
from convledger_conformance.requirements import active_ids
from convledger_conformance.wire.client import WireStoreFactory
from galleries import BrokenStore
from galleries.limits import BROKEN
from kill_table import kill_with_report

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_focused_checks_kill_the_broken_store(broken: BrokenStore) -> None:
    """The checks covering a broken store's tagged ids fail at least those ids at ci."""
    selected = [item for item in all_checks() if set(item.ids) & set(broken.catches)]
    row, _ = kill_with_report(broken, selected)
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_corpus_catches_the_broken_store_over_the_wire(broken: BrokenStore) -> None:
    """Over the wire the bug is caught too: accepted, or answered `internal` (never a refusal)."""
    command = [sys.executable, "-c",
               f"import sys; sys.path.insert(0, {str(TESTS)!r}); "
               "from convledger.cli import main; "
               f"sys.exit(main(['serve-wire', '--factory', 'galleries.limits:{broken.name}']))"]
    factory = WireStoreFactory(command)
    try:
        tally = run_corpus(factory(), "smoke")
    finally:
        factory.close()
    failed = {ident for case, _ in tally.failures for ident in case.ids}
    assert set(broken.catches) <= failed, tally.outcomes


def test_every_broken_store_names_its_one_bug() -> None:
    """Each broken store's docstring names the first id it is tagged with, an active id."""
    for broken in BROKEN:
        assert broken.catches and set(broken.catches) <= active_ids()
        assert (broken.factory.__doc__ or "").split(":")[0] == broken.catches[0]
