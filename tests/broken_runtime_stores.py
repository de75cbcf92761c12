"""Deliberately broken MemoryStore variants for chapter TRN: the conformance checks must kill each.

Each class has exactly ONE bug a real runtime store could make, and names the
requirement ids a conformance run must report failed for it. Most bugs sit in
the decision or in what is written; :func:`transit` is MemoryStore's
transaction written out once with two seams (``decide_with`` and
``append_always``), so each variant states its bug in a line or two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from broken_stores import Broken
from convledger.archive import Archive
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore, _copied_envelope
from convledger.runtime.operations import RecoveryCursor, after_cursor
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

Decide = Callable[[RuntimeView, str, Transition, str], Decision]


def transit(
    store: MemoryStore,
    conversation_id: str,
    transition: Transition,
    draft: EventDraft,
    *,
    decide_with: Decide = decide,
    append_always: bool = False,
) -> Outcome:
    """MemoryStore's transition step, with the decision and the append made replaceable."""
    with store._lock:
        store._refuse_purged(conversation_id)
        state = store._runtime.get(conversation_id) or RuntimeState(conversation_id)
        decision = decide_with(state, conversation_id, transition, draft.occurred_at)
        if decision.status is not Status.APPLIED:
            if append_always:  # the bug of AppendsOnEveryOutcome
                store._commit(conversation_id, store._placed(conversation_id, (draft,), None))
            return Outcome.of(decision)
        staged = state.copy()
        staged.apply(decision)
        placed = store._placed(conversation_id, (draft,), None)
        store._runtime[conversation_id] = staged
        store._commit(conversation_id, placed)
    return Outcome.of(decision, _copied_envelope(placed[0]))


class AppendsOnEveryOutcome(MemoryStore):
    """TRN-004: appends the transition's event even when it conflicts or is a duplicate."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        return transit(self, conversation_id, transition, draft, append_always=True)


def _ignoring_tokens(
    view: RuntimeView, conversation_id: str, step: Transition, at: str
) -> Decision:
    """Decides as if the caller always held the run's current fencing token."""
    if isinstance(step, Checkpoint | Operation | Terminal):
        run = view.run(step.run_id)
        if run is not None:
            fence = attrs.evolve(step.fence, fencing_token=run.fencing_token)
            step = attrs.evolve(step, fence=fence)
    return decide(view, conversation_id, step, at)


class IgnoresFencingToken(MemoryStore):
    """TRN-040: compares owner and revision but not the fencing token (prior-art bug 9)."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        return transit(self, conversation_id, transition, draft, decide_with=_ignoring_tokens)


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


def _duplicate_with_new_ids(
    view: RuntimeView, conversation_id: str, step: Transition, at: str
) -> Decision:
    decision = decide(view, conversation_id, step, at)
    if isinstance(step, Accept) and decision.status is Status.DUPLICATE:
        fresh = Admitted(step.input_id, step.run_id, step.assistant_message_id)
        return attrs.evolve(decision, admitted=fresh)
    return decision


class DuplicateAnswersProposedIds(MemoryStore):
    """TRN-021: a repeated idempotency key answers with the ids of the repeat, not the original."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        return transit(
            self, conversation_id, transition, draft, decide_with=_duplicate_with_new_ids
        )


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
        with self._lock:
            owned = [
                run for state in self._runtime.values() for run in state.runs.values()
                if run.state.owned
            ]
        ordered = sorted(owned, key=lambda run: (run.conversation_id.casefold(), run.ordinal))
        if after is not None:
            ordered = [run for run in ordered if after_cursor(run, after)]
        return ordered[:limit]


class PurgeLeavesNoTombstone(MemoryStore):
    """TRN-092: purges the data but not the name, so a late writer brings the conversation back."""

    def _purge(self, conversation_id: str) -> bool:
        purged = super()._purge(conversation_id)
        self._purged.discard(conversation_id)
        return purged


class PurgesActiveRuns(MemoryStore):
    """TRN-091: purges a conversation while one of its runs is still active."""

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


BROKEN_RUNTIME_STORES: tuple[Broken, ...] = (
    Broken(AppendsOnEveryOutcome, ("TRN-004",)),
    Broken(IgnoresFencingToken, ("TRN-040",)),
    Broken(AcquiresOutOfCausalOrder, ("TRN-031",)),
    Broken(DuplicateAnswersProposedIds, ("TRN-021",)),
    Broken(AbsorptionWritesOneRun, ("TRN-065",)),
    Broken(ActiveRunsByRunId, ("TRN-081",)),
    Broken(RecoveryInLocaleOrder, ("TRN-083",)),
    Broken(PurgeLeavesNoTombstone, ("TRN-092",)),
    Broken(PurgesActiveRuns, ("TRN-091",)),
    Broken(ExportsWithoutRuntime, ("TRN-103",)),
    Broken(ImportForgetsRuntime, ("TRN-106",)),
)
"""Every broken runtime store and the ids its bug must fail."""
