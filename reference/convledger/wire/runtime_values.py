"""Values on the wire of the runtime operations (chapter ``wire.md``, WIR-015).

Transitions travel as ``{type, input}`` with the TRN-006 input members and are
decoded WITHOUT validation (an unknown type decodes to
:class:`UnknownTransition`, which every store refuses, TRN-007); outcomes,
runs, snapshots, recovery cursors and pages travel in the ``to_json`` wire
forms of :mod:`convledger.runtime.records`. The JSON values, envelopes and
the reply checks they use are in :mod:`convledger.wire.ledger_values`;
:mod:`convledger.wire.values` re-exports every name.
"""

from __future__ import annotations

from typing import Any

from convledger.errors import LedgerError
from convledger.runtime.operations import PurgeOutcome, RecoveryCursor, RecoveryPage
from convledger.runtime.records import DraftSummary, Head, Message, Run
from convledger.runtime.state import Snapshot
from convledger.runtime.transitions import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Operation,
    Recover,
    Terminal,
)
from convledger.runtime.view import Admitted, Outcome, Status
from convledger.wire.ledger_values import (
    ReplyError,
    envelope_in,
    envelope_out,
    reply_list,
    reply_map,
    value_out,
)


def transition_out(transition: object) -> dict[str, Any]:
    """``{type, input}`` with the TRN-006 input members; an unknown object has type null."""
    match transition:
        case Accept():
            data: dict[str, object] = {
                "idempotencyKey": transition.idempotency_key,
                "inputId": transition.input_id,
                "runId": transition.run_id,
                "assistantMessageId": transition.assistant_message_id,
                "message": transition.message,
            }
        case Acquire():
            data = {"runId": transition.run_id, "owner": transition.owner}
        case Checkpoint():
            data = {"runId": transition.run_id, **_fence_out(transition.fence)}
            if isinstance(transition.draft, DraftSummary):
                data["draftSummary"] = transition.draft.to_json()
            else:
                data["draft"] = transition.draft
        case Operation():
            data = {
                "runId": transition.run_id,
                **_fence_out(transition.fence),
                "operation": transition.operation,
            }
        case Interrupt():
            data = {"runId": transition.run_id}
        case Recover():
            data = {
                "runId": transition.run_id,
                "revision": transition.revision,
                "action": transition.action,
                "evidence": transition.evidence,
            }
        case Terminal():
            data = {
                "runId": transition.run_id,
                **_fence_out(transition.fence),
                "reason": transition.reason,
                "message": transition.message,
                "absorbRunIds": transition.absorb_run_ids,
            }
            if transition.policy is not None:
                data["policy"] = transition.policy
        case Compact():
            data = {
                "expectedVersion": transition.expected_version,
                "firstMessageId": transition.first_message_id,
                "lastMessageId": transition.last_message_id,
                "summaryMessageId": transition.summary_message_id,
                "summary": transition.summary,
            }
        case _:
            return {"type": None, "input": {}}
    return {"type": type(transition).type, "input": value_out(data)}


def _fence_out(fence: object) -> dict[str, object]:
    if not isinstance(fence, Fence):
        return {"fence": None}
    return {"owner": fence.owner, "revision": fence.revision, "fencingToken": fence.fencing_token}


class UnknownTransition:
    """What a transition of unknown type decodes to; every store refuses it (TRN-007)."""


def transition_in(value: object) -> object:
    """The transition a ``{type, input}`` map names, built WITHOUT validation."""
    if not isinstance(value, dict) or not isinstance(value.get("input"), dict):
        return UnknownTransition()
    data: dict[str, Any] = value["input"]

    def get(key: str, default: Any = None) -> Any:
        return data.get(key, default)

    fence: object = (
        None if "fence" in data else Fence(get("owner"), get("revision"), get("fencingToken"))
    )
    kind = value.get("type")
    if kind == "accept":
        return Accept(get("idempotencyKey"), get("inputId"), get("runId"),
                      get("assistantMessageId"), get("message"))
    if kind == "acquire":
        return Acquire(get("runId"), get("owner"))
    if kind == "checkpoint":
        draft: object = get("draft")
        if "draftSummary" in data:
            try:
                draft = DraftSummary.from_json(data["draftSummary"])
            except LedgerError:
                draft = data["draftSummary"]
        return Checkpoint(get("runId"), fence, draft)  # type: ignore[arg-type]
    if kind == "operation":
        return Operation(get("runId"), fence, get("operation"))  # type: ignore[arg-type]
    if kind == "interrupt":
        return Interrupt(get("runId"))
    if kind == "recover":
        return Recover(get("runId"), get("revision"), get("action"), get("evidence"))
    if kind == "terminal":
        absorbed = get("absorbRunIds", [])
        return Terminal(get("runId"), fence, get("reason"), get("message"),  # type: ignore[arg-type]
                        get("policy"), tuple(absorbed) if isinstance(absorbed, list) else absorbed)
    if kind == "compact":
        return Compact(get("expectedVersion"), get("firstMessageId"), get("lastMessageId"),
                       get("summaryMessageId"), get("summary"))
    return UnknownTransition()


