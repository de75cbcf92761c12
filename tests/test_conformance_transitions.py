"""The transition checks and the runtime state machine, tested from both sides.

Every TRN check must pass on the reference MemoryStore, and the broken stores
of the runtime gallery (``galleries/runtime.py``), each with exactly one bug a
real store could make, must be failed by the checks naming the ids it breaks.
A store declaring only ``ledger`` must refuse every runtime operation with
not_supported (CAP-002, TRN-109).
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from convledger.memory import MemoryStore
from convledger.runtime import (
    Run,
    Terminal,
)
from convledger.runtime.operations import recovery_order
from convledger.runtime.view import Status
from convledger.store import Capability
from convledger_conformance.check_failures import failed_ids
from convledger_conformance.ledger.checks_capabilities import ABSENT_OPERATIONS
from convledger_conformance.profiles import settings_for
from convledger_conformance.registry import CheckFailure, all_checks
from convledger_conformance.report import FAILED, NOT_APPLICABLE, NOT_RUN, PASSED
from convledger_conformance.requirements import active_ids
from convledger_conformance.runner import run_suite
from convledger_conformance.runtime.machine import (
    PURGE_IDS,
    RUNTIME_MACHINE_IDS,
    build_runtime_machine,
)
from galleries import broken
from galleries.runtime import BROKEN as GALLERY
from galleries.runtime import DecidesOutsideTheLock, ForgetsKeysOfEndedRuns, IgnoresFences
from kill_table import CountingFactory, kill

TRN_CHECKS = [c for c in all_checks() if any(i.startswith("TRN-") for i in c.ids)]
MACHINES = ("runtime_state_machine", "runtime_state_machine_with_purge")


# -- stores declaring fewer capabilities (correct stores) --------------------------------------


class LedgerOnly(MemoryStore):
    """A store declaring only capability ledger (correct: it must refuse runtime calls)."""

    declared = frozenset({Capability.LEDGER})


class PurgeWithoutTransitions(MemoryStore):
    """A store declaring purge but not transitions (correct: purge works on ledgers alone)."""

    declared = frozenset({Capability.LEDGER, Capability.PURGE})


BROKEN: list[tuple[type[MemoryStore], tuple[str, ...]]] = [
    (item.factory, item.catches) for item in GALLERY if item.name in {
        "ScansInUtf16Order", "IgnoresFences", "ForgetsKeysOfEndedRuns", "PurgeWithoutTombstone",
        "TrustsTheCompanion",
    }
]
"""The broken stores of the runtime gallery first written for these tests, with ids their
focused (non-machine) checks must fail (``test_gallery_runtime.py`` runs the whole gallery)."""


# -- the reference passes -------------------------------------------------------------------


def test_transition_checks_pass_on_the_reference_store_at_ci() -> None:
    """Every TRN and purge check, machines included, passes on MemoryStore at ci."""
    report = run_suite(MemoryStore, profile="ci", checks=TRN_CHECKS, derandomize=True)
    failed = {r.name: r.detail for r in report.checks if r.status == FAILED}
    assert failed == {}, "\n\n".join(f"{name}:\n{detail}" for name, detail in failed.items())
    # Checks that also need a capability MemoryStore lacks (multi_process) are not_applicable.
    runnable = {c.name for c in TRN_CHECKS if {c.capability, *c.also} <= MemoryStore.declared}
    assert runnable <= {r.name for r in report.checks if r.status == PASSED}
    assert "exports_beside_transitions" not in runnable  # it runs on SQLite and PostgreSQL


def test_every_transition_id_is_covered() -> None:
    """Every TRN id of the index is covered by a check, and the machine names only real ids."""
    trn = {i for i in active_ids() if i.startswith("TRN-")}
    covered = {i for c in all_checks() for i in c.ids}
    assert trn - covered == set()
    assert set(RUNTIME_MACHINE_IDS) | set(PURGE_IDS) <= active_ids()


def test_ledger_only_store_refuses_runtime_operations() -> None:
    """CAP-002, TRN-109: a ledger-only store refuses every runtime operation; TRN ids n/a."""
    assert {name for ops in ABSENT_OPERATIONS.values() for name, _ in ops} >= {
        "transition", "load_run", "list_active_runs", "load_snapshot", "scan_recoverable",
        "purge",
    }
    chosen = [c for c in all_checks() if c.name in (
        "absent_capabilities_refused", "runtime_import_without_capability",
        "runtime_state_machine", "purge_answers_and_reads")]
    report = run_suite(LedgerOnly, profile="smoke", checks=chosen, derandomize=True)
    runner_checks = ("capability_declaration", "fresh_store")
    statuses = {r.name: r.status for r in report.checks if r.name not in runner_checks}
    assert statuses == {
        "absent_capabilities_refused": PASSED,
        "runtime_import_without_capability": PASSED,
        "runtime_state_machine": NOT_RUN,
        "purge_answers_and_reads": NOT_RUN,
    }
    requirement = {r.id: r.status for r in report.requirements}
    assert requirement["TRN-109"] == PASSED
    assert requirement["TRN-090"] == NOT_APPLICABLE


def test_purge_checks_run_without_transitions() -> None:
    """The purge checks test a store without runs and pass, but for those needing runs.

    TRN-091 needs an active run: its check and the purge machine are not run on
    such a store (issue 16: they passed vacuously), so TRN-091 is not_applicable;
    nor is the check of a purged conversation's run named again (TRN-009).
    """
    chosen = [c for c in all_checks()
              if c.run.__module__ == "convledger_conformance.runtime.checks_purge"]
    needing_runs = {c.name for c in chosen if Capability.TRANSITIONS in c.also}
    assert needing_runs == {
        "purge_blocked_by_an_active_run",
        "runtime_state_machine_with_purge",
        "purged_run_named_again",  # TRN-009: a run the purged conversation had
    }
    report = run_suite(PurgeWithoutTransitions, profile="smoke", checks=chosen,
                       derandomize=True)
    assert {r.name: r.status for r in report.checks if r.name in {c.name for c in chosen}} == {
        c.name: NOT_RUN if c.name in needing_runs else PASSED for c in chosen
    }
    statuses = {r.id: r.status for r in report.requirements}
    assert statuses["TRN-091"] != PASSED
    assert all(statuses[i] == PASSED for i in ("TRN-090", "TRN-092", "TRN-093", "TRN-094"))


# -- the broken stores fail ------------------------------------------------------------------


@pytest.mark.parametrize(("store", "catches"), BROKEN, ids=lambda b: getattr(b, "__name__", ""))
def test_focused_checks_kill_the_broken_store(
    store: type[MemoryStore], catches: tuple[str, ...]
) -> None:
    """The focused checks covering a broken store's ids fail at least those ids."""
    selected = [c for c in TRN_CHECKS if set(c.ids) & set(catches) and c.name not in MACHINES]
    row = kill(broken("runtime", store, *catches), selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(catches) <= row.failed


@pytest.mark.parametrize(
    ("store", "catches"),
    [(IgnoresFences, {"TRN-040", "TRN-060"}),
     (ForgetsKeysOfEndedRuns, {"TRN-020", "TRN-021", "TRN-103", "TRN-107"}),
     (DecidesOutsideTheLock, {"TRN-003"})],
    ids=lambda b: getattr(b, "__name__", ""),
)
def test_runtime_machine_kills_the_broken_store(
    store: type[MemoryStore], catches: set[str]
) -> None:
    """The runtime machine alone fails the store and prints a runnable reproduction.

    Shrinking is skipped: it would take tens of seconds, and the printed
    program is runnable either way.
    """
    counted = CountingFactory(store)
    machine = build_runtime_machine(counted)
    unshrunk = settings(settings_for("ci", derandomize=True), phases=[Phase.generate])
    with pytest.raises(Exception) as raised:
        run_state_machine_as_test(machine, settings=unshrunk)
    print(f"\n{store.__name__}: killed at ci by the runtime machine after "
          f"{counted.examples} program(s)")
    if store is DecidesOutsideTheLock and not isinstance(raised.value, CheckFailure):
        # A race may not lose again when Hypothesis replays the failing program; it
        # then reports the failure as flaky, which the runner counts as failing every
        # id of the check (check_failures.failed_ids), as it does here.
        assert set(failed_ids(RUNTIME_MACHINE_IDS, raised.value)) & catches
        return
    assert isinstance(raised.value, CheckFailure), raised.value
    assert set(raised.value.ids) & catches
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "state = RuntimeMachine()" in notes
    assert "state.teardown()" in notes


def test_race_between_terminals_is_decided_once_by_the_reference() -> None:
    """Two terminals with one fence from two threads: exactly one applies on MemoryStore."""
    store = MemoryStore()
    from convledger_conformance.runtime.checks_transitions import Driver, fence_of

    driver = Driver(store, ("TRN-003",))
    run = driver.owned("c", "r")
    results: list[Status] = []
    barrier = threading.Barrier(2)

    def end(reason: str, event_id: str) -> None:
        barrier.wait()
        outcome = store.transition("c", Terminal("r", fence_of(run), reason, {}),
                                   event_id=event_id, occurred_at="2024-01-01T00:00:00Z")
        results.append(outcome.status)

    threads = [threading.Thread(target=end, args=(reason, f"e-{reason}"))
               for reason in ("success", "timeout")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(s.value for s in results) == ["applied", "conflict"]
    assert store.head("c") == 3


def test_recovery_order_is_code_point_order() -> None:
    """The reference's recovery order sorts the suite's scan ids by code point (TRN-085)."""
    from convledger_conformance.runtime.checks_reads import SCAN_CONVERSATIONS

    def run(conversation: str) -> Run:
        return Run.from_json({
            "runId": "r", "conversationId": conversation, "ordinal": 1, "state": "running",
            "reason": None, "policy": None, "owner": "w", "revision": 1, "fencingToken": 1,
            "inputIds": ["i"], "assistantMessageId": "a", "placed": True, "checkpoint": None,
            "lastOperation": None, "absorbedIntoRunId": None, "createdAt": "t",
            "updatedAt": "t",
        })

    ordered = sorted((run(c) for c in SCAN_CONVERSATIONS), key=recovery_order)
    assert [r.conversation_id for r in ordered] == sorted(SCAN_CONVERSATIONS)
