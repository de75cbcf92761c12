"""One conversation's operational state in memory, and its rebuild from the ledger.

:class:`RuntimeState` is the plainest possible :class:`RuntimeView`: a few
dicts. The in-memory store keeps one per conversation; rebuild and archive
import build one from the ledger (TRN-100, TRN-101); the conformance model
uses the same class to know what a store must hold.

The state as a whole has a canonical JSON form, :meth:`RuntimeState.to_json`
(the archive's ``runtime`` companion, TRN-103), and a *comparable* form,
:func:`comparable`, in which each draft message's content is dropped: the
ledger records a draft's summary, never the draft (TRN-041), so a replay can
rebuild everything except draft bodies, and those are checked against their
summaries instead (:func:`draft_problems`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import attrs

from convledger import codec
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import IntegrityError, LedgerError
from convledger.runtime.records import Admission, Head, Message, MessageStatus, Run
from convledger.runtime.rules import decide
from convledger.runtime.transitions import parse_recorded
from convledger.runtime.view import (
    Decision,
    HeadWrite,
    Status,
    message_in_use,
    refuse_stale_swap,
)

BASELINE_KIND = "runtime/baseline"
TRANSITION_KIND = "runtime/transition"
RUNTIME_KINDS = frozenset({BASELINE_KIND, TRANSITION_KIND})


class RuntimeState:
    """The head, runs, admissions and messages of one conversation."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.head_record: Head | None = None
        self.runs: dict[str, Run] = {}
        self.admissions: dict[str, Admission] = {}
        self.messages: dict[str, Message] = {}

    # -- RuntimeView -----------------------------------------------------------------------

    def head(self) -> Head | None:
        """The head, or None before the first applied transition."""
        return self.head_record

    def run(self, run_id: str) -> Run | None:
        """The run with ``run_id``."""
        return self.runs.get(run_id)

    def active_runs(self) -> Sequence[Run]:
        """Every active run, by ordinal (TRN-081)."""
        return sorted((run for run in self.runs.values() if run.state.active),
                      key=lambda run: run.ordinal)

    def last_run_ordinal(self) -> int:
        """The highest run ordinal, 0 when there is no run."""
        return max((run.ordinal for run in self.runs.values()), default=0)

    def admission(self, idempotency_key: str) -> Admission | None:
        """The admission made under ``idempotency_key``."""
        return self.admissions.get(idempotency_key)

    def admission_of_input(self, input_id: str) -> Admission | None:
        """The admission whose input is ``input_id``."""
        return next((a for a in self.admissions.values() if a.input_id == input_id), None)

    def last_admission_ordinal(self) -> int:
        """The highest admission ordinal, 0 when there is none."""
        return max((admission.ordinal for admission in self.admissions.values()), default=0)

    def message(self, message_id: str) -> Message | None:
        """The message with ``message_id``, active or not."""
        return self.messages.get(message_id)

    def run_answered_by(self, message_id: str) -> Run | None:
        """The run whose assistantMessageId is ``message_id``."""
        return next(
            (run for run in self.runs.values() if run.assistant_message_id == message_id), None
        )

    def message_in_use(self, message_id: str) -> bool:
        """Whether ``message_id`` is taken: the definition itself (TRN-022)."""
        return message_in_use(self, message_id)

    def position_bounds(self) -> tuple[int, int] | None:
        """The lowest and highest message position ever used."""
        positions = [message.position for message in self.messages.values()]
        return (min(positions), max(positions)) if positions else None

    def first_active_message(self) -> Message | None:
        """The active message with the lowest position."""
        return next(iter(self.history()), None)

    def active_messages(self, first: int, last: int) -> Sequence[Message]:
        """The active messages with positions in ``first..last``."""
        return [m for m in self.history() if first <= m.position <= last]

    # -- beyond the view -----------------------------------------------------------------------

    def history(self) -> list[Message]:
        """The active messages by position: what a model is shown (TRN-011)."""
        return sorted((m for m in self.messages.values() if m.active), key=lambda m: m.position)

    def apply(self, decision: Decision) -> None:
        """Write an applied decision's records (the caller already checked the CAS)."""
        assert decision.status is Status.APPLIED and decision.head_write is not None
        self.head_record = decision.head_write.head
        for record in decision.writes:
            self.put(record)

    def put(self, record: Run | Admission | Message) -> None:
        """Insert or replace one record."""
        if isinstance(record, Run):
            self.runs[record.run_id] = record
        elif isinstance(record, Admission):
            self.admissions[record.idempotency_key] = record
        else:
            self.messages[record.message_id] = record

    def copy(self) -> RuntimeState:
        """A state that shares no dict with this one (records are immutable)."""
        copied = RuntimeState(self.conversation_id)
        copied.head_record = self.head_record
        copied.runs = dict(self.runs)
        copied.admissions = dict(self.admissions)
        copied.messages = dict(self.messages)
        return copied

    def is_empty(self) -> bool:
        """True before the first applied transition and without a baseline."""
        return self.head_record is None

    def to_json(self) -> dict[str, JsonValue]:
        """TRN-103: the full state, each list in its stored order (the ``runtime`` companion)."""
        head = None if self.head_record is None else self.head_record.to_json()
        return {
            "head": head,
            "runs": [run.to_json() for run in sorted(self.runs.values(), key=_by_ordinal)],
            "admissions": [
                admission.to_json()
                for admission in sorted(self.admissions.values(), key=_by_ordinal)
            ],
            "messages": [
                message.to_json()
                for message in sorted(self.messages.values(), key=lambda m: m.position)
            ],
        }

    @classmethod
    def from_json(cls, conversation_id: str, value: object) -> RuntimeState:
        """Parse :meth:`to_json`'s form (a companion, a baseline payload); IntegrityError else."""
        if not isinstance(value, dict) or not {"head", "runs", "admissions", "messages"} <= set(
            value
        ):
            raise IntegrityError(
                "a runtime state has head, runs, admissions and messages", requirement="TRN-103"
            )
        state = cls(conversation_id)
        if value["head"] is not None:
            state.head_record = Head.from_json(value["head"])
        lists = {name: value[name] for name in ("runs", "admissions", "messages")}
        if not all(isinstance(items, list) for items in lists.values()):
            raise IntegrityError("runs, admissions and messages are arrays", requirement="TRN-103")
        records: list[Run | Admission | Message] = [
            *(Run.from_json(item) for item in lists["runs"]),
            *(Admission.from_json(item) for item in lists["admissions"]),
            *(Message.from_json(item) for item in lists["messages"]),
        ]
        for record in records:
            state.put(record)
        if len(records) != len(state.runs) + len(state.admissions) + len(state.messages):
            raise IntegrityError("a runtime state repeats an identity", requirement="TRN-103")
        foreign = [record for record in records if record.conversation_id != conversation_id]
        if foreign or (state.head_record and state.head_record.conversation_id != conversation_id):
            raise IntegrityError("a runtime state names another conversation",
                                 requirement="TRN-103")
        return state


