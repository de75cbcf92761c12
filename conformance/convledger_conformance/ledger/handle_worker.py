"""A second process for the checks of capability ``multi_process`` (LED-016 .. LED-019).

Run as ``python -m convledger_conformance.ledger.handle_worker LOCATOR_JSON``: it opens
the store with :func:`convledger.handles.open_located`, prints ``{"ready":
true}``, then answers one JSON command per line of stdin with one JSON line
on stdout, until stdin ends:

* ``{"op": "append", "conversation": c, "batches": [[eventId, ...], ...]}``
  appends each batch of ``state/set`` drafts and answers ``{"placed": [[seq,
  ...], ...]}``, or ``{"error": text, "placed": ...}`` at the first refusal;
* ``{"op": "head", "conversation": c}`` answers ``{"head": n}``;
* ``{"op": "read", "conversation": c}`` answers ``{"events": [[seq, eventId],
  ...]}``, the whole ledger, page by page;
* ``{"op": "fresh", "write": name, "number": n}`` makes write ``name`` of
  :data:`~convledger_conformance.ledger.freshness_support.WRITES` (numbered
  ``n``) and answers ``{"answers": {read: repr, ...}}``, every read the store
  declares, read right after it here (``every_read_fresh_across_processes``).

Nothing here knows the store's engine: the locator is all it is given.
"""

from __future__ import annotations

import json
import sys

from convledger.envelope import EventDraft
from convledger.handles import StoreLocator, open_located
from convledger.store import LedgerStore
from convledger_conformance.ledger.freshness_support import WRITE_BY_NAME, shown

STAMP = "2024-05-01T12:00:00.250+02:00"


def worker_draft(event_id: str) -> EventDraft:
    """The draft the worker appends for ``event_id``."""
    return EventDraft(event_id=event_id, kind="state/set", occurred_at=STAMP,
                      payload={"name": "slot", "version": 1, "value": event_id,
                               "actor": "handle-worker"})


def answer(store: LedgerStore, command: dict[str, object]) -> dict[str, object]:
    """The answer to one command."""
    if command["op"] == "fresh":
        WRITE_BY_NAME[str(command["write"])](store, int(str(command["number"])))
        return {"answers": shown(store)}
    conversation = str(command["conversation"])
    if command["op"] == "head":
        return {"head": store.head(conversation)}
    if command["op"] == "read":
        events: list[list[object]] = []
        seq: int | None = 1
        while seq is not None:
            page = store.read(conversation, from_seq=seq)
            events.extend([e.seq, e.event_id] for e in page.items)
            seq = page.next_seq
        return {"events": events}
    placed: list[list[int]] = []
    batches = command["batches"]
    assert isinstance(batches, list)
    for batch in batches:
        try:
            stored = store.append(conversation, [worker_draft(str(i)) for i in batch])
        except Exception as error:  # reported to the check, which names it
            return {"error": repr(error), "placed": placed}
        placed.append([e.seq for e in stored])
    return {"placed": placed}


def main(argv: list[str]) -> int:
    """Open the located store and serve commands until stdin ends."""
    store = open_located(StoreLocator.from_json(argv[1]))
    try:
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            try:
                reply = answer(store, json.loads(line))
            except Exception as error:
                reply = {"error": repr(error)}
            print(json.dumps(reply), flush=True)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
