"""Special events at every position: first, middle, last and at page boundaries (issue 20).

A rule about a special event (here: an ignorable unknown event, skipped by a
fold, PRJ-030; a non-ignorable one, refused, PRJ-031, PRJ-032) is checked with
the event at the first seq of a ledger, in its middle, at its last seq, and on
both sides of the page boundaries a catch-up is likely to read by (seqs 100,
101, 500, 501, 1000, 1001 of a ledger of :data:`LENGTH` events; PRJ-011 reads
"in bounded pages" of a size the store chooses), and across a ``maxEvents``
boundary the caller chooses. Every expected state is computed here.
"""

from __future__ import annotations

from functools import partial
from typing import Final

from convledger import canonical
from convledger.envelope import EventDraft
from convledger.interface import require
from convledger.store import LedgerStore
from convledger_conformance.ledger.checks_positions import with_companions
from convledger_conformance.projections.checks import PRJ
from convledger_conformance.projections.model import counting
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import accepted, draft, fail, fresh_store, refused, run_once

LENGTH: Final = 1001
"""The ledger: one event past the page boundary of 1000."""
SPECIAL: Final = (1, 100, 101, 500, 501, 1000, 1001)
"""Where the ignorable unknown events are: first, page boundaries (both sides), last."""
_SLOTS_ONLY = frozenset({("state/set", 1)})
_PROBE = {"result": "available", "required": [], "missing": []}


def _ledger(conversation: str, special: frozenset[int], *,
            ignorable: bool = True) -> list[EventDraft]:
    return [draft(f"{conversation}-{seq}", kind="sandbox/probed", payload=_PROBE,
                  ignorable=ignorable)
            if seq in special else draft(f"{conversation}-{seq}", seq)
            for seq in range(1, LENGTH + 1)]


def _state(checkpoint: object) -> object:
    return canonical.decode(canonical.encode(getattr(checkpoint, "state", None)))


