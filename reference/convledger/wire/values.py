"""Values on the wire (chapter ``wire.md``, WIR-010 .. WIR-015).

Both directions of every mapping between the store interface's Python values
and the CBOR data model live here, so the server (:mod:`convledger.wire.server`)
and the conformance suite's client proxy cannot disagree:

* a JSON value (payloads, transition inputs) travels as its CBOR image:
  objects as maps with text keys, arrays, text, booleans, null, integers as
  CBOR integers and every other number as a CBOR float (WIR-011);
* an envelope travels as its ENV-001 wire object, a draft as the same members
  without ``conversationId`` and ``seq`` and with ``ignorable`` always present
  (WIR-012);
* runtime records travel in the ``to_json`` wire forms of
  :mod:`convledger.runtime.records` (WIR-015);
* a refusal travels as ``{kind, message, requirement?, details?}`` (WIR-008).

Decoders of requests never validate: the store behind the server does, so an
ill-typed argument reaches it and is refused there exactly as in process.
Decoders of replies are strict: a reply that is not the form this module writes
raises :class:`ReplyError`, never a store error (WIR-009).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from convledger.envelope import Envelope, EventDraft
from convledger.errors import (
    ERROR_KINDS,
    ConflictError,
    DuplicateError,
    InvalidInputError,
    LedgerError,
    NotSupportedError,
    PurgedError,
    ReplayRefusedError,
)
from convledger.projections.definition import Checkpoint as ProjectionCheckpoint
from convledger.projections.definition import ProjectionDefinition, ProjectionStatus
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
from convledger.search.operations import Hit
from convledger.spills.objects import SpillMetadata
from convledger.store import ImportReport, Page

INTERNAL = "internal"
"""WIR-008: the kind of a reply for a failure that is not a refusal (a bug of the store)."""


class Unencodable(ValueError):
    """A Python value with no CBOR image under WIR-011 (a lone surrogate, a set, an object)."""


class ReplyError(ValueError):
    """A reply that is not the form WIR-010 .. WIR-015 prescribe."""


# -- JSON values (WIR-011) --------------------------------------------------------------------


MAX_DEPTH = 256
"""WIR-011: the deepest nesting of arrays and maps a value may have on the wire (CAN-016: >= 64)."""


def value_out(value: object, depth: int = 0) -> Any:
    """The CBOR image of a (possibly invalid) JSON value; :class:`Unencodable` if none exists.

    Mappings become maps (their keys as they are, so a non-string key reaches
    the store and is refused there), sequences arrays. NaN and the infinities
    travel as CBOR floats and integers of any size as CBOR integers or bignums:
    the receiving store refuses them. Nesting deeper than :data:`MAX_DEPTH`
    (a self-referencing value nests without end) has no image.
    """
    if value is None or isinstance(value, (bool, int, float, bytes)):
        return value
    if isinstance(value, str):
        return _text_out(value)
    if depth >= MAX_DEPTH and isinstance(value, (Mapping, Sequence)):
        raise Unencodable(f"a value nested deeper than {MAX_DEPTH} has no CBOR image (WIR-011)")
    if isinstance(value, Mapping):
        return {
            value_out(key, depth + 1): value_out(item, depth + 1) for key, item in value.items()
        }
    if isinstance(value, Sequence):
        return [value_out(item, depth + 1) for item in value]
    raise Unencodable(f"a {type(value).__name__} has no CBOR image (WIR-011)")


def _text_out(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Unencodable("a string with a lone surrogate has no CBOR image (WIR-011)") from None
    return value


# -- drafts and envelopes (WIR-012) -----------------------------------------------------------


def draft_out(draft: object) -> Any:
    """A draft map, or null for anything that is not an :class:`EventDraft` (WIR-012)."""
    if not isinstance(draft, EventDraft):
        return None
    return {
        "eventId": value_out(draft.event_id),
        "kind": value_out(draft.kind),
        "occurredAt": value_out(draft.occurred_at),
        "payload": value_out(draft.payload),
        "schemaVersion": value_out(draft.schema_version),
        "ignorable": value_out(draft.ignorable),
    }


def drafts_out(drafts: object) -> Any:
    """The ``drafts`` argument: an array of draft maps, or the value itself when not a list."""
    if isinstance(drafts, Sequence) and not isinstance(drafts, (str, bytes)):
        return [draft_out(item) for item in drafts]
    return value_out(drafts)


def draft_in(value: object) -> object:
    """The :class:`EventDraft` a draft map names, unvalidated (the store validates)."""
    if not isinstance(value, dict):
        return value
    return EventDraft(
        event_id=value.get("eventId"),  # type: ignore[arg-type]
        kind=value.get("kind"),  # type: ignore[arg-type]
        occurred_at=value.get("occurredAt"),  # type: ignore[arg-type]
        payload=value.get("payload"),
        schema_version=value.get("schemaVersion"),  # type: ignore[arg-type]
        ignorable=value.get("ignorable", False),
    )


def drafts_in(value: object) -> object:
    """The ``drafts`` argument as the store receives it."""
    if isinstance(value, list):
        return [draft_in(item) for item in value]
    return value


def envelope_out(envelope: Envelope) -> dict[str, Any]:
    """The ENV-001 wire object; ``ignorable`` only when true (WIR-012)."""
    return {key: value_out(item) for key, item in envelope.to_wire().items()}


_ENVELOPE_MEMBERS = frozenset(
    {"schemaVersion", "eventId", "conversationId", "seq", "kind", "occurredAt", "payload"}
)


def envelope_in(value: object) -> Envelope:
    """Read a reply's envelope exactly as sent; a malformed one is a :class:`ReplyError`."""
    fields = _map(value, "envelope")
    members = set(fields)
    if not _ENVELOPE_MEMBERS <= members <= _ENVELOPE_MEMBERS | {"ignorable"}:
        raise ReplyError(f"an envelope has the members {sorted(members)}")
    if "ignorable" in fields and fields["ignorable"] is not True:
        raise ReplyError(f"an envelope's ignorable is {fields['ignorable']!r}, not true")
    return Envelope(
        schema_version=fields["schemaVersion"],
        event_id=fields["eventId"],
        conversation_id=fields["conversationId"],
        seq=fields["seq"],
        kind=fields["kind"],
        occurred_at=fields["occurredAt"],
        payload=fields["payload"],
        ignorable="ignorable" in fields,
    )


