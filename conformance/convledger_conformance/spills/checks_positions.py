"""Spill events at every position: first, both sides of a page, last (issue 20).

A bundle's ``spills`` companion names each live object by the seq of its
``spill/created`` event (SPL-040), and an import resolves every entry against
that event and every ``spill/deleted`` after it (SPL-043). A store that finds
the event at ``createdSeq`` by page arithmetic, or scans for deletions one
event short, agrees with the other checks as long as no spill event stands at
a page edge or at the last seq; here ``spill/created`` events stand at seq 1,
at seqs 1000 and 1001 (a page of 1000, LED-007's default) and at the last seq,
and a ``spill/deleted`` is the last event of a stale bundle. Every expected
answer (the entries, the bytes, the refusals) is computed here.
"""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Any, Final

import cbor2

from convledger import canonical
from convledger.interface import require
from convledger.spills.store import SpillStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spills.checks import OPERATION, allow, put
from convledger_conformance.support import (
    STAMP,
    accepted,
    draft,
    fail,
    fresh_store,
    refused,
    run_once,
)

IDS: Final = ("SPL-040", "SPL-043", "SPL-052", "SPL-055")
PAGE_EDGE: Final = 1000
LAST: Final = PAGE_EDGE + 20
"""The spills are created at seq 1, PAGE_EDGE, PAGE_EDGE + 1 and LAST (the last event)."""


def _fill(store: LedgerStore, conversation: str, upto: int) -> None:
    head = store.head(conversation)
    if upto > head:
        store.append(conversation, [draft(f"{conversation}-fill-{seq}", seq)
                                    for seq in range(head + 1, upto + 1)])


def _body(reference: str) -> bytes:
    return f"the object {reference}".encode()


def _archive_of(bundle: bytes) -> dict[str, Any]:
    document: dict[str, Any] = canonical.decode(cbor2.loads(bundle)["archive"])  # type: ignore[assignment]
    return document


def _rebundle(bundle: bytes, archive: dict[str, Any], objects: object) -> bytes:
    document = cbor2.loads(bundle)
    document["archive"] = canonical.encode(archive)
    document["objects"] = objects
    return cbor2.dumps(document, canonical=True)


@check(*IDS, capability=Capability.SPILLS)
def check_spills_at_every_position(ctx: CheckContext) -> None:
    """SPL-040, SPL-043, SPL-052, SPL-055: spills first, at a page edge and last round-trip."""

    def body(given: LedgerStore) -> None:
        s: SpillStore = require(given, Capability.SPILLS)
        created: dict[str, int] = {}
        for reference, before in (("first", 0), ("edge-a", PAGE_EDGE - 1),
                                  ("edge-b", PAGE_EDGE), ("last", LAST - 1)):
            _fill(given, "sp", before)
            put(s, "sp", reference, _body(reference), f"sp-put-{reference}")
            created[reference] = given.head("sp")
        if created != {"first": 1, "edge-a": PAGE_EDGE, "edge-b": PAGE_EDGE + 1, "last": LAST}:
            fail("SPL-001", f"put_spill after fillers placed the spill/created events at "
                            f"{created}, expected seqs 1, {PAGE_EDGE}, {PAGE_EDGE + 1}, {LAST}")
        where = (f"a bundle of {LAST} events with spill/created at seqs "
                 f"{', '.join(str(created[r]) for r in ('first', 'edge-a', 'edge-b', 'last'))}")
        bundle = s.export_bundle("sp")
        expected = [{"reference": r, "mediaType": "text/plain", "bytes": len(_body(r)),
                     "sha256": hashlib.sha256(_body(r)).hexdigest(), "createdSeq": created[r],
                     "operation": OPERATION} for r in sorted(created)]
        got = _archive_of(bundle).get("companions", {}).get("spills")
        if got != expected:
            fail("SPL-040", f"export_bundle of {where}: expected the spills companion "
                            f"{expected!r:.400}, got {got!r:.400}")
        with fresh_store(ctx) as made:
            target: SpillStore = require(made, Capability.SPILLS)
            accepted(partial(target.import_bundle, bundle), ("SPL-043", "SPL-055"),
                     f"import_bundle of {where}")
            if target.export_bundle("sp") != bundle:
                fail("SPL-052", f"the re-export of {where} gives other bytes")
            for reference in created:
                data = accepted(partial(target.get_spill, "sp", reference, authorize=allow),
                                "SPL-055", f"get_spill {reference!r} after the import of {where}")
                if data != _body(reference):
                    fail("SPL-055", f"get_spill {reference!r} (created at seq "
                                    f"{created[reference]}) after the import of {where}: "
                                    f"expected {_body(reference)!r}, got {data!r:.100}")
        _stale_bundles(ctx, s, bundle, created, where)

    run_once(ctx, body)


def _stale_bundles(ctx: CheckContext, s: SpillStore, bundle: bytes, created: dict[str, int],
                   where: str) -> None:
    """SPL-043: an entry one seq off at the page edge, or ended by the last event, is refused."""
    document = cbor2.loads(bundle)
    off = _archive_of(bundle)
    for entry in off["companions"]["spills"]:
        if entry["reference"] == "edge-a":
            entry["createdSeq"] = PAGE_EDGE + 1
    cases = [(f"{where}, whose entry 'edge-a' names createdSeq {PAGE_EDGE + 1} (the "
              f"spill/created of 'edge-b'), not {created['edge-a']}",
              _rebundle(bundle, off, document["objects"]))]
    s.delete_spill("sp", "first", event_id="sp-delete-first", occurred_at=STAMP)
    ended = _archive_of(s.export_bundle("sp"))
    ended["companions"]["spills"] = _archive_of(bundle)["companions"]["spills"]
    cases.append((f"{where}, then spill/deleted of 'first' at the last seq {LAST + 1}, whose "
                  f"companion still lists 'first'", _rebundle(bundle, ended, document["objects"])))
    for what, stale in cases:
        with fresh_store(ctx) as made:
            target: SpillStore = require(made, Capability.SPILLS)
            refused(partial(target.import_bundle, stale), "integrity", "SPL-043",
                    f"import_bundle of {what}", store=made, touched=["sp"])
