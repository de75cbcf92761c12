"""The runtime gallery: broken MemoryStores of chapter TRN (transitions and purge).

Each class has exactly ONE bug a real runtime store could make, and is listed
in :data:`BROKEN` with the requirement ids a conformance run must report
failed for it. Most override a hook of ``TransitionsBase``, ``PurgeBase`` or
``StoreBase`` and call ``super()``: they change the transition they pass on,
the outcome they answer, or what they write after it.

Two bugs sit inside the decision (:class:`AcquiresOutOfCausalOrder`,
:class:`AbsorptionWritesOneRun`): no hook reaches it, so :func:`transit`
writes MemoryStore's transaction out once, with the decision replaceable. A
few more need MemoryStore's runtime state or tombstones themselves (a race,
forgotten admissions, a purge that ignores runs or leaves no tombstone); their
docstrings say so. Three were found by mutation testing (``scripts/mutation.py``,
``docs/mutation.md``): :class:`PurgedOnlyWhenApplied`, :class:`PurgeTakesChildLinks`
and :class:`RowsOfEveryOwner` (the rows beside the ledger, FCT-024); one by the issue 37 run
over ``runtime/``: :class:`TakesAnyTruthyInputId`, :class:`RunInvariantsAnsweredIntegrity`,
:class:`SkipsEndedAbsorbees`, :class:`DefaultScanOf101`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

import attrs

from convledger import canonical
from convledger.archive import Archive
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft, copied, from_wire
from convledger.errors import IntegrityError, LedgerError
from convledger.host.rows import FactRow
from convledger.memory import MemoryStore
from convledger.runtime.operations import RecoveryCursor, RecoveryPage, after_cursor
from convledger.runtime.records import Run, RunState
from convledger.runtime.rules import decide
from convledger.runtime.state import RuntimeState
from convledger.runtime.transitions import (
    Accept,
    Acquire,
    Checkpoint,
    Operation,
    Terminal,
    Transition,
)
from convledger.runtime.view import Admitted, Decision, Outcome, RuntimeView, Status
from convledger.store import ImportReport
from galleries import BrokenStore, broken

Decide = Callable[[RuntimeView, str, Transition, str], Decision]

EVERY_RUN = 2**31
"""A scan limit above any number of runs a check makes."""


def transit(
    store: MemoryStore,
    conversation_id: str,
    transition: Transition,
    draft: EventDraft,
    *,
    decide_with: Decide = decide,
) -> Outcome:
    """MemoryStore's transition step, the decision replaceable (it reaches the store's state)."""
    with store._lock:
        store._refuse_purged(conversation_id)
        state = store._runtime.get(conversation_id) or RuntimeState(conversation_id)
        decision = decide_with(state, conversation_id, transition, draft.occurred_at)
        if decision.status is not Status.APPLIED:
            return Outcome.of(decision)
        staged = state.copy()
        staged.apply(decision)
        placed = store._placed(conversation_id, (draft,), None)
        store._runtime[conversation_id] = staged
        store._commit(conversation_id, placed)
    return Outcome.of(decision, copied(placed[0]))


class AppendsOnEveryOutcome(MemoryStore):
    """TRN-004: appends the transition's event even when it conflicts or is a duplicate."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        outcome = super()._transit(conversation_id, transition, draft)
        if outcome.status is not Status.APPLIED:
            self._append(conversation_id, (draft,), None)
        return outcome


class IgnoresFencingToken(MemoryStore):
    """TRN-040: compares owner and revision but not the fencing token (prior-art bug 9)."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        if isinstance(transition, Checkpoint | Operation | Terminal):
            run = self._load_run(conversation_id, transition.run_id)
            if run is not None:  # as if the caller always held the run's current token
                fence = attrs.evolve(transition.fence, fencing_token=run.fencing_token)
                transition = attrs.evolve(transition, fence=fence)
        return super()._transit(conversation_id, transition, draft)


@attrs.define
class _OnlyOwnedBlock:
    """A view whose active runs omit queued ones, so an earlier queued run never blocks."""

    inner: RuntimeState

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def active_runs(self) -> Sequence[Run]:
        return [run for run in self.inner.active_runs() if run.state is not RunState.QUEUED]


def _acquire_any_queued(
    view: RuntimeView, conversation_id: str, step: Transition, at: str
) -> Decision:
    if isinstance(step, Acquire) and isinstance(view, RuntimeState):
        return decide(_OnlyOwnedBlock(view), conversation_id, step, at)  # type: ignore[arg-type]
    return decide(view, conversation_id, step, at)


class AcquiresOutOfCausalOrder(MemoryStore):
    """TRN-031: lets a later queued run be acquired before an earlier one (prior-art bug 2)."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        return transit(self, conversation_id, transition, draft, decide_with=_acquire_any_queued)


