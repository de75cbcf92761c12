"""The eight runtime transitions as values (chapter ``transitions.md``).

A caller builds one of :data:`Transition`'s classes and hands it to
``store.transition``. Each class knows its wire ``type`` and its *recorded
input*: the ``input`` member of the ``runtime/transition`` event it appends
(TRN-006). The recorded input equals the call's input except for checkpoint,
whose draft is replaced by its :class:`DraftSummary` (TRN-041). Replay and
import parse recorded inputs back with :func:`parse_recorded`, so a recorded
checkpoint is a valid transition too (its ``draft`` is then the summary).

:func:`validate` holds every check that needs no stored state: types, the
reason table, the policy rule, repeated ids. It raises
:class:`InvalidInputError` (TRN-007) and runs before anything is read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from convledger import codec, limits
from convledger.canonical import JsonValue, NestingTooDeep
from convledger.errors import CanonicalJsonError, InvalidInputError
from convledger.runtime.records import REASON_STATE, RESERVED_REASONS, DraftSummary

RECOVER_ACTIONS = frozenset({"requeue", "abandon"})


@attrs.frozen
class Accept:
    """Admit an input under an idempotency key (TRN-020 .. TRN-025)."""

    type: ClassVar[str] = "accept"
    idempotency_key: str
    input_id: str
    run_id: str
    assistant_message_id: str
    message: dict[str, JsonValue]


@attrs.frozen
class Acquire:
    """Take a queued run for ``owner`` in causal order (TRN-030 .. TRN-034)."""

    type: ClassVar[str] = "acquire"
    run_id: str
    owner: str


@attrs.frozen
class Fence:
    """What a run's owner must present to change it (TRN-040)."""

    owner: str
    revision: int
    fencing_token: int

    def to_json(self) -> dict[str, JsonValue]:
        """The recorded members."""
        return {"owner": self.owner, "revision": self.revision, "fencingToken": self.fencing_token}


@attrs.frozen
class Checkpoint:
    """Save the assistant's draft; the ledger records only its summary (TRN-041)."""

    type: ClassVar[str] = "checkpoint"
    run_id: str
    fence: Fence
    draft: dict[str, JsonValue] | DraftSummary


@attrs.frozen
class Operation:
    """Record the run's current operation (TRN-044)."""

    type: ClassVar[str] = "operation"
    run_id: str
    fence: Fence
    operation: dict[str, JsonValue]


@attrs.frozen
class Interrupt:
    """Ask a run to stop; a queued run stops at once (TRN-050, TRN-051)."""

    type: ClassVar[str] = "interrupt"
    run_id: str


@attrs.frozen
class Recover:
    """Requeue or abandon a run whose owner is gone (TRN-053 .. TRN-055)."""

    type: ClassVar[str] = "recover"
    run_id: str
    revision: int
    action: str
    evidence: dict[str, JsonValue]


@attrs.frozen
class Terminal:
    """End a run with a reason and absorb queued runs, atomically (TRN-060 .. TRN-066)."""

    type: ClassVar[str] = "terminal"
    run_id: str
    fence: Fence
    reason: str
    message: dict[str, JsonValue]
    policy: str | None = None
    absorb_run_ids: tuple[str, ...] = ()


@attrs.frozen
class Compact:
    """Replace an exact range of history by a summary (TRN-070 .. TRN-075)."""

    type: ClassVar[str] = "compact"
    expected_version: int
    first_message_id: str
    last_message_id: str
    summary_message_id: str
    summary: dict[str, JsonValue]


Transition = Accept | Acquire | Checkpoint | Operation | Interrupt | Recover | Terminal | Compact
TRANSITION_TYPES: tuple[type[Transition], ...] = (
    Accept, Acquire, Checkpoint, Operation, Interrupt, Recover, Terminal, Compact,
)


def summarize_draft(draft: dict[str, JsonValue] | DraftSummary) -> DraftSummary:
    """TRN-041: ``{id, status, sha256, parts, bytes}`` of the draft's canonical JSON."""
    if isinstance(draft, DraftSummary):
        return draft
    encoded = codec.encode(draft)
    parts = draft["parts"]
    assert isinstance(parts, list)
    return DraftSummary(
        id=str(draft["id"]),
        status=str(draft["status"]),
        sha256=hashlib.sha256(encoded).hexdigest(),
        parts=len(parts),
        bytes=len(encoded),
    )


