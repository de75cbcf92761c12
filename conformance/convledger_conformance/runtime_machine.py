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
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import permutations
from typing import ClassVar, NoReturn, TypeVar

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
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
    Outcome,
    Recover,
    RecoveryCursor,
    Run,
    RuntimeState,
    Terminal,
    comparable,
    rebuild,
)
from convledger.runtime.records import REASON_STATE, Message
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Status
from convledger.store import Capability, LedgerStore
from convledger_conformance.model import envelope_wire, read_whole
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

T = TypeVar("T")

CONVERSATIONS: tuple[str, ...] = ("c", "c\x00\u00e9")
"""The conversations of every program, in code-point order (TRN-083, TRN-085)."""

STAMPS: tuple[str, ...] = (
    "2024-05-01T12:00:00Z",
    "2024-05-01T12:00:00.250+02:00",
    "2024-05-01T10:00:00.25Z",
    "2024-05-02T00:00:00-00:30",
    "2024-05-01 12:00:00",  # not RFC 3339: the call is invalid_input (TRN-005)
)
"""occurredAt texts, drawn by index; records keep the exact text (TRN-019)."""

RUNTIME_MACHINE_IDS: tuple[str, ...] = (
    "TRN-001", "TRN-002", "TRN-003", "TRN-004", "TRN-005", "TRN-006", "TRN-007", "TRN-008",
    "TRN-009", "TRN-010", "TRN-011", "TRN-012", "TRN-013", "TRN-014", "TRN-015", "TRN-016",
    "TRN-017", "TRN-018", "TRN-019", "TRN-020", "TRN-021", "TRN-022", "TRN-023", "TRN-024",
    "TRN-025", "TRN-030", "TRN-031", "TRN-032", "TRN-033", "TRN-034", "TRN-040", "TRN-041",
    "TRN-042", "TRN-043", "TRN-044", "TRN-050", "TRN-051", "TRN-053", "TRN-054", "TRN-055",
    "TRN-060", "TRN-061", "TRN-062", "TRN-063", "TRN-064", "TRN-065", "TRN-066", "TRN-070",
    "TRN-071", "TRN-072", "TRN-073", "TRN-074", "TRN-075", "TRN-080", "TRN-081", "TRN-082",
    "TRN-083", "TRN-084", "TRN-085", "TRN-100", "TRN-101", "TRN-103", "TRN-105", "TRN-106",
    "TRN-107", "TRN-108",
)
"""Every requirement id a failure of the machine can name (without purge)."""
PURGE_IDS: tuple[str, ...] = ("TRN-090", "TRN-091", "TRN-092", "TRN-093", "TRN-094")
"""The ids the purge rules add."""

FENCE_FAULTS = (None, None, None, None, None, "owner", "revision", "token")
"""How a fenced call's fence is spoiled, by draw: mostly not at all (TRN-040)."""

_PICK = st.integers(0, 5)
_CONV = st.integers(0, len(CONVERSATIONS) - 1)
_AT = st.integers(0, 19)  # 19 names the invalid stamp; others valid ones
_EVENT = st.integers(0, 19)  # 0 reuses a stored eventId (TRN-008)
_BODY = st.sampled_from(["", "x", "héllo", "\x00"])


def envelope_bytes(envelope: Envelope) -> bytes:
    """The canonical bytes of an envelope a store returned (fast encoder; ENV-011)."""
    return canonical.encode(envelope_wire(envelope))


def fail(ids: Iterable[str], message: str) -> NoReturn:
    """Raise the failure of ``ids`` (each named once, in order)."""
    raise CheckFailure(tuple(dict.fromkeys(i for i in ids if i)), message)


@attrs.frozen
class Call:
    """One transition call: where, what, and the identity and time of its event."""

    conversation: str
    transition: Transition
    event_id: str
    occurred_at: str


