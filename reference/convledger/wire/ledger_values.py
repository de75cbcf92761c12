"""Values on the wire of the ledger core (chapter ``wire.md``, WIR-008 .. WIR-014).

The part of :mod:`convledger.wire.values` every other part builds on:

* the failures of the mapping itself: :class:`Unencodable` (a Python value
  with no CBOR image) and :class:`ReplyError` (a reply not in the form this
  package writes, WIR-009), and the ``internal`` kind of a reply (WIR-008);
* a JSON value as its CBOR image (WIR-011);
* drafts, envelopes, pages and import reports (WIR-012, WIR-013);
* refusals, ``{kind, message, requirement?, details?}`` (WIR-008);
* :func:`reply_map` and :func:`reply_list`, the shape checks of every reply
  decoder.

Decoders of requests never validate; decoders of replies are strict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


DRAFT_MEMBERS = frozenset(
    {"eventId", "kind", "occurredAt", "payload", "schemaVersion", "ignorable"}
)
"""WIR-012, WIR-044: exactly the members of a draft map."""


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
    """The ``drafts`` argument as the store receives it (trace vectors may omit ``ignorable``)."""
    if isinstance(value, list):
        return [draft_in(item) for item in value]
    return value


def wire_drafts_in(value: object) -> object:
    """``drafts`` of an append request: a map without exactly the six members of a draft is no
    draft (null, refused by the store, WIR-012); no member is dropped or defaulted (WIR-044)."""
    if isinstance(value, list):
        return [draft_in(item) if not isinstance(item, dict) or set(item) == DRAFT_MEMBERS
                else None for item in value]
    return value


def envelope_out(envelope: Envelope) -> dict[str, Any]:
    """The ENV-001 wire object; ``ignorable`` only when true (WIR-012)."""
    return {key: value_out(item) for key, item in envelope.to_wire().items()}


_ENVELOPE_MEMBERS = frozenset(
    {"schemaVersion", "eventId", "conversationId", "seq", "kind", "occurredAt", "payload"}
)


def envelope_in(value: object) -> Envelope:
    """Read a reply's envelope exactly as sent; a malformed one is a :class:`ReplyError`."""
    fields = reply_map(value, "envelope")
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
    return tuple(envelope_in(item) for item in reply_list(value, "envelopes"))


def page_out(page: Page) -> dict[str, Any]:
    """``{items, nextSeq?}`` (WIR-013)."""
    result: dict[str, Any] = {"items": [envelope_out(item) for item in page.items]}
    if page.next_seq is not None:
        result["nextSeq"] = page.next_seq
    return result


def page_in(value: object) -> Page:
    """A read's page."""
    fields = reply_map(value, "page")
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
    fields = reply_map(value, "import report")
    try:
        return ImportReport(fields["conversationId"], fields["events"], fields["headSeq"])
    except KeyError as missing:
        raise ReplyError(f"an import report lacks {missing}") from None


# -- refusals (WIR-008) -----------------------------------------------------------------------


def error_out(error: LedgerError) -> dict[str, Any]:
    """``{kind, message, requirement, details}``; details carry each kind's members (WIR-025)."""
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
    fields = reply_map(value, "error")
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


# -- the shape of a reply (WIR-009) -------------------------------------------------------------


def reply_map(value: object, what: str) -> dict[str, Any]:
    """``value`` when it is a map; else a :class:`ReplyError` naming ``what`` (WIR-009)."""
    if not isinstance(value, dict):
        raise ReplyError(f"a {what} is a map, got {type(value).__name__}")
    return value


def reply_list(value: object, what: str) -> list[Any]:
    """``value`` when it is an array; else a :class:`ReplyError` naming ``what`` (WIR-009)."""
    if not isinstance(value, list):
        raise ReplyError(f"{what} are an array, got {type(value).__name__}")
    return value
