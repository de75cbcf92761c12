"""The oracle of runtime transitions: the reference rules over :class:`RuntimeState`.

The reference rules (:func:`convledger.runtime.rules.decide`) are the
executable form of chapter ``transitions.md``; this module wraps them into
what a check needs to judge a store:

* :class:`RuntimeModel` holds, per conversation, the operational state, the
  ledger the store must hold (canonical envelope bytes), and the purge
  tombstones, and predicts the result of a call (:meth:`RuntimeModel.expect`)
  in the order TRN-009 fixes;
* :func:`run_faults` and :func:`message_faults` list what a record breaks of
  TRN-011 .. TRN-019, each with the ids to blame;
* :func:`outcome_json` and :func:`decision_json` give outcomes a comparable
  canonical form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft, check_identifier, check_occurred_at
from convledger.errors import InvalidInputError
from convledger.kinds import KindRegistry, default_registry
from convledger.runtime import (
    REASON_STATE,
    Message,
    MessageRole,
    MessageStatus,
    Outcome,
    Run,
    RuntimeState,
    Status,
)
from convledger.runtime.rules import decide
from convledger.runtime.state import TRANSITION_KIND, snapshot_of
from convledger.runtime.transitions import Transition, recorded_input, validate
from convledger.runtime.view import Decision
from convledger_conformance.ledger.model import draft_wire, envelope_wire
from convledger_conformance.ledger.model_faults import NEVER_APPENDED

RUNTIME_KINDS_ON_APPEND: tuple[str, ...] = tuple(sorted(NEVER_APPENDED))
"""Kinds no append may write (TRN-108)."""


@attrs.frozen
class Expected:
    """What a transition call must do: raise ``error`` (a kind), or answer ``decision``."""

    error: str | None = None
    blame: tuple[str, ...] = ()
    decision: Decision | None = None
    draft: EventDraft | None = None


def transition_draft(transition: Transition, event_id: str, occurred_at: str) -> EventDraft:
    """The ``runtime/transition`` draft an applied transition appends (TRN-002, TRN-006)."""
    return EventDraft(
        event_id=event_id,
        kind=TRANSITION_KIND,
        schema_version=1,
        occurred_at=occurred_at,
        payload={"type": transition.type, "input": recorded_input(transition)},
    )


class RuntimeModel:
    """Every conversation's expected records and ledger, and the tombstones."""

    def __init__(self, *, registry: KindRegistry | None = None) -> None:
        self.registry = registry if registry is not None else default_registry()
        self.states: dict[str, RuntimeState] = {}
        self.ledgers: dict[str, list[bytes]] = {}
        self.event_ids: dict[str, str] = {}
        """Every stored eventId, with its conversation."""
        self.purged: set[str] = set()

    def state(self, conversation_id: str) -> RuntimeState:
        """The expected operational state (empty before the first applied transition)."""
        return self.states.get(conversation_id) or RuntimeState(conversation_id)

    def events(self, conversation_id: str) -> list[bytes]:
        """The canonical envelopes the conversation's ledger must hold, in seq order."""
        return self.ledgers.get(conversation_id, [])

    def expect(
        self, conversation_id: str, transition: Transition, event_id: str, occurred_at: str
    ) -> Expected:
        """What ``store.transition`` must do, checked in the order of TRN-009."""
        try:  # invalid_input for the call alone (TRN-005, TRN-007)
            check_identifier(conversation_id, "conversationId", "ENV-005")
            checked = validate(transition)
            check_identifier(event_id, "eventId", "ENV-004")
            check_occurred_at(occurred_at)
        except InvalidInputError:
            return Expected("invalid_input", ("TRN-005", "TRN-007", "TRN-009"))
        if conversation_id in self.purged:
            return Expected("purged", ("TRN-092", "TRN-009"))
        try:
            decision = decide(self.state(conversation_id).copy(), conversation_id, checked,
                              occurred_at)
        except InvalidInputError as error:  # the record checks (TRN-022, TRN-072, ...)
            return Expected("invalid_input", ("TRN-007", "TRN-009", error.requirement or ""))
        if decision.status is Status.APPLIED and event_id in self.event_ids:
            return Expected("duplicate", ("TRN-008",))
        return Expected(decision=decision, draft=transition_draft(checked, event_id, occurred_at))

    def commit(self, conversation_id: str, expected: Expected) -> None:
        """Record an applied decision: its records and its event."""
        decision, draft = expected.decision, expected.draft
        assert decision is not None and draft is not None
        if decision.status is not Status.APPLIED:
            return
        state = self.states.setdefault(conversation_id, RuntimeState(conversation_id))
        state.apply(decision)
        self.append(conversation_id, [draft])

    def append(self, conversation_id: str, drafts: Iterable[EventDraft]) -> None:
        """Record appended events."""
        ledger = self.ledgers.setdefault(conversation_id, [])
        for draft in drafts:
            ledger.append(canonical.encode(draft_wire(draft, conversation_id, len(ledger) + 1)))
            self.event_ids[draft.event_id] = conversation_id

    def event_wire(self, conversation_id: str, draft: EventDraft) -> bytes:
        """The canonical envelope ``draft`` becomes as the conversation's next event."""
        seq = len(self.events(conversation_id)) + 1
        return canonical.encode(draft_wire(draft, conversation_id, seq))

    def purge(self, conversation_id: str) -> None:
        """TRN-093: everything of the conversation goes; its tombstone stays."""
        self.states.pop(conversation_id, None)
        self.ledgers.pop(conversation_id, None)
        self.event_ids = {e: c for e, c in self.event_ids.items() if c != conversation_id}
        self.purged.add(conversation_id)

    def recoverable(self) -> list[Run]:
        """TRN-083: every owned run, by code points of the conversation id, then ordinal."""
        owned = [run for state in self.states.values() for run in state.runs.values()
                 if run.state.owned]
        return sorted(owned, key=lambda r: (r.conversation_id.encode("utf-8", "surrogatepass"),
                                            r.ordinal))