class RuntimeMachineBase(RuleBasedStateMachine):
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

    @rule(conv=_CONV, key=st.integers(0, 4),
          identity=st.sampled_from(["fresh"] * 8 + ["same", "taken_run", "taken_input",
                                                "taken_answer", "empty"]),
          at=_AT, event=_EVENT, body=_BODY)
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

    @rule(conv=_CONV, run=_PICK, owner=st.sampled_from(["w1", "w2"]), at=_AT, event=_EVENT)
    def acquire(self, conv: int, run: int, owner: str, at: int, event: int) -> None:
        """Take a run in causal order; the first acquire places its messages (TRN-030 .. 034)."""
        conversation = CONVERSATIONS[conv]
        transition = Acquire(run_id=self._run_id(conversation, run), owner=owner)
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=_CONV, run=_PICK, fault=st.sampled_from(FENCE_FAULTS), at=_AT, event=_EVENT,
          shape=st.sampled_from(["valid"] * 6 + ["no id", "parts not a list"]), parts=_PICK)
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

    @rule(conv=_CONV, run=_PICK, fault=st.sampled_from(FENCE_FAULTS), at=_AT, event=_EVENT,
          name=_BODY)
    def operation(self, conv: int, run: int, fault: str | None, at: int, event: int,
                  name: str) -> None:
        """Record the current operation under the fence (TRN-040, TRN-044)."""
        conversation = CONVERSATIONS[conv]
        target = self._run(conversation, run)
        transition = Operation(run_id=self._run_id(conversation, run),
                               fence=self._fence(target, fault), operation={"tool": name})
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=_CONV, run=_PICK, at=_AT, event=_EVENT)
    def interrupt(self, conv: int, run: int, at: int, event: int) -> None:
        """Ask a run to stop (TRN-050, TRN-051)."""
        conversation = CONVERSATIONS[conv]
        transition = Interrupt(run_id=self._run_id(conversation, run))
        self._transit(Call(conversation, transition, self._event(event), self._at(at)))

    @rule(conv=_CONV, run=_PICK,
          action=st.sampled_from(["requeue", "requeue", "abandon", "abandon", "restart"]),
          evidence=st.sampled_from(["safe"] * 4 + ["truthy", "none"]),
          stale=st.sampled_from([False] * 4 + [True]),
          at=_AT, event=_EVENT)
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

    @rule(conv=_CONV, run=_PICK, fault=st.sampled_from(FENCE_FAULTS),
          reason=st.sampled_from([*REASON_STATE, *["success"] * 5, "unheard_of"]),
          policy=st.sampled_from(["match"] * 7 + ["mismatch"]),
          absorb=st.sampled_from([[]] * 6 + [[0], [0], [1], [0, 1], [4], [5], [6], [0, 0]]),
          at=_AT, event=_EVENT, body=_BODY)
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

    @rule(conv=_CONV, version=st.sampled_from([0, 0, 0, 1, -1]), first=_PICK, last=_PICK,
          summary=st.sampled_from(["fresh", "fresh", "taken"]), at=_AT, event=_EVENT)
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

    @rule(conv=_CONV, step=st.integers(0, 4), at=_AT, event=_EVENT)
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

    @rule(conv=_CONV, runtime=st.sampled_from([None, None, *RUNTIME_KINDS_ON_APPEND]))
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
    @rule(conv=_CONV, chance=st.integers(0, 3))
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

    @rule(conv=_CONV)
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
            _compare_reads(other, conversation, state, ("TRN-105",))
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

    # -- races ------------------------------------------------------------------------------

    def _owned(self) -> list[Run]:
        return self.model.recoverable()

    @precondition(lambda self: bool(self._owned()))
    @rule(pick=_PICK, at=_AT)
    def race_terminals(self, pick: int, at: int) -> None:
        """Two terminals with one fence, at once: exactly one applied, one conflict (TRN-003)."""
        owned = self._owned()
        run = owned[pick % len(owned)]
        fence = Fence(run.owner or "", run.revision, run.fencing_token)
        calls = [
            Call(run.conversation_id, Terminal(run.run_id, fence, reason, {"by": reason}),
                 self._fresh("ev"), self._at(at % 19))
            for reason in ("success", "timeout")
        ]
        statuses = self._race(calls)
        if sorted(statuses) != ["applied", "conflict"]:
            fail(("TRN-003", "TRN-040"), f"two terminals with one fence answered {statuses}")

    @rule(conv=_CONV, at=_AT)
    def race_accepts(self, conv: int, at: int) -> None:
        """Two accepts with one new key, at once: one applied, one duplicate (TRN-021, TRN-003)."""
        conversation = CONVERSATIONS[conv]
        if conversation in self.model.purged:
            return
        key = self._fresh("key")
        calls = [
            Call(conversation, Accept(key, self._fresh("in"), self._fresh("run"),
                                      self._fresh("ans"), {"n": n}),
                 self._fresh("ev"), self._at(at % 19))
            for n in range(2)
        ]
        statuses = self._race(calls)
        if sorted(statuses) != ["applied", "duplicate"]:
            fail(("TRN-021", "TRN-003"), f"two accepts with one key answered {statuses}")

    def _acquirable(self) -> list[Run]:
        found = []
        for conversation in CONVERSATIONS:
            if conversation in self.model.purged:
                continue
            active = self.model.state(conversation).active_runs()
            if active and active[0].state.value == "queued":
                found.append(active[0])
        return found

    @precondition(lambda self: bool(self._acquirable()))
    @rule(pick=_PICK, at=_AT)
    def race_acquire_and_accept(self, pick: int, at: int) -> None:
        """An admission racing the predecessor's acquire is placed after its answer (TRN-034)."""
        runs = self._acquirable()
        run = runs[pick % len(runs)]
        conversation = run.conversation_id
        calls = [
            Call(conversation, Acquire(run.run_id, "w1"), self._fresh("ev"), self._at(at % 19)),
            Call(conversation, Accept(self._fresh("key"), self._fresh("in"), self._fresh("run"),
                                      self._fresh("ans"), {"racing": True}),
                 self._fresh("ev"), self._at(at % 19)),
        ]
        statuses = self._race(calls)
        if statuses != ["applied", "applied"]:
            fail(("TRN-031", "TRN-034"), f"an acquire and an accept at once answered {statuses}")

    def _race(self, calls: Sequence[Call]) -> list[str]:
        """Run ``calls`` from threads released at once; the outcomes must be a serial order's."""
        self.dirty.update(call.conversation for call in calls)
        results: list[Outcome | LedgerError | None] = [None] * len(calls)
        crashes: list[BaseException] = []
        barrier = threading.Barrier(len(calls))

        def work(index: int) -> None:
            call = calls[index]
            try:
                barrier.wait()
                results[index] = self.store.transition(
                    call.conversation, call.transition, event_id=call.event_id,
                    occurred_at=call.occurred_at)
            except LedgerError as error:
                results[index] = error
            except BaseException as error:  # reported below, on the main thread
                crashes.append(error)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if crashes:
            fail(("TRN-001",), f"a concurrent transition crashed: {crashes[0]!r}")
        refused = [r for r in results if isinstance(r, LedgerError)]
        if refused:
            fail(("TRN-003", "TRN-001"), f"a concurrent valid transition was refused: "
                 f"{refused[0]!r}")
        outcomes = [r for r in results if isinstance(r, Outcome)]
        observed = [outcome_json(o) for o in outcomes]
        for order in permutations(range(len(calls))):
            trial = _copy_model(self.model)
            predicted: list[JsonValue] = [None] * len(calls)
            for index in order:
                call = calls[index]
                expected = trial.expect(call.conversation, call.transition, call.event_id,
                                        call.occurred_at)
                if expected.decision is None or expected.draft is None:
                    break
                wire = trial.event_wire(call.conversation, expected.draft)
                predicted[index] = decision_json(expected.decision, wire)
                trial.commit(call.conversation, expected)
            if predicted == observed:
                self.model = trial
                return [o.status.value for o in outcomes]
        fail(("TRN-003", "TRN-001", "TRN-034"), f"concurrent transitions answered {observed}, "
             "which no serial order of them gives")

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
                 f"{_first_difference(self.model.events(conversation), got)}")
        _compare_reads(self.store, conversation, model, ("TRN-081", "TRN-082"))
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
            stored = _snapshot_json(self.store, conversation)
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
            fail(_outcome_ids(want, have), f"{what} answered {have!r}, expected {want!r}")
        self.model.commit(call.conversation, expected)

    def _refusal(self, call: Callable[[], object], kind: str, ids: tuple[str, ...],
                 conversation: str, what: str) -> None:
        """``call`` must be refused with ``kind`` and change nothing (TRN-004)."""
        self.dirty.add(conversation)
        before = (read_whole(self.store, conversation), _snapshot_json(self.store, conversation))
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
        after = (read_whole(self.store, conversation), _snapshot_json(self.store, conversation))
        if [envelope_bytes(e) for e in before[0]] != [envelope_bytes(e) for e in after[0]] or (
            before[1] != after[1]
        ):
            fail(("TRN-004", *ids), f"the refused {what} changed the conversation")

    def _call(self, call: Callable[[], T], ids: tuple[str, ...], what: str) -> T:
        try:
            return call()
        except Exception as error:
            raise CheckFailure(ids, f"{what} was refused: {error!r}") from error


