"""Claims a producer makes are data, never a key across conversations (LED-022, PRV-021).

The ``sha256`` of a ``provider/message`` asserts the hash of its body; no
chapter asks a store to check it, so a store stores and returns it as written
(LED-014). A store that trusted it, keeping one body per hash, would answer
one conversation's body in another's ledger when a producer's hash is false.
This check sends false hashes (the hash of another conversation's body, the
same hash twice in one conversation with two bodies, a hash of no body) and
expects every event to read back exactly as appended, in every conversation.

The claims a chapter does check (a bundle's object sizes and hashes, SPL-053;
the companions of an archive, SPL-043, TRN-104, PRJ-042; the seqs and ids of
its events, ARC-006 .. ARC-008) are sent false by the checks of those ids;
``tests/test_claims_table.py`` keeps the table of LED-022 and those checks in
step.
"""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Final

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.store import LedgerStore
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import STAMP, accepted, fail, fresh_store

IDS: Final = ("PRV-021", "LED-022", "LED-014", "PRV-005")
KIND: Final = "provider/message"


def _sha(message: JsonValue) -> str:
    return hashlib.sha256(canonical.encode(message)).hexdigest()


def _body(text: str) -> JsonValue:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _message(event_id: str, sha256: str, message: JsonValue) -> EventDraft:
    return EventDraft(event_id=event_id, kind=KIND, schema_version=1, occurred_at=STAMP,
                      payload={"sha256": sha256, "message": message})


PLAN: Final[tuple[tuple[str, str, str, JsonValue], ...]] = (
    # conversation, eventId, claimed hash, body
    ("claims-a", "claim-a1", _sha(_body("secret of a")), _body("secret of a")),
    ("claims-b", "claim-b1", _sha(_body("secret of a")), _body("words of b")),  # a's hash
    ("claims-b", "claim-b2", _sha(_body("words of b")), _body("words of b")),  # true hash
    ("claims-b", "claim-b3", _sha(_body("words of b")), _body("other words of b")),  # again
    ("claims-c", "claim-c1", "0" * 64, _body("words of c")),  # the hash of no body
    ("claims-c", "claim-c2", _sha(_body("words of b")), _body("secret of a")),  # b's hash
)
"""Each append, true claims and false ones, in this order."""


def _expect_as_written(store: LedgerStore) -> None:
    by_conversation: dict[str, list[tuple[str, str, JsonValue]]] = {}
    for conversation, event_id, sha256, body in PLAN:
        by_conversation.setdefault(conversation, []).append((event_id, sha256, body))
    for conversation, expected in by_conversation.items():
        got = [(envelope.event_id, envelope.payload) for envelope in read_whole(store,
                                                                                conversation)]
        for seq, (event_id, sha256, body) in enumerate(expected, start=1):
            want = (event_id, {"sha256": sha256, "message": body})
            found = got[seq - 1] if seq <= len(got) else "no event"
            if found != want:
                truth = "true" if _sha(body) == sha256 else "false"
                fail(IDS, f"{KIND} at seq {seq} of {conversation!r}, whose sha256 claim "
                          f"{sha256[:12]}... is {truth}: expected {want!r:.300}, "
                          f"got {found!r:.300}")
        if len(got) != len(expected):
            fail(IDS, f"{conversation!r}: expected {len(expected)} events, got {len(got)}")


@check(*IDS)
def check_claimed_hashes_are_data(ctx: CheckContext) -> None:
    """PRV-021, LED-022: provider/message bodies read back as appended, whatever hash they
    claim, in every conversation."""
    with fresh_store(ctx) as store:
        for conversation, event_id, sha256, body in PLAN:
            accepted(partial(store.append, conversation, [_message(event_id, sha256, body)]),
                     IDS, f"append of {KIND} {event_id!r} to {conversation!r}")
        _expect_as_written(store)
