"""Unknown events at every position in import, read and export (issue 20).

An envelope of an unregistered pair that is ignorable is kept as received by an
import (KND-004, RPL-002), returned by every bounded read (RPL-005) and
exported byte for byte (ARC-004); one that is not ignorable is refused by the
import's replay gate naming its seq (RPL-003, RPL-005). The other checks keep
such envelopes in ledgers of a few events; here they stand at seq 1, in the
middle, on both sides of a page of 1000 (LED-007's default) and at the last
seq of a ledger of :data:`LENGTH` events, and the reads start and end on them.
Every expected answer is computed here from the archive the check builds.
"""

from __future__ import annotations

from functools import partial
from typing import Final

from convledger import canonical
from convledger.store import LedgerStore
from convledger_conformance.ledger.model import archive_bytes, envelope_bytes
from convledger_conformance.ledger.strategies import UNKNOWN_KIND
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import STAMP, accepted, fail, fresh_store, refused, run_once

IDS: Final = ("KND-004", "RPL-002", "RPL-003", "RPL-005", "ARC-004")
LENGTH: Final = 1001
UNKNOWN: Final = (1, 500, 1000, 1001)
"""Where the ignorable unknown envelopes are: first, middle, both sides of the page edge, last."""
READS: Final = ((1, 1000), (1000, 2), (1001, 1000), (500, 1), (999, 1000))
"""The bounded reads (fromSeq, limit): a page, reads starting or ending on an unknown one."""


def with_companions(archive: bytes, companions: dict[str, object]) -> bytes:
    """The canonical ``archive`` with its ``companions`` member replaced by ``companions``.

    The companions are the first member (CAN-002), so the events, whose encoding is most of
    the work for a ledger of 1000 events, are reused as they are.
    """
    document = canonical.decode(archive)
    assert isinstance(document, dict)
    prefix = b'{"companions":' + canonical.encode(document["companions"])
    assert archive.startswith(prefix + b',"conversationId":'), "not a canonical archive"
    return b'{"companions":' + canonical.encode(companions) + archive[len(prefix):]


def _wires(conversation: str, unknown: frozenset[int], *,
           ignorable: bool = True) -> list[dict[str, object]]:
    wires: list[dict[str, object]] = []
    for seq in range(1, LENGTH + 1):
        wire: dict[str, object] = {
            "schemaVersion": 1, "eventId": f"{conversation}-{seq}", "conversationId": conversation,
            "seq": seq, "kind": "state/set", "occurredAt": STAMP,
            "payload": {"name": "slot", "version": 1, "value": seq, "actor": "conformance"}}
        if seq in unknown:
            wire.update(kind=UNKNOWN_KIND, payload={"opaque": [seq, "é"]})
            if ignorable:
                wire["ignorable"] = True
        wires.append(wire)
    return wires


@check(*IDS)
def check_unknown_events_at_every_position(ctx: CheckContext) -> None:
    """KND-004, RPL-002 .. RPL-005, ARC-004: unknown envelopes first, at a page edge, last."""

    def body(store: LedgerStore) -> None:
        wires = _wires("unk", frozenset(UNKNOWN))
        encoded = [canonical.encode(wire) for wire in wires]
        data = archive_bytes("unk", encoded)
        where = f"an archive of {LENGTH} events with ignorable unknown envelopes at seqs {UNKNOWN}"
        report = accepted(partial(store.import_conversation, data), ("KND-004", "RPL-002"),
                          f"import of {where}")
        if report.events != LENGTH or store.head("unk") != LENGTH:
            fail("KND-004", f"import of {where}: expected {LENGTH} events and head {LENGTH}, "
                            f"got {report.events} events and head {store.head('unk')}")
        for from_seq, limit in READS:
            page = store.read("unk", from_seq=from_seq, limit=limit)
            last = min(LENGTH, from_seq + limit - 1)
            expected_next = last + 1 if last < LENGTH else None
            got = [envelope_bytes(e) for e in page.items]
            if got != encoded[from_seq - 1 : last] or page.next_seq != expected_next:
                seqs = [e.seq for e in page.items]
                same = seqs == list(range(from_seq, last + 1))
                fail(("RPL-005", "KND-004"),
                     f"read from seq {from_seq} limit {limit} after the import of {where}: "
                     f"expected seqs {from_seq} .. {last} as imported, next {expected_next}; "
                     f"got {len(seqs)} envelopes (seqs {seqs[:3]} .. {seqs[-3:]}"
                     f"{', some not as imported' if same else ''}), next {page.next_seq}")
        exported = store.export_conversation("unk")
        if exported != data:
            fail(("ARC-004", "KND-004"), f"the re-export of {where} differs from the archive")
        plain = _wires("unk", frozenset())
        for seq in (1, LENGTH):  # the first seq; the first of the second page and the last
            stopped = list(encoded)
            stopped[seq - 1] = canonical.encode({k: v for k, v in wires[seq - 1].items()
                                                 if k != "ignorable"})
            for other in UNKNOWN:  # the other unknown envelopes back to ordinary ones
                if other != seq:
                    stopped[other - 1] = canonical.encode(plain[other - 1])
            with fresh_store(ctx) as target:
                error = refused(partial(target.import_conversation,
                                        archive_bytes("unk", stopped)),
                                "replay_refused", ("RPL-003", "RPL-005"),
                                f"import of an archive of {LENGTH} events whose one unknown "
                                f"envelope, at seq {seq}, is not ignorable", store=target,
                                touched=["unk"])
            if getattr(error, "seq", None) != seq:
                fail("RPL-003", f"the import refused for the non-ignorable unknown envelope at "
                                f"seq {seq} names seq {getattr(error, 'seq', None)}")

    run_once(ctx, body)