def _copy_model(model: RuntimeModel) -> RuntimeModel:
    copied = RuntimeModel(registry=model.registry)
    copied.states = {c: s.copy() for c, s in model.states.items()}
    copied.ledgers = {c: list(events) for c, events in model.ledgers.items()}
    copied.event_ids = dict(model.event_ids)
    copied.purged = set(model.purged)
    return copied


def _snapshot_json(store: LedgerStore, conversation: str) -> JsonValue:
    """``load_snapshot`` as JSON, None when it is refused with not_found (TRN-082)."""
    try:
        snapshot = store.load_snapshot(conversation)
    except LedgerError as error:
        if error.kind != "not_found":
            fail(("TRN-082",), f"load_snapshot({conversation!r}) refused as {error.kind!r}")
        return None
    return {
        "head": snapshot.head.to_json(),
        "activeRuns": [run.to_json() for run in snapshot.active_runs],
        "messages": [message.to_json() for message in snapshot.messages],
    }


def _compare_reads(
    store: LedgerStore, conversation: str, model: RuntimeState, ids: tuple[str, ...]
) -> None:
    """The bounded reads of ``store`` answer what ``model`` holds (TRN-080 .. TRN-082)."""
    snapshot = _snapshot_json(store, conversation)
    want = snapshot_json(model)
    if model.head_record is not None:
        for message in store.load_snapshot(conversation).messages:
            for found, why in message_faults(message):
                fail(found, why)
    if canonical.encode(snapshot) != canonical.encode(want):
        fail((*ids, "TRN-082", "TRN-010"), f"load_snapshot({conversation!r}) is {snapshot!r}, "
             f"expected {want!r}")
    active = [run.to_json() for run in store.list_active_runs(conversation)]
    if canonical.encode(active) != canonical.encode([r.to_json() for r in model.active_runs()]):
        fail((*ids, "TRN-081"), f"list_active_runs({conversation!r}) is {active!r}")
    for run in model.runs.values():
        loaded = store.load_run(conversation, run.run_id)
        if loaded is None or canonical.encode(loaded.to_json()) != canonical.encode(
            run.to_json()
        ):
            fail((*ids, "TRN-080"), f"load_run({conversation!r}, {run.run_id!r}) is {loaded!r}, "
                 f"expected {run!r}")
        for found, why in run_faults(loaded, model.runs):
            fail(found, why)
    if store.load_run(conversation, "ghost") is not None:
        fail((*ids, "TRN-080"), f"load_run({conversation!r}, 'ghost') found a run")


def _outcome_ids(want: JsonValue, have: JsonValue) -> tuple[str, ...]:
    """The ids to blame for an outcome that differs from the model's."""
    assert isinstance(want, dict) and isinstance(have, dict)
    status = want["status"]
    assert isinstance(status, str)
    if have["status"] != status:
        return ("TRN-001", *outcome_blame(status))
    if have["version"] != want["version"]:
        return ("TRN-001", "TRN-003", "TRN-010")
    if have["event"] != want["event"]:
        return ("TRN-002", "TRN-005", "TRN-006", "TRN-041")
    if have["admitted"] != want["admitted"]:
        return ("TRN-021", "TRN-023", "TRN-025")
    return ("TRN-001", "TRN-016", "TRN-019", "TRN-023", "TRN-024", "TRN-033", "TRN-043",
            "TRN-044", "TRN-050", "TRN-054", "TRN-055", "TRN-063", "TRN-065")


def _first_difference(want: Sequence[bytes], have: Sequence[bytes]) -> str:
    for seq, (a, b) in enumerate(zip(want, have, strict=False), start=1):
        if a != b:
            return f"at seq {seq}: {b!r}, expected {a!r}"
    return "one ledger is a prefix of the other"


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
