"""Special events at the first, middle and last seq and past a page: the positions gallery.

``special_events_at_every_position`` kills each broken catch-up; the fold
checks that keep special events in the middle of short ledgers pass them.
"""

from __future__ import annotations

import pytest

from convledger_conformance.registry import all_checks
from convledger_conformance.support import draft
from galleries import BrokenStore
from galleries.positions import BROKEN
from kill_table import focused, kill_with_report

FOLD_STORES = [b for b in BROKEN if {"PRJ-011", "PRJ-030"} & set(b.catches)]
"""The catch-ups (the transition-fold and the other stores follow, with their own tests)."""
OLD_FOLD_CHECKS = ("unknown_kinds_in_a_fold", "partial_catch_up_reports_lag",
                   "checkpoint_never_ahead_never_back")


@pytest.mark.parametrize("broken", FOLD_STORES, ids=lambda b: b.name)
def test_the_positions_check_kills_the_broken_store(broken: BrokenStore) -> None:
    """The focused checks of its id, among them the positions check, fail it."""
    selected = [item for item in all_checks() if item.name == "special_events_at_every_position"]
    row, report = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "expected" in failed.message, failed.message


@pytest.mark.parametrize("broken", FOLD_STORES, ids=lambda b: b.name)
def test_the_fold_checks_alone_miss_it(broken: BrokenStore) -> None:
    """Special events in the middle of short ledgers only: the broken store passes."""
    selected = [item for item in all_checks() if item.name in OLD_FOLD_CHECKS]
    row, _ = kill_with_report(broken, selected, profile="smoke")
    assert not row.failed, row.line()


TRANSITION_STORES = [b for b in BROKEN if b.name in {"FoldStopsBeforeTheLastEvent",
                                                      "FoldSkipsTheFirstOfTheSecondPage"}]


def test_the_other_import_checks_miss_the_page_edge() -> None:
    """The other focused checks of TRN-104 (no state machine) pass the page-edge store.

    (The shipped transition vectors end on a transition, so they catch FoldStopsBeforeTheLastEvent
    already; nothing but the positions checks put a transition at seq 1001: the transitions one
    and the baselines one, whose ledger after its baseline has one there too.)
    """
    (broken,) = [b for b in TRANSITION_STORES if b.name == "FoldSkipsTheFirstOfTheSecondPage"]
    selected = [item for item in focused(("TRN-104",)) if item.name not in {
        "transitions_at_every_position", "baselines_at_every_position"}]
    row, _ = kill_with_report(broken, selected, profile="ci")
    assert not row.failed, row.line()


@pytest.mark.parametrize("broken", TRANSITION_STORES, ids=lambda b: b.name)
def test_the_transition_positions_check_kills_the_broken_store(broken: BrokenStore) -> None:
    """transitions_at_every_position fails TRN-104, naming the seqs of the transitions."""
    selected = [item for item in all_checks() if item.name == "transitions_at_every_position"]
    row, report = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "transitions at seqs 1, 1000, 1001 and 1021" in failed.message, failed.message


def test_the_reference_passes_the_transition_positions() -> None:
    """MemoryStore and SqliteStore pass the check."""
    from convledger.memory import MemoryStore
    from convledger.sqlite import SqliteStore
    from galleries.sqlite import files_of

    selected = [item for item in all_checks() if item.name == "transitions_at_every_position"]
    for factory in (MemoryStore, files_of(SqliteStore)):
        row, report = kill_with_report(TRANSITION_STORES[0], selected, factory=factory,
                                       profile="smoke")
        assert report.ok and not row.failed, row.line()


def test_the_purge_positions_check_kills_the_broken_purge() -> None:
    """purge_at_every_position fails TRN-094; the other purge checks (small ledgers) pass it."""
    (broken,) = [b for b in BROKEN if b.name == "PurgesAllButTheLastPage"]
    selected = [item for item in all_checks() if item.name == "purge_at_every_position"]
    row, report = kill_with_report(broken, selected, profile="smoke")
    assert set(broken.catches) <= set(row.failed), row.line()
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "after the purge of a conversation of 1001 events: expected" in failed.message, (
        failed.message)
    others = [item for item in focused(("TRN-093", "TRN-094"))
              if item.name != "purge_at_every_position"]
    row, _ = kill_with_report(broken, others, profile="smoke")
    assert not row.failed, row.line()


