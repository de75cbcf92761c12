"""The ``spills`` companion of an archive (SPL-040 .. SPL-044).

An archive lists the conversation's live spill objects, ``[{reference,
mediaType, bytes, sha256, createdSeq, operation}, ...]`` by reference in
code-point order, present only when there is at least one. It carries their
metadata, never their bytes: the bytes travel in a bundle (``bundle.py``).
Each entry must be what the ledger says: the event at ``createdSeq`` is the
``spill/created`` of that reference with the same size, hash and media type,
and no later ``spill/created`` or ``spill/deleted`` of the reference follows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import IntegrityError, InvalidInputError, LedgerError
from convledger.spills.objects import (
    CREATED,
    DELETED,
    MEDIA_TYPE,
    SpillMetadata,
)

COMPANION = "spills"
_MEMBERS = frozenset({"reference", "mediaType", "bytes", "sha256", "createdSeq", "operation"})


def spills_json(objects: Sequence[SpillMetadata]) -> list[JsonValue]:
    """SPL-040: the companion value, by reference in code-point order."""
    ordered = sorted(objects, key=lambda m: m.reference.encode("utf-8", "surrogatepass"))
    return [metadata.to_json() for metadata in ordered]


def parse_spills(value: JsonValue) -> list[SpillMetadata]:
    """SPL-041: the entries of a companion value, or ``invalid_input`` for its shape."""
    if not isinstance(value, list) or not value:
        raise _shape("the spills companion is a non-empty array")
    parsed = [_entry(item) for item in value]
    if spills_json(parsed) != value or len({m.reference for m in parsed}) != len(parsed):
        raise _shape("spill references are unique and in code-point order")
    return parsed


def _entry(item: JsonValue) -> SpillMetadata:
    if not isinstance(item, dict) or set(item) != _MEMBERS:
        raise _shape("a spill entry is exactly {reference, mediaType, bytes, sha256, "
                     "createdSeq, operation}")
    reference, media_type, size = item["reference"], item["mediaType"], item["bytes"]
    sha256, seq, operation = item["sha256"], item["createdSeq"], item["operation"]
    if not isinstance(reference, str) or not reference:
        raise _shape("reference is a non-empty string")
    if not isinstance(media_type, str) or MEDIA_TYPE.fullmatch(media_type) is None:
        raise _shape("mediaType is a media type")
    for number, low in ((size, 0), (seq, 1)):
        if isinstance(number, bool) or not isinstance(number, int) or number < low:
            raise _shape("bytes and createdSeq are integers")
    if not isinstance(sha256, str) or len(sha256) != 64 or set(sha256) - set("0123456789abcdef"):
        raise _shape("sha256 is 64 lower-case hex digits")
    if (
        not isinstance(operation, dict)
        or set(operation) != {"operationId", "authorization"}
        or not isinstance(operation["operationId"], str)
        or not operation["operationId"]
        or not isinstance(operation["authorization"], dict)
    ):
        raise _shape("operation is {operationId, authorization}")
    assert isinstance(size, int) and isinstance(seq, int)
    return SpillMetadata(reference, media_type, size, sha256, seq, operation)


def spill_problems(
    events: Sequence[Envelope], companions: Mapping[str, JsonValue]
) -> list[LedgerError]:
    """SPL-041, SPL-043: every reason the companion disagrees with the ledger."""
    if COMPANION not in companions:
        return []
    try:
        entries = parse_spills(companions[COMPANION])
    except InvalidInputError as error:
        return [error]
    live = live_spills(events)
    problems: list[LedgerError] = []
    for entry in entries:
        created = live.get(entry.reference)
        if created is None or created.seq != entry.created_seq or created.payload != {
            "reference": entry.reference,
            "bytes": entry.size,
            "sha256": entry.sha256,
            "mediaType": entry.media_type,
        }:
            problems.append(IntegrityError(
                f"spill {entry.reference!r} is not the live spill/created at seq "
                f"{entry.created_seq} of its ledger",
                requirement="SPL-043",
            ))
    return problems


def live_spills(events: Sequence[Envelope]) -> dict[str, Envelope]:
    """The last ``spill/created`` of each reference that no ``spill/deleted`` followed."""
    live: dict[str, Envelope] = {}
    for envelope in events:
        payload = envelope.payload
        if envelope.schema_version != 1 or not isinstance(payload, dict):
            continue
        reference = payload.get("reference")
        if not isinstance(reference, str):
            continue
        if envelope.kind == CREATED:
            live[reference] = envelope
        elif envelope.kind == DELETED:
            live.pop(reference, None)
    return live


def _shape(message: str) -> InvalidInputError:
    return InvalidInputError(message, requirement="SPL-041", field="companions")
