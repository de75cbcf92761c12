"""No check passes vacuously: a store lacking what a check needs never gets ``passed`` from it.

Issue 16, point 8: ``purge_blocked_by_an_active_run`` (TRN-091) passed in
under 1 ms against a store declaring ``purge`` without ``transitions``, which
cannot have an active run. The proof here is general, over every registered
check, with the real :class:`~convledger.memory.MemoryStore` narrowed by its
``capabilities`` declaration (its capability bases then refuse the
operations of what it no longer declares, CAP-002) and instrumented to record
which capability's operations were called and returned (not refused):

1. every check runs once on the full store; the capabilities whose operations
   it called successfully are the ones it *exercises*;
2. for each exercised capability ``C`` that is not among the ones the check
   requires (``capability`` and ``also``), the check runs again on a store
   declaring everything but ``C``. It may pass there only when it names ``C``
   in ``optional`` (its ids are established without ``C``: the host records
   facts as events alone without ``fact_rows``, say); otherwise a pass proves
   it passed without establishing a precondition;
3. for each required capability the store declares, a store without it gets
   the check ``not_run`` from the runner, never ``passed``: its ids are then
   ``not_applicable`` with the reason (CAP-004), which a purge-only store's
   report shows for TRN-091.

Every check and every such narrowing runs at the smoke profile, derandomized
(about 8 s for the 180-odd checks on 2 cores); the ``slow`` test repeats the
narrowings at profile ci.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from convledger.capabilities import OPERATIONS, Capability
from convledger.errors import ConflictError
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.runtime import Accept
from convledger_conformance.registry import Check, CheckContext, all_checks
from convledger_conformance.report import NOT_APPLICABLE, PASSED
from convledger_conformance.runner import hypothesis_defaults, run_check, run_suite
from convledger_conformance.support import STAMP, draft

FULL = MemoryStore.declared
METHODS = {
    operation.method: capability for capability, ops in OPERATIONS.items() for operation in ops
}


class Recorder:
    """The capabilities whose operations returned, across every store of one check run."""

    def __init__(self) -> None:
        self.used: set[Capability] = set()


def _recording(
    method: Callable[..., Any], capability: Capability, recorder: Recorder
) -> Callable[..., Any]:
    def call(self: MemoryStore, *args: object, **kwargs: object) -> Any:
        result = method(self, *args, **kwargs)
        recorder.used.add(capability)  # reached only when the operation was not refused
        return result

    call.__name__ = method.__name__
    return call


def narrowed(declared: frozenset[Capability], recorder: Recorder) -> type[MemoryStore]:
    """MemoryStore declaring only ``declared``, recording its successful operations."""
    members: dict[str, object] = {"declared": declared}
    for name, capability in METHODS.items():
        method = getattr(MemoryStore, name, None)
        if method is not None:
            members[name] = _recording(method, capability, recorder)
    return type("NarrowedMemoryStore", (MemoryStore,), members)


def _outcome(
    item: Check, declared: frozenset[Capability], profile: str
) -> tuple[str, set[Capability]]:
    recorder = Recorder()
    store_class = narrowed(declared, recorder)
    context = CheckContext(factory=store_class, profile=profile, capabilities=declared)
    with hypothesis_defaults(derandomize=True):
        result = run_check(item, context)
    return result.status, recorder.used


def _runnable() -> Iterator[Check]:
    return (item for item in all_checks() if not item.missing(FULL))


def _vacuous(profile: str) -> list[str]:
    found = []
    for item in _runnable():
        status, used = _outcome(item, FULL, profile)
        assert status == PASSED, f"{item.name} fails on the full MemoryStore: {status}"
        needed = {item.capability, *item.also}
        for capability in sorted(used - needed - {Capability.LEDGER}, key=lambda c: c.value):
            if capability in item.optional:
                continue
            status, _ = _outcome(item, FULL - {capability}, profile)
            if status == PASSED:
                found.append(
                    f"{item.name} ({', '.join(item.ids)}) passes without {capability.value!r},"
                    " which it exercises on a full store: name it in also= (a precondition)"
                    " or optional= (its ids hold without it)"
                )
    return found


def test_no_check_passes_without_a_capability_it_exercises() -> None:
    """Steps 1 and 2 of the module docstring, for every check, at smoke."""
    assert _vacuous("smoke") == []


@pytest.mark.slow
def test_no_check_passes_without_a_capability_it_exercises_at_ci() -> None:
    """The same narrowings at profile ci (more examples, so more operations reached)."""
    assert _vacuous("ci") == []


def test_the_instrument_sees_a_vacuous_pass() -> None:
    """The meta-test is not vacuous itself: the TRN-091 check as it was on main is caught."""
    old = Check(name="old_purge_blocked", ids=("TRN-091",), capability=Capability.PURGE,
                run=_old_trn_091)
    status, used = _outcome(old, FULL, "smoke")
    assert status == PASSED and Capability.TRANSITIONS in used
    status, _ = _outcome(old, FULL - {Capability.TRANSITIONS}, "smoke")
    assert status == PASSED  # what step 2 flags: it passes without what it exercises


def _old_trn_091(ctx: CheckContext) -> None:
    """The check as it was on main: without transitions it 'passed' after one purge."""
    store = ctx.factory()
    try:
        purging = require(store, Capability.PURGE)
        if Capability.TRANSITIONS not in store.capabilities:
            store.append("c", [draft("one")])
            purging.purge("c")
            return
        runs = require(store, Capability.TRANSITIONS)
        runs.transition("c", Accept("k", "i", "r", "a", {"text": "hi"}), event_id="e",
                        occurred_at=STAMP)
        with pytest.raises(ConflictError):
            purging.purge("c")
    finally:
        store.close()


@pytest.mark.parametrize(
    "item", [item for item in _runnable() if {item.capability, *item.also} - {Capability.LEDGER}],
    ids=lambda item: item.name,
)
def test_a_store_lacking_a_required_capability_gets_not_run(item: Check) -> None:
    """Step 3: the runner never runs a check on a store lacking what it requires."""
    for capability in {item.capability, *item.also} - {Capability.LEDGER}:
        assert item.missing(FULL - {capability}) == (capability,)


def test_purge_without_transitions_reports_trn_091_not_applicable() -> None:
    """The issue's case end to end: TRN-091 is not_applicable, with the reason, not passed."""
    recorder = Recorder()
    store_class = narrowed(FULL - {Capability.TRANSITIONS}, recorder)
    selected = [item for item in all_checks() if "TRN-091" in item.ids or item.name in (
        "absent_capabilities_refused",)]
    report = run_suite(store_class, profile="smoke", checks=selected, derandomize=True)
    status = {result.id: result.status for result in report.requirements}
    assert status["TRN-091"] == NOT_APPLICABLE, status["TRN-091"]
    reasons = [result.message for result in report.checks if "TRN-091" in result.ids]
    assert reasons and all("'transitions' is not declared" in reason for reason in reasons)
