"""The conformance checks kill every broken store of the ledger gallery (``galleries/ledger.py``).

Each broken store runs, at the ``ci`` profile and derandomized, the checks
that cover one of the ids it is tagged with; the report must fail at least
those ids. The checks that killed it, and after how many examples, are printed
(``pytest -s`` shows them; ``scripts/kill_table.py`` prints the whole table).

The state machine finds these bugs too, but shrinking a failing program takes
five to ninety seconds per store, so by default it runs against one broken
store; ``pytest -m slow`` runs it against all of them.
"""

from __future__ import annotations

import pytest

from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import Report
from convledger_conformance.requirements import active_ids
from galleries import BrokenStore
from galleries.ledger import BROKEN
from kill_table import kill_with_report

MACHINES = ("ledger_state_machine", "ledger_state_machine_with_reopen")


def _run(broken: BrokenStore, checks: list[Check]) -> tuple[Report, set[str]]:
    """Run ``checks`` against the broken store at ci (unshrunk); its report and failed ids."""
    row, report = kill_with_report(broken, checks)
    print(f"\n{row.line()}")
    return report, set(row.failed)


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_focused_checks_kill_the_broken_store(broken: BrokenStore) -> None:
    """The checks covering a broken store's tagged ids fail at least those ids at ci."""
    selected = [
        item for item in all_checks()
        if set(item.ids) & set(broken.catches) and item.name not in MACHINES
    ]
    _, failed = _run(broken, selected)
    assert set(broken.catches) <= failed


def test_state_machine_kills_a_broken_store() -> None:
    """The state machine alone catches a store that shares payloads with callers (LED-014)."""
    machine = [item for item in all_checks() if item.name == "ledger_state_machine"]
    broken = next(b for b in BROKEN if b.name == "SharesPayloads")
    _, failed = _run(broken, machine)
    assert "LED-014" in failed


BEYOND_THE_MACHINE = frozenset({
    "DropsLastOfFullPage", "StoresRetriedBatchAgain", "SeqComparedByEquality",
    "DecodesArchivesBeforeTheirSize",
})
"""Broken stores only their focused checks kill (above), seen at ci, derandomized: a full
page of the maximum size (LED-009), a batch sent again whole (DUR-017), an archived seq
``true`` (ENV-006) and an archive beyond the size limit (LIM-006) are inputs the
machine's short programs of valid calls never send."""


@pytest.mark.slow
@pytest.mark.parametrize("broken", [b for b in BROKEN if b.name not in BEYOND_THE_MACHINE],
                         ids=lambda b: b.name)
def test_state_machine_kills_every_broken_store(broken: BrokenStore) -> None:
    """The state machine alone fails every broken store at ci but those beyond it."""
    machine = [item for item in all_checks() if item.name == "ledger_state_machine"]
    report, failed = _run(broken, machine)
    assert not report.ok and failed


def test_every_broken_store_names_its_one_bug() -> None:
    """Each broken store's docstring names the first id it is tagged with, an active id."""
    assert len(BROKEN) >= 6
    for broken in BROKEN:
        assert broken.catches and set(broken.catches) <= active_ids()
        assert (broken.factory.__doc__ or "").split(":")[0] == broken.catches[0]