def outcome_out(outcome: Outcome) -> dict[str, Any]:
    """``{status, version, run?, admitted?, event?}`` (WIR-015)."""
    result: dict[str, Any] = {"status": outcome.status.value, "version": outcome.version}
    if outcome.run is not None:
        result["run"] = value_out(outcome.run.to_json())
    if outcome.admitted is not None:
        result["admitted"] = admitted_out(outcome.admitted)
    if outcome.event is not None:
        result["event"] = envelope_out(outcome.event)
    return result


def admitted_out(admitted: Admitted) -> dict[str, Any]:
    """``{inputId, runId, assistantMessageId}``: the ids an accept admitted (WIR-015)."""
    return {
        "inputId": admitted.input_id,
        "runId": admitted.run_id,
        "assistantMessageId": admitted.assistant_message_id,
    }


def outcome_in(value: object) -> Outcome:
    """A transition's outcome."""
    fields = reply_map(value, "outcome")
    try:
        admitted = fields.get("admitted")
        return Outcome(
            status=Status(fields["status"]),
            version=fields["version"],
            run=None if fields.get("run") is None else Run.from_json(fields["run"]),
            admitted=None if admitted is None else Admitted(
                admitted["inputId"], admitted["runId"], admitted["assistantMessageId"]
            ),
            event=None if fields.get("event") is None else envelope_in(fields["event"]),
        )
    except (KeyError, TypeError, ValueError, LedgerError) as error:
        raise ReplyError(f"a malformed outcome: {error!r}") from None


def run_out(run: Run | None) -> Any:
    """A run record or null."""
    return None if run is None else value_out(run.to_json())


def run_in(value: object) -> Run | None:
    """A run record or None."""
    if value is None:
        return None
    try:
        return Run.from_json(value)
    except LedgerError as error:
        raise ReplyError(f"a malformed run: {error.message}") from None


def runs_in(value: object) -> tuple[Run, ...]:
    """An array of run records."""
    runs = tuple(run_in(item) for item in reply_list(value, "runs"))
    if any(run is None for run in runs):
        raise ReplyError("a list of runs holds null")
    return runs  # type: ignore[return-value]


def snapshot_out(snapshot: Snapshot) -> dict[str, Any]:
    """``{head, activeRuns, messages}`` (WIR-015)."""
    return {
        "head": snapshot.head.to_json(),
        "activeRuns": [run_out(run) for run in snapshot.active_runs],
        "messages": [value_out(message.to_json()) for message in snapshot.messages],
    }


def snapshot_in(value: object) -> Snapshot:
    """A snapshot."""
    fields = reply_map(value, "snapshot")
    try:
        return Snapshot(
            Head.from_json(fields["head"]),
            runs_in(fields["activeRuns"]),
            tuple(Message.from_json(item) for item in reply_list(fields["messages"], "messages")),
        )
    except (KeyError, LedgerError) as error:
        raise ReplyError(f"a malformed snapshot: {error!r}") from None


def cursor_out(cursor: object) -> Any:
    """``{conversationId, ordinal}``, null for None, or the value itself when not a cursor."""
    if cursor is None:
        return None
    if isinstance(cursor, RecoveryCursor):
        return {
            "conversationId": value_out(cursor.conversation_id),
            "ordinal": value_out(cursor.ordinal),
        }
    return value_out(cursor)


def cursor_in(value: object) -> object:
    """The cursor a request names, unvalidated."""
    if isinstance(value, dict) and set(value) == {"conversationId", "ordinal"}:
        return RecoveryCursor(value["conversationId"], value["ordinal"])
    return value


def recovery_page_out(page: RecoveryPage) -> dict[str, Any]:
    """``{runs, next?}`` (WIR-015)."""
    result: dict[str, Any] = {"runs": [run_out(run) for run in page.runs]}
    if page.next is not None:
        result["next"] = cursor_out(page.next)
    return result


def recovery_page_in(value: object) -> RecoveryPage:
    """A page of scanRecoverable."""
    fields = reply_map(value, "recovery page")
    cursor = fields.get("next")
    if cursor is not None and not (
        isinstance(cursor, dict) and set(cursor) == {"conversationId", "ordinal"}
    ):
        raise ReplyError(f"a malformed cursor {cursor!r}")
    return RecoveryPage(
        runs_in(fields.get("runs")),
        next=None if cursor is None else RecoveryCursor(cursor["conversationId"],
                                                        cursor["ordinal"]),
    )


def purge_in(value: object) -> PurgeOutcome:
    """``"purged"`` or ``"already_purged"``."""
    try:
        return PurgeOutcome(value)
    except ValueError:
        raise ReplyError(f"{value!r} is not a purge outcome") from None
