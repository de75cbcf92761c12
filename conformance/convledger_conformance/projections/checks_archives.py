"""Checks of chapter PRJ: checkpoints in archives and purge, and the projection machine.

Checkpoints travel in archives (PRJ-040, PRJ-044) and their imports are
checked (PRJ-041 .. PRJ-043); a purge takes checkpoints and spills (PRJ-016,
SPL-032); the state machine of
:mod:`convledger_conformance.projections.machine` runs the invariants over
random programs (PRJ-012, PRJ-013, PRJ-014, PRJ-020).
"""

from __future__ import annotations

from functools import partial

from hypothesis.stateful import run_state_machine_as_test

from convledger import canonical
from convledger.interface import require
from convledger.projections import SUMMARY
from convledger.store import Capability, LedgerStore
from convledger_conformance.profiles import scaled
from convledger_conformance.projections.checks import PRJ
from convledger_conformance.projections.machine import build_projection_machine
from convledger_conformance.projections.model import counting
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    accepted,
    drafts,
    expect_same_bytes,
    fail,
    fresh_store,
    refused,
    run_once,
)


@check("PRJ-040", "PRJ-044", capability=PRJ)
def check_checkpoints_travel_in_archives(ctx: CheckContext) -> None:
    """PRJ-040, PRJ-044: checkpoints in the companion, by name (code points); re-import is equal."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("c", drafts("c", 6))
        plain = store.export_conversation("c")
        if b'"projections"' in plain:
            fail("PRJ-040", "an archive without checkpoints carries a projections companion")
        s.catch_up("c", counting(name="zeta"), max_events=4)
        s.catch_up("c", SUMMARY)
        for name in ("\U0001f600", "\ufb01"):  # UTF-16 code units put U+1F600 first
            s.catch_up("c", counting(name=name), max_events=1)
        data = store.export_conversation("c")
        document = canonical.decode(data)
        assert isinstance(document, dict)
        companions = document["companions"]
        assert isinstance(companions, dict)
        names = [item["name"] for item in companions.get("projections", [])]
        if names != ["convledger.summary", "zeta", "\ufb01", "\U0001f600"]:
            fail("PRJ-040", f"the projections companion lists {names!r}")
        with fresh_store(ctx) as target:
            t = require(target, PRJ)
            definitions = [counting(name=name) for name in ("zeta", "\U0001f600", "\ufb01")]
            accepted(partial(t.import_conversation, data, projections=definitions),
                     "PRJ-044", "import of checkpoints")
            expect_same_bytes("PRJ-044", "re-export of imported checkpoints gives other bytes",
                              expected=data, got=target.export_conversation("c"))
            stored = t.load_checkpoint("c", "zeta")
            if stored is None or stored.upto_seq != 4:
                fail("PRJ-044", f"the imported checkpoint is {stored!r}")

    run_once(ctx, body)


def _tampered(data: bytes, change: object) -> bytes:
    document = canonical.decode(data)
    assert isinstance(document, dict) and callable(change)
    change(document["companions"])
    return canonical.encode(document)


@check("PRJ-041", "PRJ-042", "PRJ-043", capability=PRJ)
def check_checkpoint_imports_checked(ctx: CheckContext) -> None:
    """PRJ-041 .. PRJ-043: shapes, seqs beyond the ledger, states that lie, unknown definitions."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("c", drafts("c", 5))
        s.catch_up("c", counting(name="b"), max_events=3)
        s.catch_up("c", SUMMARY)
        data = store.export_conversation("c")
        mine = [counting(name="b")]

        def item(companions: dict[str, list[dict[str, object]]], index: int) -> dict[str, object]:
            return companions["projections"][index]

        cases: list[tuple[str, str, str, object]] = [
            ("PRJ-042", "integrity", "uptoSeq beyond the ledger",
             lambda c: item(c, 1).update(uptoSeq=6)),
            ("PRJ-042", "integrity", "a summary that lies",
             lambda c: item(c, 0)["state"].update(events=9)),  # type: ignore[attr-defined]
            ("PRJ-042", "integrity", "a custom state that lies",
             lambda c: item(c, 1).update(state={"count": 3, "seqs": [1, 2, 4]})),
            ("PRJ-043", "invalid_input", "an unknown version",
             lambda c: item(c, 1).update(version=2)),
            ("PRJ-041", "invalid_input", "names out of order",
             lambda c: c["projections"].reverse()),
            ("PRJ-041", "invalid_input", "an extra member",
             lambda c: item(c, 0).update(extra=1)),
            ("PRJ-041", "invalid_input", "an empty companion",
             lambda c: c["projections"].clear()),
        ]
        with fresh_store(ctx) as target:
            t = require(target, PRJ)
            for requirement, kind, what, change in cases:
                refused(partial(t.import_conversation, _tampered(data, change), projections=mine),
                        kind, requirement, what, store=target, touched=["c"])
            refused(partial(t.import_conversation, data), "invalid_input", "PRJ-043",
                    "import without the custom definition", store=target, touched=["c"])
            # the definitions handed over must be a sequence of distinct definitions; a
            # store iterating a non-sequence raised TypeError (found by mutation testing)
            for given, what in ((5, "an int"), (None, "None"), ("b", "a str"),
                                ({"b": mine[0]}, "a dict"), ([*mine, *mine], "one name twice")):
                refused(partial(t.import_conversation, data, projections=given),  # type: ignore[arg-type]
                        "invalid_input", "PRJ-043", f"import with projections {what}",
                        store=target, touched=["c"])
            if target.head("c") != 0 or t.load_checkpoint("c", "b") is not None:
                fail("PRJ-042", "a refused import left something behind")

    run_once(ctx, body)


@check("PRJ-016", "SPL-032", capability=PRJ, also=(Capability.PURGE, Capability.SPILLS))
def check_purge_takes_checkpoints_and_spills(ctx: CheckContext) -> None:
    """PRJ-016, SPL-032: a purge deletes checkpoints and spills; catch-up is then purged."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        spills = require(store, Capability.SPILLS)
        store.append("c", drafts("c", 3))
        s.catch_up("c", SUMMARY)
        spills.put_spill("c", b"x", media_type="text/plain", reference="r",
                    operation={"operationId": "op", "authorization": {}},
                    event_id="spill", occurred_at="2024-01-01T00:00:00Z")
        require(store, Capability.PURGE).purge("c")
        if s.load_checkpoint("c", SUMMARY.name) is not None:
            fail("PRJ-016", "a purged conversation keeps its checkpoint")
        refused(partial(spills.get_spill, "c", "r", authorize=lambda _: True), "not_found",
                "SPL-032", "get_spill after a purge")
        refused(partial(s.catch_up, "c", SUMMARY), "purged", "PRJ-016", "catch_up after purge")
        if s.load_checkpoint("c", SUMMARY.name) is not None:
            fail("PRJ-016", "a refused catch-up of a purged conversation stored a checkpoint")

    run_once(ctx, body)


@check("PRJ-012", "PRJ-013", "PRJ-020", "PRJ-014", capability=PRJ)
def check_projection_machine(ctx: CheckContext) -> None:
    """PRJ-012 .. PRJ-020: random programs keep every checkpoint exact, bounded and monotone."""
    machine = build_projection_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=scaled(ctx.profile, share=0.5))
