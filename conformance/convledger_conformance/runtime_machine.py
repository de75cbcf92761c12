"""The runtime state machine: transitions on a store, judged by the reference rules.

Theory of operation
-------------------
:func:`build_runtime_machine` returns a Hypothesis ``RuleBasedStateMachine``
bound to a store factory. Each program starts from a fresh store and a fresh
:class:`~convledger_conformance.runtime_model.RuntimeModel` over two fixed
conversations (``"c"`` and ``"c\\x00é"``, so code-point order, NUL and
non-ASCII ids are always in play). Rules draw small integers and flags,
never ids: a rule resolves ``run=3`` to the fourth run of the conversation in
ordinal order (or to a run id no conversation has), so every drawn program is
plain data and prints as runnable code.

Every transition rule builds a transition, asks the model what must happen
(an error kind, or a decision of :func:`convledger.runtime.rules.decide`, in
the order of TRN-009), calls the store, compares the outcome member for
member (status, version, run, admitted ids, event bytes), and only then
commits the decision to the model. A refused call must leave the ledger and
every record as they were (TRN-004).

After every step, for each conversation (:meth:`RuntimeMachineBase.records_match`):

* the ledger holds exactly the model's envelopes (one ``runtime/transition``
  per applied transition, nothing for other outcomes; TRN-002, TRN-004);
* ``load_snapshot``, ``list_active_runs`` and ``load_run`` answer what the
  model holds (TRN-080 .. TRN-082), and ``scan_recoverable`` pages through the
  model's owned runs in code-point order (TRN-083, TRN-084);
* every run and message the store shows is sound (TRN-011 .. TRN-018) and
  active runs are in causal order, inputs after earlier answers (TRN-034);
* folding the events the store returns from ``read`` (:func:`rebuild`) gives
  the model's state (:func:`comparable`) and the store's snapshot with draft
  bodies masked (TRN-100, TRN-101): the ledger is the source of truth.

Races run real threads against the one store: two terminals with one fence
(exactly one applied), two accepts with one key (one applied, one duplicate
with the winner's ids), an accept while the predecessor is acquired (the
admission placed after the predecessor's answer). Whatever the interleaving,
the outcomes must be those of one serial order of the model.

A failing program prints as runnable code once the class has a name::

    RuntimeMachine = build_runtime_machine(MemoryStore)
    state = RuntimeMachine()
    state.accept(conv=1, key=0, identity='fresh', at=0, event=1, body='x')
    state.records_match()
    state.teardown()
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from functools import partial
from typing import ClassVar, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.fast import canonical
from convledger.runtime import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Operation,
    Recover,
    RecoveryCursor,
    Run,
    Terminal,
    comparable,
    rebuild,
)
from convledger.runtime.records import REASON_STATE, Message
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Status
from convledger.store import Capability, LedgerStore
from convledger_conformance.model import read_whole
from convledger_conformance.registry import CheckFailure, StoreFactory
from convledger_conformance.runtime_model import (
    RUNTIME_KINDS_ON_APPEND,
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
from convledger_conformance.runtime_races import RaceRules
from convledger_conformance.runtime_support import (
    AT,
    BODY,
    CONV,
    CONVERSATIONS,
    EVENT,
    FENCE_FAULTS,
    PICK,
    PURGE_IDS,
    RUNTIME_MACHINE_IDS,
    STAMPS,
    Call,
    compare_reads,
    envelope_bytes,
    fail,
    first_difference,
    outcome_ids,
    snapshot_of_store,
)

T = TypeVar("T")

class RuntimeMachineBase(RaceRules, RuleBasedStateMachine):
    """The rules; :func:`build_runtime_machine` binds a factory to a subclass."""

    factory: ClassVar[StoreFactory]
    with_purge: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.store: LedgerStore = type(self).factory()
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

    # -- the transition rules --------------------------------------------------------------

    @rule(conv=CONV, key=st.integers(0, 4),
          identity=st.sampled_from(["fresh"] * 8 + ["same", "taken_run", "taken_input",
                                                "taken_answer", "empty"]),
          at=AT, event=EVENT, body=BODY)
    def accept(self, conv: int, key: int, identity: str, at: int, event: int, body: str) -> None:
        """Admit an input; keys repeat, so duplicates and coalescing occur (TRN-020 .. 025)."""
        conversation = CONVERSATIONS[conv]
        input_id, run_id, answer = self._fresh("in"), self._fresh("run"), self._fresh("ans")
        state = self.model.state(conversation)
        taken_messages = sorted(state.messages) or sorted(
            a.input_id for a in state.admissions.values())
        if identity == "same":
            run_id = input_id  # TRN-022: the three ids must be pairwise distinct
        elif identity == "taken_run" and state.runs:
            run_id = sorted(state.runs)[0]
        elif identity == "taken_input" and taken_messages:
            input_id = taken_messages[0]
        elif identity == "taken_answer" and state.runs:
            answer = sorted(r.assistant_message_id for r in state.runs.values())[0]
        elif identity == "empty":
            input_id = ""
        transition = Accept(idempotency_key=f"key{key}", input_id=input_id, run_id=run_id,
                            assistant_message_id=answer, message={"text": body})
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, owner=st.sampled_from(["w1", "w2"]), at=AT, event=EVENT)
    def acquire(self, conv: int, run: int, owner: str, at: int, event: int) -> None:
        """Take a run in causal order; the first acquire places its messages (TRN-030 .. 034)."""
        conversation = CONVERSATIONS[conv]
        transition = Acquire(run_id=self._run_id(conversation, run), owner=owner)
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, fault=st.sampled_from(FENCE_FAULTS), at=AT, event=EVENT,
          shape=st.sampled_from(["valid"] * 6 + ["no id", "parts not a list"]), parts=PICK)
    def checkpoint(
        self, conv: int, run: int, fault: str | None, at: int, event: int, shape: str, parts: int
    ) -> None:
        """Save a draft under the fence; the ledger gets its summary (TRN-040 .. TRN-043)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        draft: dict[str, JsonValue] = {"id": f"d{parts}", "status": "streaming",
                                       "parts": [{"text": "é" * n} for n in range(parts)]}
        if shape == "no id":
            del draft["id"]
        elif shape == "parts not a list":
            draft["parts"] = "text"
        transition = Checkpoint(run_id=self._run_id(conversation, run),
                                fence=self._fence(target, fault), draft=draft)
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, fault=st.sampled_from(FENCE_FAULTS), at=AT, event=EVENT,
          name=BODY)
    def operation(self, conv: int, run: int, fault: str | None, at: int, event: int,
                  name: str) -> None:
        """Record the current operation under the fence (TRN-040, TRN-044)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        transition = Operation(run_id=self._run_id(conversation, run),
                               fence=self._fence(target, fault), operation={"tool": name})
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, at=AT, event=EVENT)
    def interrupt(self, conv: int, run: int, at: int, event: int) -> None:
        """Ask a run to stop (TRN-050, TRN-051)."""
        conversation = CONVERSATIONS[conv]
        transition = Interrupt(run_id=self._run_id(conversation, run))
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK,
          action=st.sampled_from(["requeue", "requeue", "abandon", "abandon", "restart"]),
          evidence=st.sampled_from(["safe"] * 4 + ["truthy", "none"]),
          stale=st.sampled_from([False] * 4 + [True]),
          at=AT, event=EVENT)
    def recover(self, conv: int, run: int, action: str, evidence: str, stale: bool, at: int,
                event: int) -> None:
        """Requeue (with replaySafe true only) or abandon a run (TRN-053 .. TRN-055)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        revision = (target.revision if target is not None else 0) + (1 if stale else 0)
        proofs: dict[str, dict[str, JsonValue]] = {
            "safe": {"replaySafe": True}, "truthy": {"replaySafe": 1}, "none": {},
        }
        proof = proofs[evidence]
        transition = Recover(run_id=self._run_id(conversation, run), revision=revision,
                             action=action, evidence=proof)
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, run=PICK, fault=st.sampled_from(FENCE_FAULTS),
          reason=st.sampled_from([*REASON_STATE, *["success"] * 5, "unheard_of"]),
          policy=st.sampled_from(["match"] * 7 + ["mismatch"]),
          absorb=st.sampled_from([[]] * 6 + [[0], [0], [1], [0, 1], [4], [5], [6], [0, 0]]),
          at=AT, event=EVENT, body=BODY)
    def terminal(self, conv: int, run: int, fault: str | None, reason: str, policy: str,
                 absorb: list[int], at: int, event: int, body: str) -> None:
        """End a run, absorbing later queued runs atomically (TRN-060 .. TRN-066)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        named = (reason == "policy_stop") == (policy == "match")
        transition = Terminal(
            run_id=self._run_id(conversation, run),
            fence=self._fence(target, fault),
            reason=reason,
            message={"text": body},
            policy="p" if named else None,
            absorb_run_ids=self._absorbed(conversation, target, absorb),
        )
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, version=st.sampled_from([0, 0, 0, 1, -1]), first=PICK, last=PICK,
          summary=st.sampled_from(["fresh", "fresh", "taken"]), at=AT, event=EVENT)
    def compact(self, conv: int, version: int, first: int, last: int, summary: str, at: int,
                event: int) -> None:
        """Summarize an exact range at the version read (TRN-070 .. TRN-075)."""
        conversation = CONVERSATIONS[conv]
        state = self.model.state(conversation)
        history = state.history()
        messages = self._messages(conversation)
        expected = (0 if state.head_record is None else state.head_record.version) + version
        summary_id = self._fresh("sum")
        if summary == "taken" and messages:
            summary_id = messages[-1].message_id
        if history and first < 3:
            first_id = history[0].message_id  # the only start TRN-072 allows
        else:
            first_id = messages[first].message_id if first < len(messages) else "ghost-message"
        active = {run.run_id for run in state.active_runs()}
        settled = []  # the history before the first message of an active run (TRN-072)
        for message in history:
            if message.run_id in active:
                break
            settled.append(message)
        if last < 4 and settled:
            last_id = settled[last % len(settled)].message_id
        else:
            last_id = history[last].message_id if last < len(history) else "ghost-message"
        transition = Compact(
            expected_version=expected,  # -1 is invalid_input, 0 without a head not_found
            first_message_id=first_id,
            last_message_id=last_id,
            summary_message_id=summary_id,
            summary={"text": "summary"},
        )
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=CONV, step=st.integers(0, 4), at=AT, event=EVENT)
    def advance(self, conv: int, step: int, at: int, event: int) -> None:
        """The happy path: the next natural transition of the conversation's first active run.

        Random transitions mostly meet conflicts; this rule keeps runs moving
        through acquire, checkpoint, operation and terminal (with absorption).
        """
        conversation = CONVERSATIONS[conv]
        active = self.model.state(conversation).active_runs()
        run = active[0] if active else None
        transition: Transition
        if run is None:
            transition = Accept(self._fresh("key"), self._fresh("in"), self._fresh("run"),
                                self._fresh("ans"), {"text": "next"})
        elif not run.state.owned:
            transition = Acquire(run.run_id, f"w{step % 2 + 1}")
        else:
            fence = Fence(run.owner or "", run.revision, run.fencing_token)
            later = tuple(r.run_id for r in active[1:] if r.fencing_token == 0)
            if step == 0:
                draft: dict[str, JsonValue] = {"id": "d", "status": "partial",
                                               "parts": [{"text": "é\x00"}]}
                transition = Checkpoint(run.run_id, fence, draft)
            elif step == 1:
                transition = Operation(run.run_id, fence, {"tool": "search"})
            elif step == 2:
                transition = Terminal(run.run_id, fence, "success", {"text": "done"},
                                      absorb_run_ids=later)
            elif step == 3:
                transition = Terminal(run.run_id, fence, "policy_stop", {"text": "stop"},
                                      policy="budget")
            else:
                transition = Terminal(run.run_id, fence, "interrupted", {"text": "stopped"})
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    # -- other writes ----------------------------------------------------------------------

    @rule(conv=CONV, runtime=st.sampled_from([None, None, *RUNTIME_KINDS_ON_APPEND]))
    def append_event(self, conv: int, runtime: str | None) -> None:
        """Other kinds interleave and do not fold (TRN-100); runtime kinds are refused (TRN-108)."""
        conversation = CONVERSATIONS[conv]
        payload: JsonValue = {"name": "slot", "version": 1, "value": 1, "actor": "machine"}
        kind = "state/set"
        if runtime == "runtime/transition":
            kind, payload = runtime, {"type": "interrupt", "input": {"runId": "ghost"}}
        elif runtime == "runtime/baseline":
            kind = runtime
            payload = {"migratedAt": "2024-01-01T00:00:00Z", "head": {}, "messages": [],
                       "runs": [], "admissions": []}
        draft = EventDraft(event_id=self._fresh("ev"), kind=kind, occurred_at=STAMPS[0],
                           payload=payload)
        if runtime is not None:
            self._refusal(partial(self.store.append, conversation, [draft]),
                          "invalid_input", ("TRN-108",), conversation, f"append of {kind}")
        elif conversation in self.model.purged:
            self._refusal(partial(self.store.append, conversation, [draft]),
                          "purged", ("TRN-092",), conversation, "append after purge")
        else:
            self._call(partial(self.store.append, conversation, [draft]), ("TRN-108",),
                       "append of state/set")
            self.model.append(conversation, [draft])
            self.dirty.add(conversation)

    @precondition(lambda self: self.with_purge)
    @rule(conv=CONV, chance=st.integers(0, 3))
    def purge(self, conv: int, chance: int) -> None:
        """Purge a conversation: conflict while a run is active, tombstone forever (TRN-090 ..).

        Only one draw in four purges, so most programs keep their conversations a while.
        """
        if chance:
            return
        conversation = CONVERSATIONS[conv]
        state = self.model.state(conversation)
        if conversation not in self.model.purged and state.active_runs():
            self._refusal(partial(self.store.purge, conversation), "conflict", ("TRN-091",),
                          conversation, "purge with an active run")
            return
        answer = self._call(partial(self.store.purge, conversation), ("TRN-090",), "purge")
        want = "already_purged" if conversation in self.model.purged else "purged"
        if answer.value != want:
            fail(("TRN-090",), f"purge of {conversation!r} answered {answer.value!r}, "
                 f"expected {want!r}")
        self.model.purge(conversation)
        self.dirty.add(conversation)
        self._refusal(partial(self.store.export_conversation, conversation), "not_found",
                      ("TRN-094",), conversation, "export after purge")

    @rule(conv=CONV)
    def export_import_elsewhere(self, conv: int) -> None:
        """An export imports into a fresh store that answers as this one (TRN-103 .. TRN-107)."""
        conversation = CONVERSATIONS[conv]
        if not self.model.events(conversation):
            return
        data = self._call(partial(self.store.export_conversation, conversation), ("TRN-107",),
                          "export")
        state = self.model.state(conversation)
        companions = json.loads(data)
        assert isinstance(companions, dict)
        want = {} if state.head_record is None else {"runtime": state.to_json()}
        if canonical.encode(companions["companions"]) != canonical.encode(want):
            fail(("TRN-103", "TRN-107"), f"the export of {conversation!r} carries companions "
                 f"{companions['companions']!r}, expected {want!r}")
        other = type(self).factory()
        try:
            self._call(partial(other.import_conversation, data), ("TRN-105",), "import")
            if other.export_conversation(conversation) != data:
                fail(("TRN-106",), "re-export of an imported conversation differs")
            compare_reads(other, conversation, state, ("TRN-105",))
            for admission in state.admissions.values():
                repeated = Accept(admission.idempotency_key, self._fresh("in"),
                                  self._fresh("run"), self._fresh("ans"), {"again": True})
                outcome = self._call(
                    partial(other.transition, conversation, repeated,
                            event_id=self._fresh("ev"), occurred_at=STAMPS[0]),
                    ("TRN-106", "TRN-021"), "repeated accept after import",
                )
                ids = (admission.input_id, admission.run_id, admission.assistant_message_id)
                got = outcome.admitted
                if outcome.status is not Status.DUPLICATE or got is None or (
                    got.input_id, got.run_id, got.assistant_message_id) != ids:
                    fail(("TRN-106", "TRN-021"), f"key {admission.idempotency_key!r} answered "
                         f"{outcome_json(outcome)!r} after import, expected duplicate {ids}")
        finally:
            other.close()

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
        got = [envelope_bytes(e) for e in events]
        if got != self.model.events(conversation):
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
        if canonical.encode(comparable(rebuilt)) != canonical.encode(comparable(model)):
            fail(("TRN-100", "TRN-101"), f"the fold of {conversation!r} differs from the model")
        if rebuilt.head_record is not None:
            stored = snapshot_of_store(self.store, conversation)
            if stored is None or canonical.encode(mask_drafts(stored)) != canonical.encode(
                mask_drafts(snapshot_json(rebuilt))
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
        if canonical.encode(got) != canonical.encode(want):
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
        if [envelope_bytes(e) for e in before[0]] != [envelope_bytes(e) for e in after[0]] or (
            before[1] != after[1]
        ):
            fail(("TRN-004", *ids), f"the refused {what} changed the conversation")

    def _call(self, call: Callable[[], T], ids: tuple[str, ...], what: str) -> T:
        try:
            return call()
        except Exception as error:
            raise CheckFailure(ids, f"{what} was refused: {error!r}") from error


def build_runtime_machine(
    factory: StoreFactory, *, purge: bool = False
) -> type[RuleBasedStateMachine]:
    """The runtime state machine over stores made by ``factory`` (capability transitions).

    With ``purge=True`` the programs also purge conversations (capability purge).
    """
    return type(
        "RuntimeMachine",
        (RuntimeMachineBase,),
        {"factory": staticmethod(factory), "with_purge": purge, "__module__": __name__},
    )


def machine_ids(capabilities: Iterable[Capability]) -> tuple[str, ...]:
    """The ids the machine covers for a store declaring ``capabilities``."""
    declared = set(capabilities)
    return RUNTIME_MACHINE_IDS + (PURGE_IDS if Capability.PURGE in declared else ())


__all__ = [
    "CONVERSATIONS",
    "PURGE_IDS",
    "RUNTIME_MACHINE_IDS",
    "STAMPS",
    "RuntimeMachineBase",
    "build_runtime_machine",
    "machine_ids",
]