def _by_ordinal(record: Run | Admission) -> int:
    return record.ordinal


def comparable(state: RuntimeState) -> dict[str, JsonValue]:
    """TRN-101: the state with every draft body dropped, as a replay can rebuild it."""
    document = state.to_json()
    messages = document["messages"]
    assert isinstance(messages, list)
    for message in messages:
        assert isinstance(message, dict)
        if message["status"] == MessageStatus.DRAFT.value:
            message["content"] = None
    return document


def draft_problems(state: RuntimeState) -> list[str]:
    """TRN-102: every draft message whose body does not hash to its recorded summary."""
    problems = []
    for message in state.messages.values():
        if message.status is not MessageStatus.DRAFT or message.draft is None:
            continue
        encoded = codec.encode(message.content)
        if (hashlib.sha256(encoded).hexdigest(), len(encoded)) != (
            message.draft.sha256, message.draft.bytes
        ):
            problems.append(f"draft of message {message.message_id!r} does not match its summary")
    return problems


def rebuild(conversation_id: str, events: Iterable[Envelope]) -> RuntimeState:
    """TRN-100: fold the conversation's runtime events from seq 1 into its operational state.

    A ``runtime/baseline`` (only at seq 1) sets the state the conversation had
    when it migrated; each ``runtime/transition`` must apply again exactly as
    it applied when it was recorded. Other kinds are not runtime history and
    are passed over. Raises :class:`IntegrityError` naming the seq of the
    first event that does not fold.
    """
    state = RuntimeState(conversation_id)
    for envelope in events:
        if envelope.kind == BASELINE_KIND:
            if envelope.seq != 1:
                raise _unfolded(envelope, "a baseline stands at seq 1 only")
            state = _baseline_state(conversation_id, envelope)
        elif envelope.kind == TRANSITION_KIND:
            _fold(state, envelope)
    return state


def _baseline_state(conversation_id: str, envelope: Envelope) -> RuntimeState:
    payload = envelope.payload
    assert isinstance(payload, dict)
    try:
        return RuntimeState.from_json(conversation_id, payload)
    except IntegrityError as error:
        raise _unfolded(envelope, f"its records do not parse: {error.message}") from None


def _fold(state: RuntimeState, envelope: Envelope) -> None:
    payload = envelope.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise _unfolded(envelope, "the payload is not {type, input}")
    try:
        transition = parse_recorded(str(payload["type"]), payload.get("input"))
        decision = decide(state, state.conversation_id, transition, envelope.occurred_at)
    except LedgerError as error:
        raise _unfolded(envelope, f"it is refused on replay: {error.message}") from None
    if decision.status is not Status.APPLIED:
        raise _unfolded(envelope, f"it replays as {decision.status.value}, not applied")
    state.apply(decision)


def _unfolded(envelope: Envelope, why: str) -> IntegrityError:
    return IntegrityError(
        f"runtime event at seq {envelope.seq} does not replay: {why}", requirement="TRN-100"
    )


@attrs.frozen
class Snapshot:
    """What ``load_snapshot`` returns (TRN-082): bounded by active work and history."""

    head: Head
    active_runs: tuple[Run, ...]
    messages: tuple[Message, ...]


def snapshot_of(state: RuntimeState) -> Snapshot | None:
    """The bounded snapshot of ``state``, or None when it has no head."""
    if state.head_record is None:
        return None
    return Snapshot(state.head_record, tuple(state.active_runs()), tuple(state.history()))


def compare_and_swap(state: RuntimeState, write: HeadWrite) -> None:
    """TRN-003: the head moves only from the version the decision was made on."""
    refuse_stale_swap(None if state.head_record is None else state.head_record.version, write)
    state.head_record = write.head
