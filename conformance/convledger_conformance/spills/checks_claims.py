"""Appended ``spill/*`` events are claims, never objects (SPL-058, LED-022; issue 37).

An ``append`` may store a ``spill/created`` or ``spill/deleted`` event of a
reference that is not live (SPL-008 refuses only live ones). Its reference,
size and sha256 are a producer's claim: a store that derived its live objects
from the events would refuse a later ``put_spill`` of that reference as
``duplicate``, or answer ``get_spill`` from the claim (blind round 4,
``spill_live_set_from_events``).
"""

from __future__ import annotations

import json
from functools import partial

from convledger.canonical import JsonValue
from convledger.interface import require
from convledger.store import LedgerStore
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spills.checks import SPL, allow, put
from convledger_conformance.support import STAMP, accepted, draft, fail, refused, run_once


@check("SPL-058", "LED-022", "SPL-001", "SPL-040", capability=SPL)
def check_appended_spill_events_are_claims(ctx: CheckContext) -> None:
    """SPL-058, LED-022: appended spill/* events of references not live are data: they make
    no object, so a put of their reference is accepted and a get or delete is not_found."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        claims: tuple[tuple[str, JsonValue], ...] = (
            ("spill/created", {"reference": "claimed", "bytes": 5, "sha256": "0" * 64,
                               "mediaType": "text/plain"}),
            ("spill/deleted", {"reference": "kept", "bytes": 4}),
        )
        put(s, "c", "kept", b"kept", "k-1")
        s.delete_spill("c", "kept", event_id="k-2", occurred_at=STAMP)
        for number, (kind, payload) in enumerate(claims, start=1):
            accepted(partial(store.append, "c", [draft(f"claim-{number}", kind=kind,
                                                       payload=payload)]),
                     "SPL-058", f"an appended {kind} of a reference not live")
        for reference in ("claimed", "kept"):
            refused(partial(s.get_spill, "c", reference, authorize=allow), "not_found",
                    "SPL-058", f"get_spill of {reference!r}, named only by appended events",
                    store=store, touched=["c"])
            refused(partial(s.delete_spill, "c", reference, event_id=f"del-{reference}",
                            occurred_at=STAMP), "not_found", "SPL-058",
                    f"delete_spill of {reference!r}, named only by appended events",
                    store=store, touched=["c"])
        if "spills" in json.loads(store.export_conversation("c")).get("companions", {}):
            fail("SPL-058", "the export lists an object that only appended events named")
        for reference, data in (("claimed", b"other"), ("kept", b"again")):
            accepted(partial(put, s, "c", reference, data, f"put-{reference}"), "SPL-058",
                     f"put_spill of {reference!r}, named only by appended events")
            if s.get_spill("c", reference, authorize=allow) != data:
                fail("SPL-058", f"get_spill of {reference!r} does not give the bytes put")

    run_once(ctx, body)
