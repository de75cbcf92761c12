"""Conversation archives (chapter ``archive.md``, ids ARC-*).

An archive is the canonical JSON (CAN-001) of one object::

    {"companions": {}, "conversationId": "...", "events": [envelope, ...],
     "format": "convledger.archive", "formatVersion": 1}

``events`` holds the conversation's whole ledger in seq order. ``companions``
is where later chapters put the rows kept beside the ledger: ``runtime``, the
operational state of the runtime (chapter ``transitions.md``, TRN-103),
present exactly when the ledger has runtime events and checked against the
state those events rebuild; ``projections``, the checkpoints (PRJ-040), checked
against the fold of the events; ``spills``, the metadata of live spill
objects (SPL-040), checked against their ``spill/created`` events. Each is
present only when it has something to say; otherwise ``companions`` is the
empty object.

:func:`inspect_archive` finds every problem a store-independent reader can
see, so ``convledger verify`` can report all of them at once; stores add the
two checks that need their contents (ARC-009, ARC-010) on import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from convledger import canonical, codec, limits
from convledger.archive_format import FORMAT, FORMAT_VERSION
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, from_wire_encoded
from convledger.errors import (
    InvalidInputError,
    LedgerError,
    NotSupportedError,
    ReplayRefusedError,
)
from convledger.kinds import KindRegistry
from convledger.projections.companion import projection_problems
from convledger.replay import Verdict, admit
from convledger.runtime.companion import companion_problems
from convledger.spills.companion import spill_problems

MEMBERS = frozenset({"format", "formatVersion", "conversationId", "events", "companions"})
KNOWN_COMPANIONS: frozenset[str] = frozenset({"runtime", "projections", "spills"})
"""Companion members this version understands; later chapters add to it (ARC-011)."""


@attrs.frozen
class Archive:
    """A decoded, valid archive."""

    conversation_id: str
    events: tuple[Envelope, ...]
    companions: Mapping[str, JsonValue] = attrs.field(factory=dict)
    objects: Mapping[str, bytes] = attrs.field(factory=dict)
    """Spill bytes by reference; only a bundle carries them (SPL-050)."""
    payload_texts: tuple[str, ...] = attrs.field(default=(), eq=False, repr=False)
    """Empty, or the canonical text of every event's payload in order (CAN-001), as decoding
    the archive encoded it for ENV-009: a store writes them as they are (SQL-005) instead of
    encoding each payload again. Every archive :func:`inspect_archive` accepts has them: its
    bytes are canonical (ARC-003), so each payload's object members are also in canonical
    order (CAN-002), the order of its text. An archive built in memory (:func:`archive_of`)
    has none. Not part of equality."""


@attrs.frozen
class Problem:
    """One thing wrong with an archive: the error a store would raise for it."""

    error: LedgerError
    where: str
    """The JSON Pointer (RFC 6901) of the offending member, or ``(document)``/``(input)``."""

    @property
    def kind(self) -> str:
        """The normative error kind (ERR-001)."""
        return self.error.kind

    @property
    def requirement(self) -> str:
        """The spec id that the archive breaks."""
        return self.error.requirement


def encode_archive(archive: Archive) -> bytes:
    """The canonical bytes of an archive (ARC-001, ARC-004)."""
    return codec.encode(
        {
            "format": FORMAT,
            "formatVersion": FORMAT_VERSION,
            "conversationId": archive.conversation_id,
            "events": [envelope.to_wire() for envelope in archive.events],
            "companions": archive.companions,
        }
    )


def decode_archive(
    data: bytes, registry: KindRegistry, unjudged: frozenset[str] = frozenset()
) -> Archive:
    """Return the archive in ``data`` or raise the error of its first problem.

    ``unjudged`` names the companions whose capability the importing store does not
    declare: their shapes are not judged here, the store refuses them (ERR-012).
    """
    archive, problems = inspect_archive(data, registry, unjudged)
    if problems:
        raise problems[0].error
    assert archive is not None
    return archive


def inspect_archive(
    data: bytes, registry: KindRegistry, unjudged: frozenset[str] = frozenset()
) -> tuple[Archive | None, list[Problem]]:
    """Check ``data`` against every store-independent archive rule; collect all problems.

    An archive of another ``formatVersion`` is reported as that one problem
    (``not_supported``), since the rules of that version are unknown here
    (ARC-002). Otherwise every problem found is reported (ARC-015): the bytes
    (ARC-003), the members (ARC-002, ARC-005, ARC-011), and each event (chapter
    ENV, ARC-006 .. ARC-008, ARC-012), with one ARC-007 problem per break in
    the sequence of seqs.
    """
    if not isinstance(data, bytes):
        error = InvalidInputError("an archive is bytes", requirement="ARC-003")
        return None, [Problem(error, "(input)")]
    # The fast code decodes canonical bytes in one pass and proves them canonical by encoding
    # them again (codec.decode_canonical); anything else, or the clear code, decodes strictly.
    document = codec.decode_canonical(data)
    canonical_shown = document is not None
    if not canonical_shown:
        try:
            document = canonical.decode(data)
        except LedgerError as error:
            return None, [Problem(error, "(document)")]
    if isinstance(document, dict):
        unsupported = _unsupported_version(document)
        if unsupported is not None:
            # The rules of another format version are unknown here, so nothing
            # else can be judged (ARC-002).
            return None, [unsupported]
    problems: list[Problem] = []
    if not canonical_shown and codec.encode(document) != data:
        problems.append(
            Problem(
                InvalidInputError(
                    "archive bytes are not canonical JSON, so they could not re-export identically",
                    requirement="ARC-003",
                ),
                "(document)",
            )
        )
    if not isinstance(document, dict):
        problems.append(
            Problem(
                InvalidInputError("an archive is a JSON object", requirement="ARC-002"),
                "(document)",
            )
        )
        return None, problems
    problems.extend(_check_members(document))
    conversation_id = document.get("conversationId")
    texts: list[str] = []
    events = _check_events(document, conversation_id, registry, problems, texts)
    if problems:
        return None, problems
    assert isinstance(conversation_id, str)
    companions = document["companions"]
    assert isinstance(companions, dict)
    # ERR-012: a companion the store cannot serve is refused by the store (not_supported),
    # whatever it holds; ``unjudged`` names them (empty for ``convledger verify``, ARC-015)
    if "runtime" not in unjudged or "runtime" not in companions:  # TRN-104: events without it
        problems.extend(
            Problem(found, _pointer("companions", "runtime"))
            for found in companion_problems(conversation_id, events, companions)
        )
    if "projections" not in unjudged or "projections" not in companions:
        problems.extend(
            Problem(found, _pointer("companions", "projections"))
            for found in projection_problems(events, companions, registry, None)
        )
    if "spills" not in unjudged or "spills" not in companions:
        problems.extend(
            Problem(found, _pointer("companions", "spills"))
            for found in spill_problems(events, companions)
        )
    if problems:
        return None, problems
    # No ARC-003 problem: the bytes are canonical, so each decoded object keeps its text's
    # (canonical) member order, and each payload text is the payload's text in the archive.
    return Archive(conversation_id, tuple(events), companions, payload_texts=tuple(texts)), []


def _unsupported_version(document: dict[str, object]) -> Problem | None:
    """ARC-002, ARC-018: an integer formatVersion other than 1 is not supported.

    ERR-011's step 2 comes before every rule of step 3, ``format`` included; a
    ``formatVersion`` that is not an integer (null, text, ``1.0``) is not another
    version but a member without its value (:func:`_check_members`).
    """
    version = document.get("formatVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version == FORMAT_VERSION:
        return None
    return Problem(
        NotSupportedError(
            f"archive formatVersion {limits.shown(version)} is not supported",
            requirement="ARC-002",
            capability="archive",
        ),
        "/formatVersion",
    )


def _check_members(document: dict[str, object]) -> list[Problem]:
    problems = []
    for name in sorted(set(document) - MEMBERS):
        problems.append(_invalid(f"unknown archive member {name!r}", "ARC-002", _pointer(name)))
    for name in sorted(MEMBERS - set(document)):
        problems.append(_invalid(f"missing archive member {name!r}", "ARC-002", _pointer(name)))
    version = document.get("formatVersion")
    if "formatVersion" in document and (type(version) is not int or version != FORMAT_VERSION):
        # ARC-018: not an integer (an integer other than 1 was refused before, step 2)
        problems.append(
            _invalid("formatVersion must be the integer 1", "ARC-018", "/formatVersion")
        )
    if "format" in document and document["format"] != FORMAT:
        problems.append(_invalid(f"format must be {FORMAT!r}", "ARC-002", "/format"))
    conversation_id = document.get("conversationId")
    if "conversationId" in document and (
        not isinstance(conversation_id, str) or not conversation_id
    ):
        problems.append(
            _invalid("conversationId must be a non-empty string", "ARC-002", "/conversationId")
        )
    companions = document.get("companions")
    if "companions" in document:
        if not isinstance(companions, dict):
            problems.append(_invalid("companions must be an object", "ARC-011", "/companions"))
        else:
            for name in sorted(set(companions) - KNOWN_COMPANIONS):
                problems.append(
                    _invalid(
                        f"unknown companion {name!r}", "ARC-011", _pointer("companions", name)
                    )
                )
    return problems


def _check_events(
    document: dict[str, object],
    conversation_id: object,
    registry: KindRegistry,
    problems: list[Problem],
    texts: list[str],
) -> list[Envelope]:
    """The decoded events; ``problems`` gets each one's, ``texts`` each payload's canonical
    text."""
    if "events" not in document:
        return []  # reported as a missing member (ARC-002)
    events = document["events"]
    if not isinstance(events, list) or not events:
        problems.append(_invalid("events must be a non-empty array", "ARC-005", "/events"))
        return []
    decoded: list[Envelope] = []
    seen: dict[str, int] = {}
    previous_seq = 0
    for index, wire in enumerate(events):
        where = _pointer("events", str(index))
        try:
            envelope, encoded = from_wire_encoded(wire)
        except LedgerError as error:
            field = error.field if isinstance(error, InvalidInputError) else ""
            problems.append(Problem(error, where + _pointer(field) if field else where))
            previous_seq += 1  # judge the next event as if this one held its place
            continue
        decoded.append(envelope)
        texts.append(encoded.decode("utf-8"))
        problems.extend(
            _check_event(envelope, index, previous_seq, conversation_id, registry, seen, where)
        )
        previous_seq = envelope.seq
    return decoded


def _check_event(
    envelope: Envelope,
    index: int,
    previous_seq: int,
    conversation_id: object,
    registry: KindRegistry,
    seen: dict[str, int],
    where: str,
) -> list[Problem]:
    """ARC-006, ARC-007, ARC-008 and the replay gate (ARC-012) for one decoded event."""
    problems = []
    if isinstance(conversation_id, str) and envelope.conversation_id != conversation_id:
        problems.append(
            _invalid(
                f"event belongs to conversation {envelope.conversation_id!r}, "
                f"not {conversation_id!r}",
                "ARC-006",
                where + "/conversationId",
            )
        )
    if envelope.seq != previous_seq + 1:
        # One problem per break in the sequence, not one per event after a gap.
        problems.append(
            _invalid(
                f"seq {envelope.seq} at position {index + 1} follows seq {previous_seq}; "
                "seqs must be exactly 1..n",
                "ARC-007",
                where + "/seq",
            )
        )
    if envelope.event_id in seen:
        problems.append(
            _invalid(
                f"eventId {envelope.event_id!r} repeats position {seen[envelope.event_id]}",
                "ARC-008",
                where + "/eventId",
            )
        )
    else:
        seen[envelope.event_id] = index + 1
    try:
        if admit(envelope, registry) is Verdict.ACCEPTED:  # RPL-005: import passes the gate
            # the definition's refusals, through the compiled validator (KND-003)
            registry.check_appended_payload(
                envelope.kind, envelope.schema_version, envelope.payload
            )
    except ReplayRefusedError as error:
        problems.append(Problem(error, where + "/kind"))
    except LedgerError as error:
        problems.append(Problem(error, where + "/payload"))
    return problems


def _pointer(*names: str) -> str:
    """The JSON Pointer (RFC 6901) of a member path, for reports."""
    return "".join("/" + name.replace("~", "~0").replace("/", "~1") for name in names)


def _invalid(message: str, requirement: str, where: str) -> Problem:
    return Problem(InvalidInputError(message, requirement=requirement, field=where), where)


def archive_of(
    conversation_id: str,
    events: Sequence[Envelope],
    companions: Mapping[str, JsonValue] | None = None,
) -> Archive:
    """An archive of ``events`` and, when given, the companions stored beside them."""
    return Archive(conversation_id, tuple(events), dict(companions or {}))