def _joining_requeued(
    view: RuntimeView, conversation_id: str, step: Transition, at: str
) -> Decision:
    """The rules, except that an accept takes a requeued run (fencingToken > 0) for one never
    acquired: the run is shown with token 0, and the token is put back in what is written."""
    active = view.active_runs() if isinstance(step, Accept) else ()
    latest = active[-1] if active else None
    if (latest is None or latest.state is not RunState.QUEUED or latest.owner is not None
            or latest.fencing_token == 0 or not isinstance(view, RuntimeState)):
        return decide(view, conversation_id, step, at)
    masked = view.copy()
    masked.runs[latest.run_id] = attrs.evolve(latest, fencing_token=0)
    decision = decide(masked, conversation_id, step, at)

    def restored(record: object) -> object:
        if isinstance(record, Run) and record.run_id == latest.run_id:
            return attrs.evolve(record, fencing_token=latest.fencing_token)
        return record

    run = decision.run if decision.run is None else restored(decision.run)
    writes = tuple(restored(record) for record in decision.writes)
    return attrs.evolve(decision, run=run, writes=writes)  # type: ignore[arg-type]


class AcceptJoinsRequeuedRun(MemoryStore):
    """TRN-023: an input accepted right after a run was acquired and then requeued joins that
    run, as if it had never been acquired (issue 37)."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        return transit(self, conversation_id, transition, draft, decide_with=_joining_requeued)


class ForeignEventIdAnsweredDuplicate(MemoryStore):
    """TRN-008: a transition whose eventId is stored in another conversation answers the
    duplicate outcome (as if it were done already) instead of the refusal (issue 37)."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        mine = {e.event_id for e in self._ledgers.get(conversation_id, [])}
        if draft.event_id in self._event_ids and draft.event_id not in mine:
            state = self._runtime.get(conversation_id)
            head = None if state is None else state.head()
            return Outcome(Status.DUPLICATE, 0 if head is None else head.version)
        return super()._transit(conversation_id, transition, draft)


class DuplicateAnswersProposedIds(MemoryStore):
    """TRN-021: a repeated idempotency key answers with the ids of the repeat, not the original."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        outcome = super()._transit(conversation_id, transition, draft)
        if isinstance(transition, Accept) and outcome.status is Status.DUPLICATE:
            fresh = Admitted(transition.input_id, transition.run_id,
                             transition.assistant_message_id)
            return attrs.evolve(outcome, admitted=fresh)
        return outcome


def _absorbing_nothing(
    view: RuntimeView, conversation_id: str, step: Transition, at: str
) -> Decision:
    decision = decide(view, conversation_id, step, at)
    if isinstance(step, Terminal) and decision.status is Status.APPLIED:
        kept = tuple(
            record for record in decision.writes
            if not (isinstance(record, Run) and record.run_id in step.absorb_run_ids)
        )
        return attrs.evolve(decision, writes=kept)
    return decision


class AbsorptionWritesOneRun(MemoryStore):
    """TRN-065, TRN-066: a terminal with absorption records only the terminating run."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        return transit(self, conversation_id, transition, draft, decide_with=_absorbing_nothing)


class ActiveRunsByRunId(MemoryStore):
    """TRN-081, TRN-085: lists active runs by run id instead of by ordinal."""

    def _active_runs(self, conversation_id: str) -> list[Run]:
        return sorted(super()._active_runs(conversation_id), key=lambda run: run.run_id)


class RecoveryInLocaleOrder(MemoryStore):
    """TRN-083, TRN-085: pages recoverable runs by case-folded conversation id, a locale habit."""

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        owned = super()._scan_recoverable(None, EVERY_RUN)
        ordered = sorted(owned, key=lambda run: (run.conversation_id.casefold(), run.ordinal))
        if after is not None:
            ordered = [run for run in ordered if after_cursor(run, after)]
        return ordered[:limit]