def recorded_input(transition: Transition) -> dict[str, JsonValue]:
    """TRN-006: the ``input`` member of the transition's ledger event (wire names)."""
    match transition:
        case Accept():
            return {
                "idempotencyKey": transition.idempotency_key,
                "inputId": transition.input_id,
                "runId": transition.run_id,
                "assistantMessageId": transition.assistant_message_id,
                "message": transition.message,
            }
        case Acquire():
            return {"runId": transition.run_id, "owner": transition.owner}
        case Checkpoint():
            summary = summarize_draft(transition.draft).to_json()
            return {"runId": transition.run_id, **transition.fence.to_json(), "draft": summary}
        case Operation():
            return {
                "runId": transition.run_id,
                **transition.fence.to_json(),
                "operation": transition.operation,
            }
        case Interrupt():
            return {"runId": transition.run_id}
        case Recover():
            return {
                "runId": transition.run_id,
                "revision": transition.revision,
                "action": transition.action,
                "evidence": transition.evidence,
            }
        case Terminal():
            recorded: dict[str, JsonValue] = {
                "runId": transition.run_id,
                **transition.fence.to_json(),
                "reason": transition.reason,
                "message": transition.message,
                "absorbRunIds": list(transition.absorb_run_ids),
            }
            if transition.policy is not None:
                recorded["policy"] = transition.policy
            return recorded
        case Compact():
            return {
                "expectedVersion": transition.expected_version,
                "firstMessageId": transition.first_message_id,
                "lastMessageId": transition.last_message_id,
                "summaryMessageId": transition.summary_message_id,
                "summary": transition.summary,
            }


def parse_recorded(kind: str, recorded: object) -> Transition:
    """The transition a ``runtime/transition`` payload records (replay, import; TRN-100).

    Raises :class:`InvalidInputError` when the payload is not a recorded
    transition; callers that read stored data translate it to integrity.
    """
    if not isinstance(recorded, dict):
        raise _invalid("input", "the recorded input must be an object")
    fields = recorded
    try:
        transition = _PARSERS[kind](fields)
    except KeyError as missing:
        raise _invalid("input", f"recorded {kind!r} input lacks {missing}") from None
    return validate(transition)


def _fence(fields: dict[str, Any]) -> Fence:
    # validate() checks every member's type afterwards
    return Fence(owner=fields["owner"], revision=fields["revision"],
                 fencing_token=fields["fencingToken"])


def _recorded_draft(value: JsonValue) -> DraftSummary:
    try:
        return DraftSummary.from_json(value)
    except Exception as error:  # an IntegrityError of the record parser
        raise _invalid("draft", f"a recorded checkpoint carries a draft summary: {error}") from None


_PARSERS: dict[str, Callable[[dict[str, Any]], object]] = {
    "accept": lambda f: Accept(
        f["idempotencyKey"], f["inputId"], f["runId"], f["assistantMessageId"], f["message"]
    ),
    "acquire": lambda f: Acquire(f["runId"], f["owner"]),
    "checkpoint": lambda f: Checkpoint(f["runId"], _fence(f), _recorded_draft(f["draft"])),
    "operation": lambda f: Operation(f["runId"], _fence(f), f["operation"]),
    "interrupt": lambda f: Interrupt(f["runId"]),
    "recover": lambda f: Recover(f["runId"], f["revision"], f["action"], f["evidence"]),
    "terminal": lambda f: Terminal(
        f["runId"], _fence(f), f["reason"], f["message"], f.get("policy"),
        tuple(f["absorbRunIds"]) if isinstance(f["absorbRunIds"], list) else f["absorbRunIds"],
    ),
    "compact": lambda f: Compact(
        f["expectedVersion"], f["firstMessageId"], f["lastMessageId"], f["summaryMessageId"],
        f["summary"],
    ),
}


# -- validation of everything that needs no stored state (TRN-007) ---------------------------


