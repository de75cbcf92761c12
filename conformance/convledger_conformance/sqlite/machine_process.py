"""The second process of the SQLite machine, and the fresh eventIds of its batches (SQL-047).

:data:`_CHILD` is the script the rule ``append_from_another_process`` of
:class:`~convledger_conformance.sqlite.machine.SqliteLedgerMachine` runs in a
real second Python process on the same file (SQL-047); the small helpers make
the drawn eventIds fresh against the store (ENV-011) and order the two
concurrent batches by their seqs.
"""

from __future__ import annotations

import textwrap

import attrs

from convledger import canonical
from convledger.envelope import EventDraft

_CHILD = textwrap.dedent(
    """
    import importlib, json, sys
    from convledger.envelope import EventDraft
    plan = json.loads(sys.stdin.readline())
    module, _, name = plan["store"].partition(":")
    opener = importlib.import_module(module)
    for part in name.split("."):
        opener = getattr(opener, part)
    store = opener(plan["path"], busy_timeout=60)
    print("ready", flush=True)
    sys.stdin.readline()
    placed = store.append(plan["conversation"], [EventDraft(**d) for d in plan["drafts"]])
    store.close()
    wires = []
    for e in placed:
        wire = {"schemaVersion": e.schema_version, "eventId": e.event_id,
                "conversationId": e.conversation_id, "seq": e.seq, "kind": e.kind,
                "occurredAt": e.occurred_at, "payload": e.payload}
        if e.ignorable is not False:
            wire["ignorable"] = e.ignorable
        wires.append(wire)
    print(json.dumps(wires))
    """
)
"""The second process: open the file, say ready, append on ``go``, print what came back."""


# -- small helpers -------------------------------------------------------------------------


def _fresh_id(candidate: str, taken: set[str]) -> str:
    """``candidate``, primed until no stored or used eventId equals it."""
    while candidate in taken:
        candidate += "'"
    return candidate


def _fresh(batch: list[EventDraft], taken: set[str]) -> list[EventDraft]:
    """The batch with each eventId made fresh against ``taken`` (which then holds them)."""
    fresh = []
    for draft in batch:
        event_id = _fresh_id(draft.event_id, taken)
        taken.add(event_id)
        fresh.append(attrs.evolve(draft, event_id=event_id))
    return fresh


def _first_seq(envelopes: tuple[bytes, ...]) -> int:
    """The seq of the first envelope of a returned batch (0 for none)."""
    wire = canonical.decode(envelopes[0]) if envelopes else None
    seq = wire.get("seq") if isinstance(wire, dict) else None
    return seq if isinstance(seq, int) else 0