def outcome_json(outcome: Outcome) -> JsonValue:
    """An outcome as JSON (the event as its canonical envelope text)."""
    admitted = outcome.admitted
    return {
        "status": outcome.status.value,
        "version": outcome.version,
        "run": None if outcome.run is None else outcome.run.to_json(),
        "admitted": None if admitted is None else [
            admitted.input_id, admitted.run_id, admitted.assistant_message_id
        ],
        "event": None if outcome.event is None else canonical.encode(
            envelope_wire(outcome.event)).decode(),
    }


def decision_json(decision: Decision, event: bytes | None) -> JsonValue:
    """The JSON of the outcome a store must answer for ``decision``."""
    admitted = decision.admitted
    applied = decision.status is Status.APPLIED
    return {
        "status": decision.status.value,
        "version": decision.version,
        "run": None if decision.run is None else decision.run.to_json(),
        "admitted": None if admitted is None else [
            admitted.input_id, admitted.run_id, admitted.assistant_message_id
        ],
        "event": event.decode() if applied and event is not None else None,
    }


def outcome_blame(status: str) -> tuple[str, ...]:
    """The ids an outcome other than the model's breaks, by the model's status."""
    return {
        "applied": ("TRN-001", "TRN-003"),
        "duplicate": ("TRN-001", "TRN-021", "TRN-051"),
        "conflict": ("TRN-001", "TRN-030", "TRN-031", "TRN-040", "TRN-053", "TRN-064",
                     "TRN-071"),
        "not_found": ("TRN-001", "TRN-064", "TRN-070", "TRN-080"),
    }[status]


def run_faults(run: Run, runs: Mapping[str, Run]) -> list[tuple[tuple[str, ...], str]]:
    """What ``run`` breaks of TRN-011 .. TRN-017 (``runs``: its conversation's runs by id)."""
    faults: list[tuple[tuple[str, ...], str]] = []
    name = f"run {run.run_id!r} ({run.state.value}, reason {run.reason!r})"
    if run.state.active != (run.reason is None):
        faults.append((("TRN-013", "TRN-014"), f"{name}: terminal exactly when it has a reason"))
    if run.reason is not None and REASON_STATE.get(run.reason) is not run.state:
        faults.append((("TRN-013",), f"{name}: the reason leads to another state"))
    if (run.reason == "policy_stop") != (isinstance(run.policy, str) and run.policy != ""):
        faults.append((("TRN-015", "TRN-062"), f"{name}: policy {run.policy!r}"))
    if run.reason != "policy_stop" and run.policy is not None:
        faults.append((("TRN-015",), f"{name}: a policy without policy_stop"))
    into = run.absorbed_into_run_id
    if (run.reason == "absorbed") != (into is not None):
        faults.append((("TRN-015", "TRN-065"), f"{name}: absorbedIntoRunId {into!r}"))
    if into is not None and (into == run.run_id or into not in runs):
        faults.append((("TRN-015",), f"{name}: absorbed into {into!r}, not another run"))
    if run.state.owned != (run.owner is not None):
        faults.append((("TRN-014",), f"{name}: owner {run.owner!r}"))
    if not run.input_ids or run.ordinal < 1 or run.revision < run.fencing_token:
        faults.append((("TRN-011", "TRN-016", "TRN-017"), f"{name}: inputs {run.input_ids!r}, "
                       f"ordinal {run.ordinal}, revision {run.revision}, token "
                       f"{run.fencing_token}"))
    if run.fencing_token == 0 and run.placed:
        faults.append((("TRN-032",), f"{name}: placed but never acquired"))
    return faults