class PurgeLeavesNoTombstone(MemoryStore):
    """TRN-092: purges the data but not the name, so a late writer brings the conversation back.

    The tombstone is MemoryStore's own set; no hook removes a name from it.
    """

    def _purge(self, conversation_id: str) -> bool:
        purged = super()._purge(conversation_id)
        self._purged.discard(conversation_id)
        return purged


class PurgesActiveRuns(MemoryStore):
    """TRN-091: purges a conversation while one of its runs is still active.

    The refusal reads MemoryStore's runtime state; the bug forgets that state first.
    """

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            state = self._runtime.pop(conversation_id, None)
            if state is not None:
                self._runtime[conversation_id] = RuntimeState(conversation_id)
        return super()._purge(conversation_id)


class ExportsWithoutRuntime(MemoryStore):
    """TRN-103: exports the ledger but not the runtime companion."""

    def _export_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue]]:
        events, _ = super()._export_contents(conversation_id)
        return events, {}


class ImportForgetsRuntime(MemoryStore):
    """TRN-105, TRN-106: imports the events but drops the runtime records."""

    def _import(self, archive: Archive) -> None:
        super()._import(attrs.evolve(archive, companions={}))


class ScansInUtf16Order(MemoryStore):
    """TRN-083, TRN-085: orders recoverable runs by UTF-16 code units, not code points."""

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        found = sorted(super()._scan_recoverable(None, 1000),
                       key=lambda r: (r.conversation_id.encode("utf-16-be"), r.ordinal))
        if after is not None:
            key = (after.conversation_id.encode("utf-16-be"), after.ordinal)
            found = [r for r in found if (r.conversation_id.encode("utf-16-be"), r.ordinal) > key]
        return found[:limit]


