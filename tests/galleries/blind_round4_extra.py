"""Blind round 4 (issue 37), second batch: five more memory stores, written blind.

Written after the first batch was committed and while it ran, without
reading its results, the suite or another gallery (see
:mod:`tests.galleries.blind_round4`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from convledger.envelope import Envelope
from convledger.memory import MemoryStore
from convledger.projections.definition import ProjectionDefinition
from convledger.runtime import rules
from convledger.runtime.operations import RecoveryCursor, recovery_order
from convledger.runtime.records import Run, RunState
from convledger.runtime.transitions import Checkpoint, Recover, Transition
from convledger.runtime.view import Decision, RuntimeView, Status
from convledger.store_interface import ImportReport

from .blind_round4 import _DecidingStore


class LookAheadIgnoresToSeq(MemoryStore):
    """The look-ahead row that decides ``nextSeq`` is fetched without the window's end.

    Bug: the hook returns the page inside ``[fromSeq, toSeq]`` and then "one
    more row to know whether a next page exists", fetched with ``seq >
    last`` only. A read whose page ends exactly at ``toSeq`` while the ledger
    goes on gets a ``nextSeq`` pointing outside the window.
    Breaks: LED-009 (nextSeq exactly when one more event exists inside the
    requested window).
    Realistic: the classic limit + 1 trick, with the upper bound forgotten in
    the second query.
    """

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        page = list(super()._read(conversation_id, from_seq, to_seq, limit - 1))
        if len(page) == limit - 1:
            after = page[-1].seq + 1 if page else from_seq
            page.extend(super()._read(conversation_id, after, None, 1))
        return page


class ImportReportCountsNonIgnorable(MemoryStore):
    """The import report counts the events a reader folds, not every event.

    Bug: ``events`` of the report is the number of non-ignorable events
    ("the events that mean something"); ARC-017 counts every event of the
    archive, ignorable ones included, so that it equals ``headSeq``.
    Breaks: ARC-017.
    Realistic: ignorable events look like noise to a producer.
    """

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        report = super().import_conversation(archive, projections=projections)
        ignorable = sum(1 for e in self._snapshot_events(report.conversation_id) if e.ignorable)
        if not ignorable:
            return report
        return ImportReport(
            conversation_id=report.conversation_id,
            events=report.events - ignorable,
            head_seq=report.head_seq,
        )


_FINISHED = frozenset(
    {
        RunState.COMPLETED,
        RunState.INTERRUPTED,
        RunState.FAILED,
        RunState.CANCELLED,
        RunState.ABANDONED,
    }
)


class RecoverAnyUnfinishedRun(_DecidingStore):
    """Recover acts on every run that is not finished, queued and superseded ones included.

    Bug: TRN-053 admits a recover only for a ``running`` or
    ``interrupt_requested`` run; the store tests "not finished" with its own
    list of finished states (which also lacks ``superseded``), so a recover
    of a queued run, or of a run absorbed by a terminal, at its revision is
    applied: it is abandoned (or requeued).
    Order: accept, recover(revision 0); or accept A, acquire A, accept B,
    terminal A absorbing B, recover B.
    Breaks: TRN-053, TRN-012, TRN-014.
    Realistic: "recover what is not done yet" is how the sweeper is described.
    """

    def decide(
        self, view: RuntimeView, conversation_id: str, transition: Transition, at: str
    ) -> Decision:
        if isinstance(transition, Recover):
            head = view.head()
            run = view.run(transition.run_id)
            if (
                head is not None
                and run is not None
                and not run.state.owned
                and run.state not in _FINISHED
                and run.revision == transition.revision
            ):
                if transition.action == "requeue":
                    requeued = attrs.evolve(
                        run, state=RunState.QUEUED, owner=None, revision=run.revision + 1,
                        updated_at=at,
                    )
                    return rules._applied(conversation_id, head.version, (requeued,), run=requeued)
                abandoned = rules._ended(run, "abandoned", at)
                writes = (abandoned, *rules._failed_answer(view, run, at))
                return rules._applied(conversation_id, head.version, writes, run=abandoned)
        return rules.decide(view, conversation_id, transition, at)


class CheckpointRefusedAfterInterruptRequest(_DecidingStore):
    """A checkpoint of a run whose interrupt was requested answers ``conflict``.

    Bug: the fence of TRN-040 is tested with ``state is running``; a worker
    that was asked to stop (``interrupt_requested``) may still save its draft
    and end the run, and here its checkpoint is refused.
    Order: accept, acquire, interrupt, checkpoint.
    Breaks: TRN-040, TRN-043.
    Realistic: "stop was requested, so stop writing" sounds safe.
    """

    def decide(
        self, view: RuntimeView, conversation_id: str, transition: Transition, at: str
    ) -> Decision:
        if isinstance(transition, Checkpoint):
            head = view.head()
            run = view.run(transition.run_id)
            if head is not None and run is not None and run.state is RunState.INTERRUPT_REQUESTED:
                return Decision(Status.CONFLICT, head.version, run=run)
        return rules.decide(view, conversation_id, transition, at)


class ScanCursorInclusive(MemoryStore):
    """The recovery scan's keyset cursor is inclusive.

    Bug: the page after the cursor ``(conversationId, ordinal)`` is read with
    ``>=`` instead of ``>``, so each following page starts with the run the
    previous page ended with: following ``next`` returns that run twice.
    Breaks: TRN-083 (starting after the cursor), TRN-084 (each run once).
    Realistic: the keyset off-by-one.
    """

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        with self._lock:
            owned = [
                run
                for state in self._runtime.values()
                for run in state.runs.values()
                if run.state.owned
                and (
                    after is None
                    or (run.conversation_id.encode("utf-8"), run.ordinal)
                    >= (after.conversation_id.encode("utf-8"), after.ordinal)
                )
            ]
        return sorted(owned, key=recovery_order)[:limit]


def look_ahead_ignores_to_seq() -> MemoryStore:
    return LookAheadIgnoresToSeq()


def import_report_counts_non_ignorable() -> MemoryStore:
    return ImportReportCountsNonIgnorable()


def recover_any_unfinished_run() -> MemoryStore:
    return RecoverAnyUnfinishedRun()


def checkpoint_refused_after_interrupt_request() -> MemoryStore:
    return CheckpointRefusedAfterInterruptRequest()


def scan_cursor_inclusive() -> MemoryStore:
    return ScanCursorInclusive()


EXTRA_STORES: tuple[tuple[str, str], ...] = (
    ("look_ahead_ignores_to_seq", "boundaries"),
    ("import_report_counts_non_ignorable", "claims"),
    ("recover_any_unfinished_run", "transitions"),
    ("checkpoint_refused_after_interrupt_request", "transitions"),
    ("scan_cursor_inclusive", "boundaries"),
)
"""(factory, class of the issue) of the stores in this module."""
