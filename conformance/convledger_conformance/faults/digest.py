"""The state digest of FLT-004: everything a later call can observe of some conversations.

Per conversation: the head; every event as read; the export (with spill
bytes, as a bundle, when the store declares spills) or the kind of its
refusal; the runtime snapshot and the active runs (transitions); the
checkpoint of the projection the scenarios fold (projections). Each part is
read through the interface, so the digest is what a caller would see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from convledger.errors import LedgerError
from convledger.interface import require
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.projections.model import counting
from convledger_conformance.registry import HelperBroken

PROJECTION = counting()
"""The projection the catch-up scenario folds; its checkpoint is part of the digest."""


def _seen(call: Callable[[], object]) -> object:
    """What a call answers, or the kind of its refusal."""
    try:
        return call()
    except LedgerError as error:
        return f"refused:{error.kind}"
    except HelperBroken as broken:  # the whole-ledger read, refused: part of the state too
        if isinstance(broken.error, LedgerError):
            return f"refused:{broken.error.kind}"
        raise


def _events(store: LedgerStore, cid: str) -> list[dict[str, object]]:
    return [dict(envelope.to_wire()) for envelope in read_whole(store, cid)]


def digest(store: LedgerStore, conversations: Iterable[str]) -> tuple[object, ...]:
    """FLT-004: the observable state of ``conversations`` in ``store``."""
    declared = store.capabilities
    parts: list[object] = []
    for cid in conversations:
        # each part labelled, so that first_difference names the conversation and the part
        parts += [(f"{cid!r} head", _seen(partial(store.head, cid))),
                  (f"{cid!r} events", _seen(partial(_events, store, cid)))]
        if Capability.SPILLS in declared:
            parts.append((f"{cid!r} bundle", _seen(partial(
                require(store, Capability.SPILLS).export_bundle, cid))))
        else:
            parts.append((f"{cid!r} export", _seen(partial(store.export_conversation, cid))))
        if Capability.TRANSITIONS in declared:
            runs = require(store, Capability.TRANSITIONS)
            parts.append((f"{cid!r} snapshot", _seen(partial(runs.load_snapshot, cid))))
            parts.append((f"{cid!r} active runs", _seen(partial(runs.list_active_runs, cid))))
        if Capability.PROJECTIONS in declared:
            folds = require(store, Capability.PROJECTIONS)
            parts.append((f"{cid!r} checkpoint",
                          _seen(partial(folds.load_checkpoint, cid, PROJECTION.name))))
    return tuple(parts)