def envelopes_in(value: object) -> tuple[Envelope, ...]:
    """An array of envelopes."""
    return tuple(envelope_in(item) for item in _list(value, "envelopes"))


def page_out(page: Page) -> dict[str, Any]:
    """``{items, nextSeq?}`` (WIR-013)."""
    result: dict[str, Any] = {"items": [envelope_out(item) for item in page.items]}
    if page.next_seq is not None:
        result["nextSeq"] = page.next_seq
    return result


def page_in(value: object) -> Page:
    """A read's page."""
    fields = _map(value, "page")
    if set(fields) - {"items", "nextSeq"} or "items" not in fields:
        raise ReplyError(f"a page has the members {sorted(fields)}")
    return Page(envelopes_in(fields["items"]), next_seq=fields.get("nextSeq"))


def import_report_out(report: ImportReport) -> dict[str, Any]:
    """``{conversationId, events, headSeq}`` (WIR-013)."""
    return {
        "conversationId": report.conversation_id,
        "events": report.events,
        "headSeq": report.head_seq,
    }


def import_report_in(value: object) -> ImportReport:
    """An import's report."""
    fields = _map(value, "import report")
    try:
        return ImportReport(fields["conversationId"], fields["events"], fields["headSeq"])
    except KeyError as missing:
        raise ReplyError(f"an import report lacks {missing}") from None


# -- runtime values (WIR-015) -----------------------------------------------------------------


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
        result["admitted"] = {
            "inputId": outcome.admitted.input_id,
            "runId": outcome.admitted.run_id,
            "assistantMessageId": outcome.admitted.assistant_message_id,
        }
    if outcome.event is not None:
        result["event"] = envelope_out(outcome.event)
    return result