_STATUSES = {
    MessageRole.USER: {MessageStatus.FINAL},
    MessageRole.SUMMARY: {MessageStatus.FINAL},
    MessageRole.ASSISTANT: set(MessageStatus),
}


def message_faults(message: Message) -> list[tuple[tuple[str, ...], str]]:
    """What ``message`` breaks of TRN-018."""
    name = f"message {message.message_id!r} ({message.role.value}, {message.status.value})"
    faults: list[tuple[tuple[str, ...], str]] = []
    if message.status not in _STATUSES[message.role]:
        faults.append((("TRN-018",), f"{name}: status not allowed for the role"))
    if (message.status is MessageStatus.DRAFT) != (message.draft is not None):
        faults.append((("TRN-018", "TRN-043"), f"{name}: draft summary {message.draft!r}"))
    if message.status in (MessageStatus.PENDING, MessageStatus.FAILED) and (
        message.content is not None
    ):
        faults.append((("TRN-018", "TRN-055"), f"{name}: content {message.content!r}"))
    if (message.role is MessageRole.SUMMARY) != (message.run_id is None):
        faults.append((("TRN-018", "TRN-074"), f"{name}: runId {message.run_id!r}"))
    return faults


def causal_faults(runs: Iterable[Run], messages: Sequence[Message]) -> list[str]:
    """TRN-034: every placed input of a run follows the answers of the runs admitted before it."""
    by_run: dict[str, list[Message]] = {}
    for message in messages:
        if message.run_id is not None:
            by_run.setdefault(message.run_id, []).append(message)
    answers = {run.ordinal: run.assistant_message_id for run in runs}
    position = {message.message_id: message.position for message in messages}
    faults = []
    for run in runs:
        for message in by_run.get(run.run_id, []):
            if message.role is not MessageRole.USER:
                continue
            for ordinal, answer in answers.items():
                if ordinal < run.ordinal and answer in position and (
                    position[answer] > message.position
                ):
                    faults.append(f"input {message.message_id!r} of run {run.run_id!r} stands "
                                  f"before the answer {answer!r} of an earlier run")
    return faults


def snapshot_json(state: RuntimeState) -> JsonValue:
    """The JSON of the snapshot ``state`` gives (TRN-082), or None without a head."""
    snapshot = snapshot_of(state)
    if snapshot is None:
        return None
    return {
        "head": snapshot.head.to_json(),
        "activeRuns": [run.to_json() for run in snapshot.active_runs],
        "messages": [message.to_json() for message in snapshot.messages],
    }


def mask_drafts(value: JsonValue) -> JsonValue:
    """A snapshot JSON with each draft body dropped, as a rebuild can know it (TRN-101)."""
    assert isinstance(value, dict)
    messages = value["messages"]
    assert isinstance(messages, list)
    masked = []
    for message in messages:
        assert isinstance(message, dict)
        if message["status"] == MessageStatus.DRAFT.value:
            message = {**message, "content": None}
        masked.append(message)
    return {**value, "messages": masked}


__all__ = [
    "RUNTIME_KINDS_ON_APPEND",
    "Expected",
    "RuntimeModel",
    "causal_faults",
    "decision_json",
    "mask_drafts",
    "message_faults",
    "outcome_blame",
    "outcome_json",
    "run_faults",
    "snapshot_json",
    "transition_draft",
]
