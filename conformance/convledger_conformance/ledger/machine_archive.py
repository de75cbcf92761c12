"""The archive rules of the ledger state machine: export, import and re-export.

Exports must equal the model's bytes and each other (ARC-001, ARC-004,
ARC-005); an archive, valid or with one fault, imports or is refused as the
model says (ARC-002 .. ARC-013, ARC-016); envelopes of unknown ignorable pairs
import and re-export byte for byte (KND-004, RPL-002, ENV-010).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from convledger import canonical
from convledger.envelope import EventDraft
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger import strategies_archive as arc
from convledger_conformance.ledger import strategies_kinds as knd
from convledger_conformance.ledger.machine_core import (
    CONVERSATIONS,
    STORED_IDS,
    LedgerMachineCore,
)
from convledger_conformance.ledger.machine_verdicts import UNEXPECTED_REFUSAL, Raised, fail
from convledger_conformance.ledger.model import Refusal, envelope_bytes, read_whole

UnknownEvent = tuple[str, tuple[str, int, object], str]
"""(eventId, (kind, schemaVersion, payload), occurredAt) of an envelope of an unregistered pair."""
_UNKNOWN_EVENTS: Final = st.tuples(
    gen.identifiers(), knd.unknown_ignorable_events(), gen.occurred_at()
)


class LedgerArchiveRules(LedgerMachineCore):
    """The rules that export and import (ARC-001 .. ARC-016, KND-004, RPL-002, ENV-010)."""

    @rule(conversation=CONVERSATIONS)
    def export(self, conversation: str) -> None:
        """ARC-001, ARC-004, ARC-005: exports equal the model's bytes and each other."""
        expected = self.model.expect_export(conversation)
        call = lambda: self.store.export_conversation(conversation)  # noqa: E731
        if isinstance(expected, Refusal):
            self._refused(call, expected, [conversation], "export", atomic=())
            return
        first = self._attempt(call, crash=("ARC-001",))
        if isinstance(first, Raised):
            fail(("ARC-001",), f"export of {conversation!r} refused: {first.error!r}")
        if first != expected:
            fail(("ARC-001",), f"export of {conversation!r} is {first!r}, expected {expected!r}")
        if self.store.export_conversation(conversation) != first:
            fail(("ARC-004",), f"two exports of unchanged {conversation!r} differ")

    @precondition(lambda self: bool(self.model.conversations()))
    @rule(conversation=CONVERSATIONS)
    def import_export_elsewhere(self, conversation: str) -> None:
        """ARC-004, ARC-016: an export imports into a fresh store and re-exports the same."""
        data = self.model.expect_export(conversation)
        if isinstance(data, Refusal):
            return
        fresh = type(self).factory()
        try:
            outcome = self._attempt(lambda: fresh.import_conversation(data), crash=("ARC-004",))
            if isinstance(outcome, Raised):
                blame = UNEXPECTED_REFUSAL["import"].get(outcome.error.kind, ("ERR-001",))
                fail((*blame, "ARC-004"), f"an export did not import: {outcome.error!r}")
            again = fresh.export_conversation(conversation)
            if again != data:
                fail(("ARC-004",), f"re-export {again!r} differs from imported {data!r}")
            copied = tuple(envelope_bytes(e) for e in read_whole(fresh, conversation))
            if copied != self.model.events(conversation):
                fail(("ARC-016",), f"imported envelopes {copied!r} differ from the archive's")
        finally:
            fresh.close()
        self._import(data, [conversation])

    @rule(
        target=CONVERSATIONS,
        conversation=gen.identifiers(),
        drafts=gen.draft_batches(),
        fault=st.none() | st.sampled_from(sorted(arc.ARCHIVE_FAULTS)),
    )
    def import_archive(self, conversation: str, drafts: list[EventDraft], fault: str | None) -> str:
        """ARC-002 .. ARC-013: an archive, valid or with one fault, imported into this store."""
        document = arc.document_of(conversation, arc.placed(conversation, drafts))
        data = arc.ARCHIVE_FAULTS[fault].make(document) if fault else canonical.encode(document)
        self.known.add(conversation)
        self._import(data, [conversation, f"{conversation}/other"])
        return conversation

    @rule(existing=STORED_IDS, conversation=gen.identifiers(), drafts=gen.draft_batches())
    def import_stored_event_id(
        self, existing: str, conversation: str, drafts: list[EventDraft]
    ) -> None:
        """ARC-010: an archive holding an eventId the store has is refused as ``duplicate``."""
        batch = [*drafts[:-1], attrs.evolve(drafts[-1], event_id=existing)]
        self._import(arc.archive_of_wires(conversation, arc.placed(conversation, batch)),
                     [conversation])

    @rule(conversation=CONVERSATIONS, drafts=gen.draft_batches())
    def import_into_conversation(self, conversation: str, drafts: list[EventDraft]) -> None:
        """ARC-009: import into a conversation with events is refused as ``conflict``."""
        self._import(arc.archive_of_wires(conversation, arc.placed(conversation, drafts)),
                     [conversation])

    @rule(
        target=CONVERSATIONS,
        conversation=gen.identifiers(),
        drafts=gen.draft_batches(min_size=0),
        unknown=st.lists(_UNKNOWN_EVENTS, min_size=1, max_size=3, unique_by=lambda item: item[0]),
        last=st.booleans(),
    )
    def import_ignorable(
        self, conversation: str, drafts: list[EventDraft], unknown: list[UnknownEvent],
        last: bool,
    ) -> str:
        """KND-004, RPL-002: unknown ignorable envelopes import and re-export byte for byte.

        One stands at seq 1; with ``last`` one also stands at the last seq (issue 20).
        """
        self.known.add(conversation)
        self._import(arc.archive_of_wires(conversation,
                                          _mixed(conversation, drafts, unknown, last=last)),
                     [conversation])
        return conversation

    @rule(
        target=CONVERSATIONS,
        conversation=gen.identifiers(),
        drafts=gen.draft_batches(),
        unknown=st.lists(_UNKNOWN_EVENTS, max_size=1),
        position=st.integers(-1, 4),
        member=st.sampled_from(sorted(knd.IGNORABLE_MEMBERS)),
    )
    def import_ignorable_member(
        self,
        conversation: str,
        drafts: list[EventDraft],
        unknown: list[UnknownEvent],
        position: int,
        member: str,
    ) -> str:
        """ENV-010: an archived ``ignorable`` is ``true`` or absent; any other value is refused.

        One envelope's member is changed to ``member`` (``position`` -1: the last one, issue
        20); without ``true``, an envelope of an unregistered pair is refused by the replay gate
        (RPL-003).
        """
        mixed = _mixed(conversation, drafts, unknown)
        knd.IGNORABLE_MEMBERS[member](mixed[position % len(mixed)])
        self.known.add(conversation)
        self._import(arc.archive_of_wires(conversation, mixed), [conversation])
        return conversation

    def _import(self, data: object, touched: list[str]) -> None:
        expected = self.model.expect_import(data)
        call = lambda: self.store.import_conversation(data)  # type: ignore[arg-type]  # noqa: E731
        if isinstance(expected, Refusal):
            self._refused(call, expected, touched, "import", atomic=("ARC-013",))
            return
        outcome = self._attempt(call, crash=("ARC-004",))
        if isinstance(outcome, Raised):
            blame = UNEXPECTED_REFUSAL["import"].get(outcome.error.kind, ("ERR-001",))
            fail(blame, f"import of a valid archive refused: {outcome.error!r}")
        conversation, events = expected
        self.model.commit(conversation, events)
        self.dirty.update(touched)
        self.known.add(conversation)
        unknown = ("KND-004", "RPL-002") if self._has_unknown_kinds(events) else ()
        stored = tuple(envelope_bytes(e) for e in read_whole(self.store, conversation))
        if stored != events:
            fail(("ARC-016", *unknown), f"imported envelopes read back as {stored!r}, "
                 f"imported {events!r}")
        exported = self.store.export_conversation(conversation)
        if exported != data:
            fail(("ARC-004", "ARC-001"), f"export after import is {exported!r}, imported {data!r}")

    def _has_unknown_kinds(self, events: Iterable[bytes]) -> bool:
        """Whether some envelope is of a pair the registry does not hold (KND-004)."""
        registry = self.model.registry
        for encoded in events:
            wire = canonical.decode(encoded)
            assert isinstance(wire, dict)
            if not registry.knows(wire["kind"], wire["schemaVersion"]):
                return True
        return False


def _mixed(
    conversation: str, drafts: list[EventDraft], unknown: list[UnknownEvent], *,
    last: bool = False,
) -> list[dict[str, object]]:
    """Wire envelopes of ``unknown`` (ignorable) and ``drafts`` alternating, at seqs 1..n.

    The first is one of ``unknown``; with ``last``, the last of ``unknown`` goes to the end, so
    that an unknown envelope also stands at the last seq (with two or more, at both ends).
    """
    wires: list[dict[str, object]] = [
        {"schemaVersion": version, "eventId": event_id, "conversationId": conversation,
         "seq": 0, "kind": kind, "occurredAt": stamp, "payload": payload, "ignorable": True}
        for event_id, (kind, version, payload), stamp in unknown
    ]
    known = arc.placed(conversation, drafts)
    mixed = [w for pair in zip(wires, known, strict=False) for w in pair]
    mixed += wires[len(known):] + known[len(wires):]
    if last:
        mixed = [wire for wire in mixed if wire is not wires[-1]] + [wires[-1]]
    for seq, wire in enumerate(mixed, start=1):
        wire["seq"] = seq
    return mixed