class IgnoresFences(MemoryStore):
    """TRN-040: lets any caller end a run, whatever owner, revision and token it presents."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft
                 ) -> Outcome:
        if isinstance(transition, Terminal):
            run = self._load_run(conversation_id, transition.run_id)
            if run is not None and run.state.owned and run.owner is not None:
                fence = attrs.evolve(transition.fence, owner=run.owner, revision=run.revision,
                                     fencing_token=run.fencing_token)
                transition = attrs.evolve(transition, fence=fence)
        return super()._transit(conversation_id, transition, draft)


class SkipsEndedAbsorbees(MemoryStore):
    """TRN-064: a terminal naming an ended run to absorb applies, passing that run over.

    Found by mutation testing (issue 37, ``runtime/rules.py``: the conflict for an absorbee
    that is not queued -> ``return None``): no check asked for that conflict at smoke.
    """

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft
                 ) -> Outcome:
        if isinstance(transition, Terminal):
            kept = tuple(
                run_id for run_id in transition.absorb_run_ids
                if (run := self._load_run(conversation_id, run_id)) is None or run.state.active
            )
            transition = attrs.evolve(transition, absorb_run_ids=kept)
        return super()._transit(conversation_id, transition, draft)


class DefaultScanOf101(MemoryStore):
    """TRN-083: ``scan_recoverable`` without a limit pages 101 runs, not 100.

    Found by mutation testing (issue 37, ``runtime/store.py``: ``limit: int = 100`` ->
    ``101``): the scan check had fewer than 100 recoverable runs.
    """

    def scan_recoverable(
        self, *, after: RecoveryCursor | None = None, limit: int = 101
    ) -> RecoveryPage:
        return super().scan_recoverable(after=after, limit=limit)


class ForgetsKeysOfEndedRuns(MemoryStore):
    """TRN-020, TRN-021: drops a run's admissions when the run ends.

    The admissions are MemoryStore's runtime state; no hook forgets one.
    """

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft
                 ) -> Outcome:
        outcome = super()._transit(conversation_id, transition, draft)
        if outcome.status is Status.APPLIED and outcome.run is not None and (
            not outcome.run.state.active
        ):
            with self._lock:
                state = self._runtime[conversation_id]
                state.admissions = {k: a for k, a in state.admissions.items()
                                    if a.run_id != outcome.run.run_id}
        return outcome


class DecidesOutsideTheLock(MemoryStore):
    """TRN-003: decides on a state read before the write, with no compare-and-swap.

    A race inside the transaction: it takes MemoryStore's lock and state apart.
    """

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft
                 ) -> Outcome:
        with self._lock:
            self._refuse_purged(conversation_id)
            state = (self._runtime.get(conversation_id) or RuntimeState(conversation_id)).copy()
        decision = decide(state, conversation_id, transition, draft.occurred_at)
        if decision.status is not Status.APPLIED:
            return Outcome.of(decision)
        time.sleep(0.002)  # the window a real store without a CAS leaves open
        with self._lock:
            state.apply(decision)
            placed = self._placed(conversation_id, (draft,), None)
            self._runtime[conversation_id] = state
            self._commit(conversation_id, placed)
        return Outcome.of(decision, placed[0])


class PurgeWithoutTombstone(MemoryStore):
    """TRN-092: purges the data but keeps no tombstone, so late writes come back.

    The tombstone is MemoryStore's own set; no hook removes a name from it.
    """

    def _purge(self, conversation_id: str) -> bool:
        newly = super()._purge(conversation_id)
        with self._lock:
            self._purged.discard(conversation_id)
        return newly


class PurgedOnlyWhenApplied(MemoryStore):
    """TRN-092, TRN-009: checks the purge only on the way to applying a transition.

    A transition of a purged conversation that a fresh state would not apply (it names a
    run the conversation had before its purge: ``not_found``) answers that outcome
    instead of being refused ``purged``. Found by mutation testing
    (``scripts/mutation.py``: ``MemoryStore._transit`` without its ``_refuse_purged``).
    """

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        with self._lock:
            if conversation_id in self._purged:
                fresh = RuntimeState(conversation_id)
                decision = decide(fresh, conversation_id, transition, draft.occurred_at)
                if decision.status is not Status.APPLIED:
                    return Outcome.of(decision)
        return super()._transit(conversation_id, transition, draft)


class PurgeTakesChildLinks(MemoryStore):
    """TRN-093: a purge deletes the conversation's child links with its other rows.

    A child settling after its parent's purge then has no row to record its state on
    (FCT-023). Found by mutation testing (``scripts/mutation.py``: the purge's test of
    which rows beside the ledger go).
    """

    def _purge(self, conversation_id: str) -> bool:
        newly = super()._purge(conversation_id)
        with self._lock:
            for key in [key for key in self._side_rows if key[:2] == ("children", conversation_id)]:
                del self._side_rows[key]
        return newly


class RowsOfEveryOwner(MemoryStore):
    """FCT-024: ``child_links`` and ``schedules`` answer the rows of every conversation.

    The rows are filtered by table only, not by their owner. Found by mutation testing
    (``scripts/mutation.py``: ``MemoryStore._fact_rows``).
    """

    def _fact_rows(self, table: str, conversation_id: str) -> tuple[FactRow, ...]:
        with self._lock:
            return tuple(row for key, row in sorted(self._side_rows.items()) if key[0] == table)


class TrustsTheCompanion(MemoryStore):
    """TRN-104: imports the runtime companion without comparing it with the fold."""

    def import_conversation(self, archive: bytes) -> ImportReport:
        """Import, passing over any refusal of the runtime companion (and only that)."""
        try:
            return super().import_conversation(archive)
        except LedgerError as error:
            if error.requirement not in {"TRN-100", "TRN-101", "TRN-102", "TRN-104"}:
                raise
        document = json.loads(archive)
        events = tuple(from_wire(item) for item in document["events"])
        self._import(Archive(document["conversationId"], events, document["companions"]))
        return ImportReport(document["conversationId"], len(events), events[-1].seq)


class TakesAnyTruthyInputId(MemoryStore):
    """TRN-104: a run's ``inputIds`` in an imported companion may hold any truthy value.

    Found by mutation testing (issue 37, ``runtime/fields.py``: ``isinstance(item, str) and
    item`` -> ``or``): a number in ``inputIds`` passes the shape check as if it were an id,
    so the import is refused ``integrity`` (the companion differs from the fold) instead
    of ``invalid_input`` (TRN-104: not of the shape of TRN-103, TRN-011).
    """

    def import_conversation(self, archive: bytes) -> ImportReport:
        """Import with every truthy non-string item of a run's ``inputIds`` taken as text."""
        document = json.loads(archive)
        runtime = document.get("companions", {}).get("runtime")
        runs = runtime.get("runs") if isinstance(runtime, dict) else None
        for run in runs if isinstance(runs, list) else []:
            items = run.get("inputIds") if isinstance(run, dict) else None
            if isinstance(items, list):
                run["inputIds"] = [
                    str(item) if item and not isinstance(item, str) else item for item in items
                ]
        return super().import_conversation(canonical.encode(document))


