"""The core of the runtime state machine: its state, draws, invariant and store calls.

:class:`RuntimeMachineCore` holds the store, the
:class:`~convledger_conformance.runtime.model.RuntimeModel` and the helpers
that turn small drawn integers into ids, runs and fences. Its invariant
checks, after every step, that the ledger holds exactly the model's envelopes
(TRN-002, TRN-004), that the bounded reads answer what the model holds
(TRN-080 .. TRN-084) and that the fold of the ledger is the model's state and
the store's snapshot (TRN-100, TRN-101). :meth:`RuntimeMachineCore._transit`
compares one transition with the model's decision (TRN-009) and
:meth:`RuntimeMachineCore._refusal` checks that a refused call changed
nothing (TRN-004).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import ClassVar, TypeVar

from hypothesis.stateful import RuleBasedStateMachine, invariant

from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.runtime import Fence, RecoveryCursor, Run, comparable, rebuild
from convledger.runtime.records import Message
from convledger.runtime.store import TransitionStore
from convledger.store import Capability
from convledger_conformance.ledger.model import envelope_wire, read_whole
from convledger_conformance.registry import CheckFailure, StoreFactory
from convledger_conformance.runtime.model import (
    RuntimeModel,
    causal_faults,
    decision_json,
    mask_drafts,
    message_faults,
    outcome_blame,
    outcome_json,
    run_faults,
    snapshot_json,
)
from convledger_conformance.runtime.support import (
    CONVERSATIONS,
    STAMPS,
    Call,
    compare_reads,
    envelope_bytes,
    fail,
    first_difference,
    outcome_ids,
    snapshot_of_store,
)
from convledger_conformance.same_json import canonically_equal, envelopes_match, same_value

T = TypeVar("T")


class RuntimeMachineCore(RuleBasedStateMachine):
    """The state, draws, invariant and store calls every rule group of the machine shares."""

    factory: ClassVar[StoreFactory]
    with_purge: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.store: TransitionStore = require(type(self).factory(), Capability.TRANSITIONS)
        self.model = RuntimeModel()
        self.counter = 0
        self.dirty: set[str] = set()
        """Conversations the last step touched; the invariant checks them whole."""
        self._outer_exception = sys.exc_info()[1]

    def teardown(self) -> None:
        """Check every conversation whole once more, unless a step failed; close the store."""
        try:
            if sys.exc_info()[1] in (None, self._outer_exception):
                for conversation in CONVERSATIONS:
                    self._check_conversation(conversation)
        finally:
            self.store.close()

    # -- drawing helpers -------------------------------------------------------------------

    def _fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _event(self, event: int) -> str:
        """A fresh eventId, or (draw 0) one the store already holds (TRN-008)."""
        if event == 0 and self.model.event_ids:
            return sorted(self.model.event_ids)[0]
        return self._fresh("ev")

    @staticmethod
    def _at(at: int) -> str:
        return STAMPS[-1] if at == 19 else STAMPS[at % (len(STAMPS) - 1)]

    def _runs(self, conversation: str) -> list[Run]:
        return sorted(self.model.state(conversation).runs.values(), key=lambda r: r.ordinal)

    def _run(self, conversation: str, pick: int) -> Run | None:
        """Draws 0..1 pick an owned run, 2 an active one, 3..4 any run, 5 a run nobody has."""
        runs = self._runs(conversation)
        owned = [run for run in runs if run.state.owned]
        active = [run for run in runs if run.state.active]
        if pick < 2 and owned:
            return owned[pick % len(owned)]
        if pick < 3 and active:
            return active[pick % len(active)]
        return runs[pick % len(runs)] if runs and pick < 5 else None

    def _absorbed(self, conversation: str, target: Run | None, picks: list[int]) -> tuple[str, ...]:
        """Draws 0..3 pick a later run, 4 the terminating run, 5 none, 6 any run (TRN-064)."""
        runs = self._runs(conversation)
        later = [r for r in runs if target is not None and r.ordinal > target.ordinal]
        chosen = []
        for pick in picks:
            if pick < 4 and later:
                chosen.append(later[pick % len(later)].run_id)
            elif pick == 4 and target is not None:
                chosen.append(target.run_id)
            elif pick == 6 and runs:
                chosen.append(runs[0].run_id)
            else:
                chosen.append("ghost")
        return tuple(chosen)

    def _run_id(self, conversation: str, pick: int) -> str:
        run = self._run(conversation, pick)
        return "ghost" if run is None else run.run_id

    def _fence(self, run: Run | None, fault: str | None) -> Fence:
        owner = (run.owner if run is not None else None) or "w0"
        revision = run.revision if run is not None else 0
        token = run.fencing_token if run is not None else 0
        return Fence(
            owner=owner + "'" if fault == "owner" else owner,
            revision=revision + 1 if fault == "revision" else revision,
            fencing_token=token + 1 if fault == "token" else token,
        )

    def _messages(self, conversation: str) -> list[Message]:
        state = self.model.state(conversation)
        return sorted(state.messages.values(), key=lambda m: m.position)

    # -- the invariant ----------------------------------------------------------------------

    @invariant()
    def records_match(self) -> None:
        """The ledger, the bounded reads and the fold of the ledger all agree with the model.

        The conversations the step touched are checked whole; the others by
        their heads here, and whole at teardown.
        """
        for conversation in sorted(self.dirty):
            self._check_conversation(conversation)
        self.dirty.clear()
        for conversation in CONVERSATIONS:
            if self.store.head(conversation) != len(self.model.events(conversation)):
                fail(("TRN-002", "TRN-004"), f"the head of {conversation!r} moved unseen")
        self._check_scan()

    def _check_conversation(self, conversation: str) -> None:
        model = self.model.state(conversation)
        events = read_whole(self.store, conversation)
        if not envelopes_match(events, self.model.events(conversation)) and (
            (got := [envelope_bytes(e) for e in events]) != self.model.events(conversation)
        ):
            fail(("TRN-002", "TRN-004"), f"the ledger of {conversation!r} holds {len(got)} "
                 f"events, the model {len(self.model.events(conversation))}; first difference "
                 f"{first_difference(self.model.events(conversation), got)}")
        compare_reads(self.store, conversation, model, ("TRN-081", "TRN-082"))
        for other in CONVERSATIONS:
            if other == conversation:
                continue
            for run_id in self.model.state(other).runs:
                if run_id not in model.runs and self.store.load_run(conversation, run_id):
                    fail(("TRN-080",), f"load_run({conversation!r}, {run_id!r}) returned "
                         f"another conversation's run")
        for run in model.runs.values():
            for ids, why in run_faults(run, model.runs):
                raise AssertionError(f"the reference rules made an unsound run ({ids}): {why}")
        for message in model.messages.values():
            for _ids, why in message_faults(message):
                raise AssertionError(f"the reference rules made an unsound message: {why}")
        history = model.history()
        for why in causal_faults(model.runs.values(), history):
            fail(("TRN-034",), why)
        try:
            rebuilt = rebuild(conversation, events)
        except LedgerError as error:
            fail(("TRN-100", "TRN-002", "TRN-006"), f"the ledger of {conversation!r} does not "
                 f"fold: {error!r}")
        if not canonically_equal(comparable(rebuilt), comparable(model)):
            fail(("TRN-100", "TRN-101"), f"the fold of {conversation!r} differs from the model")
        if rebuilt.head_record is not None:
            stored = snapshot_of_store(self.store, conversation)
            if stored is None or not canonically_equal(
                mask_drafts(stored), mask_drafts(snapshot_json(rebuilt))
            ):
                fail(("TRN-101",), f"the fold of {conversation!r} differs from the store's "
                     "snapshot")

    def _check_scan(self) -> None:
        """TRN-083, TRN-084: pages of 2 by cursor return each owned run once, in order."""
        want = [run.to_json() for run in self.model.recoverable()]
        got: list[JsonValue] = []
        after: RecoveryCursor | None = None
        for _ in range(len(want) + 2):
            page = self.store.scan_recoverable(after=after, limit=2)
            got.extend(run.to_json() for run in page.runs)
            if page.next is None:
                break
            if not page.runs or page.next != RecoveryCursor.after(page.runs[-1]):
                fail(("TRN-084",), f"next cursor {page.next!r} is not the last run's")
            after = page.next
        if not canonically_equal(got, want):
            fail(("TRN-083", "TRN-084", "TRN-085"), f"scan_recoverable returned {got!r}, "
                 f"expected {want!r}")

    # -- calling the store -------------------------------------------------------------------

    def _transit(self, call: Call) -> None:
        """Call the store with ``call`` and compare with the model."""
        self.dirty.add(call.conversation)
        expected = self.model.expect(call.conversation, call.transition, call.event_id,
                                     call.occurred_at)
        invoke = partial(self.store.transition, call.conversation, call.transition,
                         event_id=call.event_id, occurred_at=call.occurred_at)
        what = f"{call.transition!r} in {call.conversation!r}"
        if expected.error is not None:
            self._refusal(invoke, expected.error, expected.blame, call.conversation, what)
            return
        assert expected.decision is not None and expected.draft is not None
        wire = self.model.event_wire(call.conversation, expected.draft)
        want = decision_json(expected.decision, wire)
        try:
            outcome = invoke()
        except LedgerError as error:
            fail(("TRN-009", *outcome_blame(expected.decision.status.value)),
                 f"{what} was refused ({error!r}), expected {want!r}")
        except Exception as error:
            raise CheckFailure(("TRN-001",), f"{what} raised {error!r}") from error
        have = outcome_json(outcome)
        if have != want:
            fail(outcome_ids(want, have), f"{what} answered {have!r}, expected {want!r}")
        self.model.commit(call.conversation, expected)

    def _refusal(self, call: Callable[[], object], kind: str, ids: tuple[str, ...],
                 conversation: str, what: str) -> None:
        """``call`` must be refused with ``kind`` and change nothing (TRN-004)."""
        self.dirty.add(conversation)
        before = (read_whole(self.store, conversation), snapshot_of_store(self.store, conversation))
        try:
            result = call()
        except LedgerError as error:
            if error.kind != kind:
                fail(("TRN-009", *ids), f"{what} refused as {error.kind!r}, expected {kind!r}: "
                     f"{error!r}")
        except Exception as error:
            raise CheckFailure(("TRN-001", *ids), f"{what} raised {error!r}") from error
        else:
            fail(ids, f"{what} answered {result!r}, expected a refusal of kind {kind!r}")
        after = (read_whole(self.store, conversation), snapshot_of_store(self.store, conversation))
        if not _same_ledger(before[0], after[0]) or (
            before[1] != after[1]
        ):
            fail(("TRN-004", *ids), f"the refused {what} changed the conversation")

    def _call(self, call: Callable[[], T], ids: tuple[str, ...], what: str) -> T:
        try:
            return call()
        except Exception as error:
            raise CheckFailure(ids, f"{what} was refused: {error!r}") from error


def _same_ledger(before: Sequence[Envelope], after: Sequence[Envelope]) -> bool:
    """``[envelope_bytes(e) for e in before] == [envelope_bytes(e) for e in after]``.

    Envelopes whose wire objects are the same value (:func:`same_value`) encode alike; the
    bytes are taken only when some pair is not plainly the same, so a refusal that changed
    nothing costs no encoding.
    """
    if len(before) == len(after) and all(
        same_value(envelope_wire(a), envelope_wire(b)) for a, b in zip(before, after, strict=True)
    ):
        return True
    return [envelope_bytes(e) for e in before] == [envelope_bytes(e) for e in after]