@check("PRJ-011", "PRJ-030", "PRJ-031", "PRJ-032", capability=PRJ)
def check_special_events_at_every_position(ctx: CheckContext) -> None:
    """PRJ-011, PRJ-030 .. PRJ-032: ignorable and refused events first, at page edges, last."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("pos", _ledger("pos", frozenset(SPECIAL)))
        folded = [seq for seq in range(1, LENGTH + 1) if seq not in SPECIAL]
        expected = {"count": len(folded), "seqs": folded}
        definition = counting(kinds=_SLOTS_ONLY)
        whole = s.catch_up("pos", definition, max_events=LENGTH)
        where = f"catch_up over {LENGTH} events with ignorable unknowns at seqs {SPECIAL}"
        if whole.upto_seq != LENGTH:
            fail(("PRJ-011", "PRJ-030"),
                 f"{where}: expected uptoSeq {LENGTH}, got {whole.upto_seq}")
        if _state(whole) != expected:
            got = _state(whole)
            seqs = got.get("seqs", []) if isinstance(got, dict) else []
            fail(("PRJ-011", "PRJ-030"),
                 f"{where}: folded seqs differ: expected but missing "
                 f"{sorted(set(folded) - set(seqs))[:10]}, folded but not expected "
                 f"{sorted(set(seqs) - set(folded))[:10]}")
        steps = counting(name="pos.steps", kinds=_SLOTS_ONLY)
        for bound in (99, 1, 400, 500, 1):  # uptoSeq 99, 100, 500, 1000, 1001
            s.catch_up("pos", steps, max_events=bound)
        stepped = s.load_checkpoint("pos", steps.name)
        if stepped is None or stepped.upto_seq != LENGTH or _state(stepped) != expected:
            fail("PRJ-011", f"catch_up in steps of maxEvents 99, 1, 400, 500, 1 (each ending "
                            f"on a special event): expected uptoSeq {LENGTH} and the state of "
                            f"one catch-up, got {getattr(stepped, 'upto_seq', None)}")
        for where, seq in (("first", 1), ("middle", 501), ("last", LENGTH)):
            conversation = f"pos-stop-{where.replace(' ', '-')}"
            store.append(conversation, _ledger(conversation, frozenset({seq}), ignorable=False))
            error = refused(partial(s.catch_up, conversation, definition, max_events=LENGTH),
                            "replay_refused", "PRJ-031",
                            f"catch_up over a non-ignorable unknown event at the {where} seq "
                            f"{seq}", store=store, touched=[conversation])
            if getattr(error, "seq", None) != seq:
                fail("PRJ-031", f"the refusal at the {where} seq {seq} names seq "
                                f"{getattr(error, 'seq', None)}")
            if s.load_checkpoint(conversation, definition.name) is not None:
                fail("PRJ-032", f"a refused catch-up at the {where} seq {seq} stored a "
                                "checkpoint")

    run_once(ctx, body)


CHECKPOINTS: Final = (("ckpt.first", 1), ("ckpt.edge", 1000), ("ckpt.last", LENGTH))
"""Checkpoints stored at uptoSeq 1 (the first event), 1000 (a page edge) and the last seq."""
_CKPT_IDS: Final = ("PRJ-010", "PRJ-040", "PRJ-042", "PRJ-044")


def _counted(upto: int) -> dict[str, object]:
    """The state of :func:`counting` over slots 1..``upto`` (the check's own oracle)."""
    return {"count": upto, "seqs": list(range(1, upto + 1))}


@check(*_CKPT_IDS, capability=PRJ)
def check_checkpoints_at_every_position(ctx: CheckContext) -> None:
    """PRJ-010, PRJ-040, PRJ-042, PRJ-044: checkpoints at seq 1, a page edge, the last export."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("ck", [draft(f"ck-{seq}", seq) for seq in range(1, LENGTH + 1)])
        definitions = [counting(name=name) for name, _ in CHECKPOINTS]
        for definition, (name, upto) in zip(definitions, CHECKPOINTS, strict=True):
            got = s.catch_up("ck", definition, max_events=upto)
            if got.upto_seq != upto or _state(got) != _counted(upto):
                fail("PRJ-010", f"catch_up {name!r} with maxEvents {upto} over {LENGTH} "
                                f"events: expected uptoSeq {upto} and count {upto}, got "
                                f"uptoSeq {got.upto_seq}")
        where = (f"an archive of {LENGTH} events with checkpoints at uptoSeq "
                 f"{', '.join(str(upto) for _, upto in CHECKPOINTS)}")
        data = store.export_conversation("ck")
        expected = [{"name": name, "version": 1, "uptoSeq": upto, "state": _counted(upto)}
                    for name, upto in sorted(CHECKPOINTS)]
        document = canonical.decode(data)
        assert isinstance(document, dict)
        companions = document.get("companions")
        listed = companions.get("projections") if isinstance(companions, dict) else None
        if listed != expected:
            fail("PRJ-040", f"export of {where}: expected the projections companion "
                            f"{[(e['name'], e['uptoSeq']) for e in expected]}, got "
                            f"{listed!r:.300}")
        with fresh_store(ctx) as target:
            t = require(target, PRJ)
            accepted(partial(t.import_conversation, data, projections=definitions),
                     ("PRJ-042", "PRJ-044"), f"import of {where}")
            if target.export_conversation("ck") != data:
                fail("PRJ-044", f"the re-export of {where} gives other bytes")
            for name, upto in CHECKPOINTS:
                loaded = t.load_checkpoint("ck", name)
                if loaded is None or loaded.upto_seq != upto or _state(loaded) != _counted(upto):
                    fail("PRJ-044", f"load_checkpoint {name!r} after the import of {where}: "
                                    f"expected uptoSeq {upto}, got "
                                    f"{getattr(loaded, 'upto_seq', None)}")
        stale = {"one short at the page edge": ("ckpt.edge", 1000, _counted(999)),
                 "one past the last event": ("ckpt.last", LENGTH + 1, _counted(LENGTH + 1))}
        for what, (name, upto, state) in stale.items():
            changed = [dict(item, uptoSeq=upto, state=state) if item["name"] == name else item
                       for item in expected]
            with fresh_store(ctx) as target:
                t = require(target, PRJ)
                refused(partial(t.import_conversation,
                                with_companions(data, {"projections": changed}),
                                projections=definitions), "integrity", "PRJ-042",
                        f"import of {where}, whose {name!r} claims uptoSeq {upto} with the "
                        f"state of {state['count']} events ({what})", store=target,
                        touched=["ck"])

    run_once(ctx, body)