NEW_CHECKS = {
    "FoldPassesOverABaselineAlone": (
        "baselines_at_every_position",
        "import of an archive whose only event, first and last, is a runtime/baseline"),
    "FindsACreatedSeqOnAPageEdgeOnePageLate": (
        "spills_at_every_position",
        "import_bundle of a bundle of 1020 events with spill/created at seqs 1, 1000, 1001, 1020"),
    "FoldsACheckpointOneShortOfAPageEdge": (
        "checkpoints_at_every_position",
        "import of an archive of 1001 events with checkpoints at uptoSeq 1, 1000, 1001"),
    "DropsUnknownsAtTheStartOfALaterPage": (
        "unknown_events_at_every_position",
        "read from seq 1001 limit 1000 after the import of an archive of 1001 events"),
}
"""Per broken store: the positions check that kills it and the start of its failure message."""
NEW_STORES = [b for b in BROKEN if b.name in NEW_CHECKS]


@pytest.mark.parametrize("broken", NEW_STORES, ids=lambda b: b.name)
def test_the_new_positions_checks_kill_their_stores(broken: BrokenStore) -> None:
    """Each positions check fails its store's ids, naming operation, input, expected, actual."""
    name, message = NEW_CHECKS[broken.name]
    selected = [item for item in all_checks() if item.name == name]
    row, report = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed), row.line()
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert failed.message.startswith(message), failed.message


@pytest.mark.parametrize("broken", NEW_STORES, ids=lambda b: b.name)
def test_the_other_focused_checks_miss_them(broken: BrokenStore) -> None:
    """The focused checks of the store's ids, without its positions check, pass it.

    (The whole suite at smoke without the positions check passes each of these too: measured
    when they were added, see CHANGELOG; this test keeps the cheaper half.)
    """
    name, _ = NEW_CHECKS[broken.name]
    others = [item for item in focused(broken.catches) if item.name != name]
    assert others
    row, _ = kill_with_report(broken, others, profile="smoke")
    assert not row.failed, row.line()


def test_the_reference_passes_the_new_positions_checks() -> None:
    """MemoryStore and SqliteStore pass every positions check."""
    from convledger.memory import MemoryStore
    from convledger.sqlite import SqliteStore
    from galleries.sqlite import files_of

    names = {name for name, _ in NEW_CHECKS.values()}
    selected = [item for item in all_checks() if item.name in names]
    assert len(selected) == len(names)
    for factory in (MemoryStore, files_of(SqliteStore)):
        row, report = kill_with_report(NEW_STORES[0], selected, factory=factory,
                                       profile="smoke")
        assert report.ok and not row.failed, row.line()


COMPANION_STORES = [b for b in BROKEN if b.name in {
    "FoldStopsBeforeTheLastEvent", "FoldSkipsTheFirstOfTheSecondPage",
    "FoldPassesOverABaselineAlone", "FoldsACheckpointOneShortOfAPageEdge"}]
HOSTILE_IMPORTS = ("hostile_corpus", "archive_faults_arc_003", "no_raw_exceptions",
                   "checkpoints_travel_in_archives", "checkpoint_imports_checked")


@pytest.mark.parametrize("broken", COMPANION_STORES, ids=lambda b: b.name)
def test_the_companion_checking_stores_have_no_second_bug(broken: BrokenStore) -> None:
    """Regression: their own companion check decoded the archive with ``json.loads`` before the
    reference did and took no ``projections``, so truncated, deep or non-UTF-8 archives raised
    raw exceptions and every import with definitions a TypeError: bugs beside the one named."""
    selected = [item for item in all_checks() if item.name in HOSTILE_IMPORTS]
    assert len(selected) == len(HOSTILE_IMPORTS)
    row, _ = kill_with_report(broken, selected, profile="smoke")
    assert not row.failed, row.line()


def test_the_ledger_machine_puts_an_unknown_envelope_last() -> None:
    """The machine's mixed archives: an unknown envelope at seq 1, and with ``last`` at the end."""
    from convledger_conformance.ledger.machine_archive import _mixed

    def unknown(name: str) -> tuple[str, tuple[str, int, object], str]:
        return name, ("x-conformance/unknown", 1, {}), "2024-01-01T00:00:00Z"

    known = [draft(f"k-{n}", n) for n in range(3)]
    for count in (1, 2, 3):
        unknowns = [unknown(f"u-{n}") for n in range(count)]
        plain = _mixed("c", known, unknowns)
        ends = _mixed("c", known, unknowns, last=True)
        assert plain[0]["eventId"] == "u-0" and plain[-1]["eventId"] == "k-2"
        assert ends[-1]["eventId"] == f"u-{count - 1}"
        assert [w["seq"] for w in ends] == list(range(1, len(known) + count + 1))
        if count > 1:
            assert ends[0]["eventId"] == "u-0"


def test_the_ledger_machine_kills_a_trailing_unknown_dropped() -> None:
    """DropsATrailingUnknownOnImport: the ledger machine fails KND-004 at ci."""
    (broken,) = [b for b in BROKEN if b.name == "DropsATrailingUnknownOnImport"]
    row, _ = kill_with_report(broken, broken.selected(), profile="ci")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed), row.line()
