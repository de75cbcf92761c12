"""The operational records of the runtime (chapter ``transitions.md``, TRN-010 .. TRN-019).

Four records live beside the ledger and are its operational projections: the
conversation head, runs, admissions and messages. Each is a frozen value here
and canonical JSON (camelCase members) in storage, in ``runtime/baseline``
payloads and in the archive's ``runtime`` companion. ``to_json`` and
``from_json`` are exact inverses; ``from_json`` refuses anything else with
:class:`IntegrityError`, because a record that does not parse is stored or
supplied data contradicting the spec.

Run states and terminal reasons are tables, not code paths (TRN-012, TRN-013).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from convledger.canonical import JsonValue
from convledger.runtime import fields as stored


class RunState(enum.Enum):
    """The states of a run (TRN-012)."""

    QUEUED = "queued"
    RUNNING = "running"
    INTERRUPT_REQUESTED = "interrupt_requested"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    SUPERSEDED = "superseded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    ABANDONED = "abandoned"

    @property
    def active(self) -> bool:
        """True for the states a run leaves again (TRN-012)."""
        return self in ACTIVE_STATES

    @property
    def owned(self) -> bool:
        """True for the states in which a run has an owner (TRN-014)."""
        return self in OWNED_STATES


ACTIVE_STATES = frozenset({RunState.QUEUED, RunState.RUNNING, RunState.INTERRUPT_REQUESTED})
OWNED_STATES = frozenset({RunState.RUNNING, RunState.INTERRUPT_REQUESTED})

REASON_STATE: Mapping[str, RunState] = {
    "success": RunState.COMPLETED,
    "policy_stop": RunState.COMPLETED,
    "provider_stop": RunState.COMPLETED,
    "interrupted": RunState.INTERRUPTED,
    "superseded": RunState.SUPERSEDED,
    "absorbed": RunState.SUPERSEDED,
    "cancelled": RunState.CANCELLED,
    "shutdown": RunState.CANCELLED,
    "timeout": RunState.CANCELLED,
    "abandoned": RunState.ABANDONED,
    "provider_failure": RunState.FAILED,
    "runtime_failure": RunState.FAILED,
    "storage_conflict": RunState.FAILED,
    "output_rejected": RunState.FAILED,
    "context_overflow": RunState.FAILED,
}
"""TRN-013: the run state each terminal reason leads to. No other reason exists."""

RESERVED_REASONS = frozenset({"absorbed", "abandoned"})
"""Reasons only absorption and recovery set; a terminal transition may not name them (TRN-061)."""


class MessageRole(enum.Enum):
    """Who a history message speaks for (TRN-011, TRN-018)."""

    USER = "user"
    ASSISTANT = "assistant"
    SUMMARY = "summary"


class MessageStatus(enum.Enum):
    """The life of a message (TRN-011, TRN-018): user and summary messages are always final."""

    PENDING = "pending"
    DRAFT = "draft"
    FINAL = "final"
    FAILED = "failed"


@attrs.frozen
class DraftSummary:
    """What the ledger records of a checkpointed draft (TRN-041): never the draft itself."""

    id: str
    status: str
    sha256: str
    parts: int
    bytes: int

    def to_json(self) -> dict[str, JsonValue]:
        """The wire form."""
        return {
            "id": self.id,
            "status": self.status,
            "sha256": self.sha256,
            "parts": self.parts,
            "bytes": self.bytes,
        }

    @classmethod
    def from_json(cls, value: object) -> DraftSummary:
        """Parse the wire form, refusing anything else (IntegrityError)."""
        fields = stored.members(
            value, "draft summary", ("id", "status", "sha256", "parts", "bytes")
        )
        return cls(
            id=stored.text(fields, "id"),
            status=stored.string(fields, "status"),
            sha256=stored.text(fields, "sha256"),
            parts=stored.count(fields, "parts"),
            bytes=stored.count(fields, "bytes"),
        )


@attrs.frozen
class Head:
    """The conversation head (TRN-010): ``version`` counts applied transitions."""

    conversation_id: str
    version: int

    def to_json(self) -> dict[str, JsonValue]:
        """The wire form."""
        return {"conversationId": self.conversation_id, "version": self.version}

    @classmethod
    def from_json(cls, value: object) -> Head:
        """Parse the wire form, refusing anything else (IntegrityError)."""
        fields = stored.members(value, "head", ("conversationId", "version"))
        return cls(stored.text(fields, "conversationId"), stored.count(fields, "version"))


@attrs.frozen
class Run:
    """One run (TRN-011); the invariants of :func:`run_problems` hold for every stored run."""

    run_id: str
    conversation_id: str
    ordinal: int
    state: RunState
    reason: str | None
    policy: str | None
    owner: str | None
    revision: int
    fencing_token: int
    input_ids: tuple[str, ...]
    assistant_message_id: str
    placed: bool
    checkpoint: DraftSummary | None
    last_operation: dict[str, JsonValue] | None
    absorbed_into_run_id: str | None
    created_at: str
    updated_at: str

    def to_json(self) -> dict[str, JsonValue]:
        """The wire form."""
        return {
            "runId": self.run_id,
            "conversationId": self.conversation_id,
            "ordinal": self.ordinal,
            "state": self.state.value,
            "reason": self.reason,
            "policy": self.policy,
            "owner": self.owner,
            "revision": self.revision,
            "fencingToken": self.fencing_token,
            "inputIds": list(self.input_ids),
            "assistantMessageId": self.assistant_message_id,
            "placed": self.placed,
            "checkpoint": None if self.checkpoint is None else self.checkpoint.to_json(),
            "lastOperation": self.last_operation,
            "absorbedIntoRunId": self.absorbed_into_run_id,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }

    @classmethod
    def from_json(cls, value: object) -> Run:
        """Parse the wire form, refusing anything else (IntegrityError)."""
        fields = stored.members(value, "run", RUN_FIELDS)
        state = stored.enumerated(RunState, fields, "state")
        checkpoint = fields["checkpoint"]
        operation = fields["lastOperation"]
        if operation is not None and not isinstance(operation, dict):
            raise stored.broken("run", "lastOperation must be an object or null")
        run = cls(
            run_id=stored.text(fields, "runId"),
            conversation_id=stored.text(fields, "conversationId"),
            ordinal=stored.count(fields, "ordinal", minimum=1),
            state=state,
            reason=stored.optional_text(fields, "reason"),
            policy=stored.optional_text(fields, "policy"),
            owner=stored.optional_text(fields, "owner"),
            revision=stored.count(fields, "revision"),
            fencing_token=stored.count(fields, "fencingToken"),
            input_ids=stored.texts(fields, "inputIds"),
            assistant_message_id=stored.text(fields, "assistantMessageId"),
            placed=stored.flag(fields, "placed"),
            checkpoint=None if checkpoint is None else DraftSummary.from_json(checkpoint),
            last_operation=operation,
            absorbed_into_run_id=stored.optional_text(fields, "absorbedIntoRunId"),
            created_at=stored.text(fields, "createdAt"),
            updated_at=stored.text(fields, "updatedAt"),
        )
        problems = run_problems(run)
        if problems:
            raise stored.broken("run", "; ".join(problems))
        return run


RUN_FIELDS = (
    "runId", "conversationId", "ordinal", "state", "reason", "policy", "owner", "revision",
    "fencingToken", "inputIds", "assistantMessageId", "placed", "checkpoint", "lastOperation",
    "absorbedIntoRunId", "createdAt", "updatedAt",
)


def run_problems(run: Run) -> list[str]:
    """Every invariant of TRN-014 .. TRN-016 that ``run`` breaks; empty when it is sound."""
    problems = []
    if run.state.active != (run.reason is None):
        problems.append("a run has a reason exactly when its state is terminal (TRN-014)")
    if run.reason is not None and REASON_STATE.get(run.reason) is not run.state:
        problems.append(f"reason {run.reason!r} does not lead to state {run.state.value!r}")
    if (run.reason == "policy_stop") != (run.policy is not None):
        problems.append("a policy is named exactly when the reason is policy_stop (TRN-015)")
    if (run.reason == "absorbed") != (run.absorbed_into_run_id is not None):
        problems.append("absorbedIntoRunId is set exactly when the reason is absorbed (TRN-015)")
    if run.absorbed_into_run_id == run.run_id:
        problems.append("a run is absorbed into another run, never into itself (TRN-015)")
    if run.state.owned != (run.owner is not None):
        problems.append("a run has an owner exactly while running or interrupt_requested")
    if not run.input_ids:
        problems.append("a run has at least one input")
    if run.fencing_token == 0 and run.placed:
        problems.append("only an acquired run has placed messages (TRN-032)")
    return problems


@attrs.frozen
class Admission:
    """One admitted input (TRN-011), immutable once written (TRN-020)."""

    conversation_id: str
    idempotency_key: str
    input_id: str
    run_id: str
    assistant_message_id: str
    ordinal: int
    admitted_at: str
    message: dict[str, JsonValue]

    def to_json(self) -> dict[str, JsonValue]:
        """The wire form."""
        return {
            "conversationId": self.conversation_id,
            "idempotencyKey": self.idempotency_key,
            "inputId": self.input_id,
            "runId": self.run_id,
            "assistantMessageId": self.assistant_message_id,
            "ordinal": self.ordinal,
            "admittedAt": self.admitted_at,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, value: object) -> Admission:
        """Parse the wire form, refusing anything else (IntegrityError)."""
        fields = stored.members(value, "admission", ADMISSION_FIELDS)
        message = fields["message"]
        if not isinstance(message, dict):
            raise stored.broken("admission", "message must be an object")
        return cls(
            conversation_id=stored.text(fields, "conversationId"),
            idempotency_key=stored.text(fields, "idempotencyKey"),
            input_id=stored.text(fields, "inputId"),
            run_id=stored.text(fields, "runId"),
            assistant_message_id=stored.text(fields, "assistantMessageId"),
            ordinal=stored.count(fields, "ordinal", minimum=1),
            admitted_at=stored.text(fields, "admittedAt"),
            message=message,
        )


ADMISSION_FIELDS = (
    "conversationId", "idempotencyKey", "inputId", "runId", "assistantMessageId", "ordinal",
    "admittedAt", "message",
)


@attrs.frozen
class Message:
    """One history message (TRN-011). History is the active messages by position."""

    conversation_id: str
    message_id: str
    position: int
    role: MessageRole
    run_id: str | None
    status: MessageStatus
    content: JsonValue
    draft: DraftSummary | None
    active: bool
    created_at: str
    updated_at: str

    def to_json(self) -> dict[str, JsonValue]:
        """The wire form."""
        return {
            "conversationId": self.conversation_id,
            "messageId": self.message_id,
            "position": self.position,
            "role": self.role.value,
            "runId": self.run_id,
            "status": self.status.value,
            "content": self.content,
            "draft": None if self.draft is None else self.draft.to_json(),
            "active": self.active,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }

    @classmethod
    def from_json(cls, value: object) -> Message:
        """Parse the wire form, refusing anything else (IntegrityError)."""
        fields = stored.members(value, "message", MESSAGE_FIELDS)
        position = fields["position"]
        if isinstance(position, bool) or not isinstance(position, int):
            raise stored.broken("message", "position must be an integer")
        draft = fields["draft"]
        message = cls(
            conversation_id=stored.text(fields, "conversationId"),
            message_id=stored.text(fields, "messageId"),
            position=position,
            role=stored.enumerated(MessageRole, fields, "role"),
            run_id=stored.optional_text(fields, "runId"),
            status=stored.enumerated(MessageStatus, fields, "status"),
            content=fields["content"],
            draft=None if draft is None else DraftSummary.from_json(draft),
            active=stored.flag(fields, "active"),
            created_at=stored.text(fields, "createdAt"),
            updated_at=stored.text(fields, "updatedAt"),
        )
        if (message.status is MessageStatus.DRAFT) != (message.draft is not None):
            raise stored.broken(
                "message", "a draft summary is present exactly while status is draft"
            )
        return message


MESSAGE_FIELDS = (
    "conversationId", "messageId", "position", "role", "runId", "status", "content", "draft",
    "active", "createdAt", "updatedAt",
)


# -- strict member readers -------------------------------------------------------------------