class RunInvariantsAnsweredIntegrity(MemoryStore):
    """TRN-111: a companion run breaking TRN-011, TRN-014 or TRN-015 is refused ``integrity``.

    Found by mutation testing (issue 37, ``runtime/records.py``: a ``problems.append`` of
    ``run_problems`` deleted, four mutants): the record parses, so the import compares it
    with the fold and answers ``integrity`` instead of ``invalid_input`` for a run whose
    ``inputIds`` is empty, which has an owner while queued, which names an absorber without
    reason ``absorbed``, or which is absorbed into itself.
    """

    def import_conversation(self, archive: bytes) -> ImportReport:
        """Refuse a run record breaking those invariants as a fold difference."""
        runtime = json.loads(archive).get("companions", {}).get("runtime")
        runs = runtime.get("runs") if isinstance(runtime, dict) else None
        for run in runs if isinstance(runs, list) else []:
            if isinstance(run, dict) and (run.get("inputIds") == [] or (
                run.get("state") == "queued" and run.get("owner") is not None) or (
                run.get("absorbedIntoRunId") is not None and (
                    run.get("reason") != "absorbed"
                    or run.get("absorbedIntoRunId") == run.get("runId")))):
                raise IntegrityError("the runtime companion differs from the state its ledger "
                                     "rebuilds", requirement="TRN-104")
        return super().import_conversation(archive)


BROKEN: tuple[BrokenStore, ...] = (
    broken("runtime", AppendsOnEveryOutcome, "TRN-004"),
    broken("runtime", IgnoresFencingToken, "TRN-040"),
    broken("runtime", AcquiresOutOfCausalOrder, "TRN-031"),
    broken("runtime", DuplicateAnswersProposedIds, "TRN-021"),
    broken("runtime", AcceptJoinsRequeuedRun, "TRN-023", checks=("transitions_in_every_order",)),
    broken("runtime", ForeignEventIdAnsweredDuplicate, "TRN-008",
           checks=("transition_event_id_stored_elsewhere",)),
    broken("runtime", AbsorptionWritesOneRun, "TRN-065"),
    broken("runtime", ActiveRunsByRunId, "TRN-081"),
    broken("runtime", RecoveryInLocaleOrder, "TRN-083"),
    broken("runtime", PurgeLeavesNoTombstone, "TRN-092"),
    broken("runtime", PurgesActiveRuns, "TRN-091"),
    broken("runtime", ExportsWithoutRuntime, "TRN-103"),
    broken("runtime", ImportForgetsRuntime, "TRN-106"),
    broken("runtime", ScansInUtf16Order, "TRN-083", "TRN-085"),
    broken("runtime", IgnoresFences, "TRN-040", "TRN-060"),
    broken("runtime", ForgetsKeysOfEndedRuns, "TRN-021"),
    broken("runtime", PurgeWithoutTombstone, "TRN-092"),
    broken("runtime", TrustsTheCompanion, "TRN-104"),
    broken("runtime", PurgedOnlyWhenApplied, "TRN-092"),
    broken("runtime", PurgeTakesChildLinks, "TRN-093"),
    broken("runtime", RowsOfEveryOwner, "FCT-024"),
    broken("runtime", DecidesOutsideTheLock, "TRN-003", checks=("runtime_state_machine",)),
    broken("runtime", TakesAnyTruthyInputId, "TRN-104",
           checks=("runtime_companion_checked_on_import",)),
    broken("runtime", RunInvariantsAnsweredIntegrity, "TRN-111",
           checks=("runtime_companion_checked_on_import",)),
    broken("runtime", SkipsEndedAbsorbees, "TRN-064",
           checks=("coalescing_placement_and_absorption",)),
    broken("runtime", DefaultScanOf101, "TRN-083",
           checks=("scan_recoverable_pages_in_code_point_order",)),
)
"""Every broken store of chapter TRN and the ids its bug must fail (DecidesOutsideTheLock only
the runtime state machine catches: a race)."""