def validate(transition: object) -> Transition:
    """Check ``transition``'s fields and return it with JSON members detached from the caller.

    Raises :class:`InvalidInputError` naming the offending field.
    """
    match transition:
        case Accept():
            # pairwise distinct ids are checked for a new key only (TRN-021, TRN-022: rules)
            _ids(transition, "idempotency_key", "input_id", "run_id", "assistant_message_id")
            return attrs.evolve(transition, message=_object(transition.message, "message"))
        case Acquire():
            _ids(transition, "run_id", "owner")
            return transition
        case Checkpoint():
            _ids(transition, "run_id")
            _check_fence(transition.fence)
            if isinstance(transition.draft, DraftSummary):
                return transition
            draft = _object(transition.draft, "draft")
            if not isinstance(draft.get("id"), str) or not draft["id"]:
                raise _invalid("draft", "a draft has a non-empty string id")
            if not isinstance(draft.get("status"), str):
                raise _invalid("draft", "a draft has a string status (TRN-042)")
            if not isinstance(draft.get("parts"), list):
                raise _invalid("draft", "a draft has an array of parts")
            return attrs.evolve(transition, draft=draft)
        case Operation():
            _ids(transition, "run_id")
            _check_fence(transition.fence)
            return attrs.evolve(transition, operation=_object(transition.operation, "operation"))
        case Interrupt():
            _ids(transition, "run_id")
            return transition
        case Recover():
            _ids(transition, "run_id")
            _natural(transition.revision, "revision")
            if transition.action not in RECOVER_ACTIONS:  # TRN-053
                raise _invalid("action", f"action must be one of {sorted(RECOVER_ACTIONS)}")
            evidence = _object(transition.evidence, "evidence")
            if transition.action == "requeue" and evidence.get("replaySafe") is not True:
                raise _invalid("evidence", "a requeue needs evidence.replaySafe === true")
            return attrs.evolve(transition, evidence=evidence)
        case Terminal():
            return _validated_terminal(transition)
        case Compact():
            _ids(transition, "first_message_id", "last_message_id", "summary_message_id")
            _natural(transition.expected_version, "expected_version")
            return attrs.evolve(transition, summary=_object(transition.summary, "summary"))
    raise InvalidInputError(
        f"not a transition: {type(transition).__name__}", requirement="TRN-007", field="type"
    )


def _validated_terminal(transition: Terminal) -> Terminal:
    _ids(transition, "run_id")
    _check_fence(transition.fence)
    if not isinstance(transition.reason, str) or transition.reason not in REASON_STATE:
        raise InvalidInputError(
            f"unknown terminal reason {transition.reason!r}", requirement="TRN-013", field="reason"
        )
    if transition.reason in RESERVED_REASONS:
        raise InvalidInputError(
            f"reason {transition.reason!r} is set by absorption or recovery only",
            requirement="TRN-061",
            field="reason",
        )
    if (transition.reason == "policy_stop") != (transition.policy is not None):
        raise InvalidInputError(
            "a policy is named exactly when the reason is policy_stop",
            requirement="TRN-062",
            field="policy",
        )
    if transition.policy is not None:
        _ids(transition, "policy")
    absorbed = transition.absorb_run_ids
    if not isinstance(absorbed, tuple):
        raise _invalid("absorb_run_ids", "absorbRunIds must be a tuple of non-empty strings")
    for run_id in absorbed:
        limits.check_text(run_id, "absorb_run_ids", "TRN-007")
    if len(set(absorbed)) != len(absorbed) or transition.run_id in absorbed:
        raise InvalidInputError(
            "absorbRunIds repeats a run or names the terminating run",
            requirement="TRN-064",
            field="absorb_run_ids",
        )
    return attrs.evolve(transition, message=_object(transition.message, "message"))


def _invalid(field: str, why: str) -> InvalidInputError:
    return InvalidInputError(why, requirement="TRN-007", field=field)


def _ids(transition: object, *names: str) -> None:
    # LIM-001, LIM-002: every id of a transition is bounded text of Unicode scalar values
    for name in names:
        limits.check_text(getattr(transition, name), name, "TRN-007")


def _natural(value: object, field: str, *, minimum: int = 0) -> int:
    return limits.check_integer(value, field, "TRN-007", minimum=minimum)


def _check_fence(fence: object) -> None:
    if not isinstance(fence, Fence):
        raise _invalid("fence", "a fenced transition carries a Fence")
    _ids(fence, "owner")
    _natural(fence.revision, "revision")
    _natural(fence.fencing_token, "fencing_token")


def _object(value: object, field: str) -> dict[str, JsonValue]:
    """A JSON object, copied through its canonical bytes so no caller object is kept."""
    if not isinstance(value, dict):
        raise _invalid(field, f"{field} must be a JSON object")
    try:
        encoded = codec.encode_payload(value)  # LIM-005 counted in the encoder's walk
    except NestingTooDeep:
        raise limits.too_deep(field) from None
    except CanonicalJsonError as error:
        limits.check_depth(value, field)  # LIM-005 first, as when it had a walk of its own
        raise _invalid(field, f"{field} is not canonical JSON: {error.message}") from error
    # LIM-004; the text is the encoder's own, so the seam's decoder reads it (CAN-010)
    copied = codec.decode_stored(limits.check_size(encoded, field).decode("utf-8"))
    assert isinstance(copied, dict)
    return copied