def outcome_in(value: object) -> Outcome:
    """A transition's outcome."""
    fields = _map(value, "outcome")
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
    runs = tuple(run_in(item) for item in _list(value, "runs"))
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
    fields = _map(value, "snapshot")
    try:
        return Snapshot(
            Head.from_json(fields["head"]),
            runs_in(fields["activeRuns"]),
            tuple(Message.from_json(item) for item in _list(fields["messages"], "messages")),
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
    fields = _map(value, "recovery page")
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


# -- refusals (WIR-008) -----------------------------------------------------------------------


def error_out(error: LedgerError) -> dict[str, Any]:
    """``{kind, message, requirement, details}``; details carry each kind's extra members."""
    details: dict[str, Any] = {}
    if isinstance(error, ConflictError) and error.actual is not None:
        details["actual"] = error.actual
    elif isinstance(error, DuplicateError):
        details["identity"] = value_out(error.identity)
    elif isinstance(error, InvalidInputError):
        details["field"] = value_out(error.field)
    elif isinstance(error, NotSupportedError):
        details["capability"] = error.capability
    elif isinstance(error, PurgedError):
        details["conversationId"] = value_out(error.conversation_id)
    elif isinstance(error, ReplayRefusedError):
        details.update(
            conversationId=error.conversation_id, seq=error.seq, eventId=error.event_id,
            schemaVersion=error.schema_version, eventKind=error.event_kind,
        )
    try:
        result = {
            "kind": error.kind,
            "message": _text_or_repr(error.message),
            "requirement": _text_or_repr(error.requirement),
            "details": value_out(details),
        }
    except Unencodable:
        result = {"kind": error.kind, "message": repr(error.message)}
    return result


def _text_or_repr(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("ascii")
    return text


def error_in(value: object) -> LedgerError:
    """The typed error a refusal names; a kind outside ERR-001 is a :class:`ReplyError`."""
    fields = _map(value, "error")
    kind = fields.get("kind")
    message = fields.get("message", "")
    requirement = fields.get("requirement") or "WIR-008"
    details = fields.get("details") or {}
    if not isinstance(kind, str) or kind not in ERROR_KINDS:
        raise ReplyError(f"the server failed with kind {kind!r}: {message}")
    if not isinstance(message, str) or not isinstance(requirement, str):
        raise ReplyError("an error's message and requirement are text")
    if not isinstance(details, dict):
        raise ReplyError("an error's details are a map")
    get = details.get
    cls = ERROR_KINDS[kind]
    if cls is ConflictError:
        return ConflictError(message, requirement=requirement, actual=get("actual"))
    if cls is DuplicateError:
        return DuplicateError(message, requirement=requirement, identity=get("identity", ""))
    if cls is InvalidInputError:
        return InvalidInputError(message, requirement=requirement, field=get("field", ""))
    if cls is NotSupportedError:
        return NotSupportedError(message, requirement=requirement,
                                 capability=get("capability", ""))
    if cls is PurgedError:
        return PurgedError(message, requirement=requirement,
                           conversation_id=get("conversationId", ""))
    if cls is ReplayRefusedError:
        return ReplayRefusedError(
            message, requirement=requirement, conversation_id=get("conversationId", ""),
            seq=get("seq", 0), event_id=get("eventId", ""),
            schema_version=get("schemaVersion", 0), event_kind=get("eventKind", ""),
        )
    return cls(message, requirement=requirement)


def _map(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ReplyError(f"a {what} is a map, got {type(value).__name__}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ReplyError(f"{what} are an array, got {type(value).__name__}")
    return value


# -- spills and search (WIR-016, WIR-017) -----------------------------------------------------


def metadata_out(metadata: SpillMetadata) -> dict[str, Any]:
    """A spill's metadata as its SPL-040 companion entry (WIR-016)."""
    return {key: value_out(item) for key, item in metadata.to_json().items()}


def metadata_in(value: object) -> SpillMetadata:
    """The metadata ``putSpill`` answered."""
    fields = _map(value, "spill metadata")
    try:
        return SpillMetadata(
            reference=fields["reference"],
            media_type=fields["mediaType"],
            size=fields["bytes"],
            sha256=fields["sha256"],
            created_seq=fields["createdSeq"],
            operation=fields["operation"],
        )
    except KeyError as missing:
        raise ReplyError(f"spill metadata lacks {missing}") from None


def bytes_in(value: object, what: str) -> bytes:
    """A byte string of a reply (WIR-016)."""
    if not isinstance(value, bytes):
        raise ReplyError(f"{what} answered a {type(value).__name__}, not a byte string")
    return value


def hit_out(hit: Hit) -> dict[str, Any]:
    """``{conversationId, seq, occurredAt, snippet}`` (WIR-017)."""
    return {
        "conversationId": value_out(hit.conversation_id),
        "seq": hit.seq,
        "occurredAt": value_out(hit.occurred_at),
        "snippet": value_out(hit.snippet),
    }


def hits_in(value: object) -> tuple[Hit, ...]:
    """The hits of a search."""
    found: list[Hit] = []
    for item in _list(value, "hits"):
        fields = _map(item, "hit")
        if set(fields) != {"conversationId", "seq", "occurredAt", "snippet"}:
            raise ReplyError(f"a hit has the members {sorted(fields)}")
        found.append(
            Hit(fields["conversationId"], fields["seq"], fields["occurredAt"], fields["snippet"])
        )
    return tuple(found)


# -- projections (WIR-018) --------------------------------------------------------------------

DEFINITION_MEMBERS = frozenset(
    {"name", "version", "stateSchema", "initialState", "fold", "kinds"}
)
"""WIR-018: the members of a definition on the wire."""


def definition_out(definition: object, fold: str | None) -> Any:
    """``{name, version, stateSchema, initialState, fold, kinds}`` with the fold's name (WIR-018).

    ``fold`` is the name of the definition's fold (None for a fold that is not
    callable: it travels as null and the store refuses it). Anything that is
    not a :class:`ProjectionDefinition` travels as its CBOR image, and is refused.
    """
    if not isinstance(definition, ProjectionDefinition):
        return value_out(definition)
    kinds: object = definition.kinds
    if isinstance(kinds, frozenset) and all(
        isinstance(pair, tuple) and len(pair) == 2 for pair in kinds
    ):
        kinds = sorted([list(pair) for pair in kinds], key=repr)
    return {
        "name": value_out(definition.name),
        "version": value_out(definition.version),
        "stateSchema": value_out(definition.state_schema),
        "initialState": value_out(definition.initial_state),
        "fold": fold,
        "kinds": value_out(kinds),
    }


def definition_in(value: object, resolve: Callable[[object, object], object]) -> object:
    """The definition a request names, its fold resolved by name; anything else as it came.

    Built with the constructor, so a malformed one is refused with kind
    ``invalid_input`` (PRJ-001, PRJ-002); an unknown fold name resolves to
    None, which is not callable and refused the same way (WIR-018).
    """
    if not isinstance(value, dict) or set(value) != DEFINITION_MEMBERS:
        return value
    kinds = value["kinds"]
    if isinstance(kinds, list) and all(
        isinstance(pair, list) and len(pair) == 2 for pair in kinds
    ):
        # an unhashable member stays a list: refused by the definition's own check
        with contextlib.suppress(TypeError):
            kinds = frozenset(tuple(pair) for pair in kinds)
    return ProjectionDefinition(
        name=value["name"],
        version=value["version"],
        state_schema=value["stateSchema"],
        initial_state=value["initialState"],
        fold=resolve(value["fold"], value["version"]),  # type: ignore[arg-type]
        kinds=kinds,
    )


def checkpoint_out(checkpoint: ProjectionCheckpoint | None) -> Any:
    """``{name, version, uptoSeq, state}`` or null (WIR-018)."""
    return None if checkpoint is None else value_out(checkpoint.to_json())


def checkpoint_in(value: object) -> ProjectionCheckpoint | None:
    """A checkpoint or None."""
    if value is None:
        return None
    fields = _map(value, "checkpoint")
    if set(fields) != {"name", "version", "uptoSeq", "state"}:
        raise ReplyError(f"a checkpoint has the members {sorted(fields)}")
    return ProjectionCheckpoint(
        fields["name"], fields["version"], fields["uptoSeq"], fields["state"]
    )


def status_out(status: ProjectionStatus) -> dict[str, Any]:
    """``{uptoSeq, head, version}``, version null without a checkpoint (WIR-018)."""
    return {"uptoSeq": status.upto_seq, "head": status.head, "version": status.version}


def status_in(value: object) -> ProjectionStatus:
    """A projection status."""
    fields = _map(value, "projection status")
    if set(fields) != {"uptoSeq", "head", "version"}:
        raise ReplyError(f"a projection status has the members {sorted(fields)}")
    return ProjectionStatus(fields["uptoSeq"], fields["head"], fields["version"])
