"""The hand-off phase of a concurrent run: every client sees every other's append (DUR-010).

A random interleaving catches a store that answers a read from what one client
(one handle, one process) saw before only when a stale read happens to follow
another client's write in real time. The hand-off makes that order certain:
after the concurrent phase, each client in turn appends one event, and then
every other client reads the head. A read that completes after the append
completed must see it, so a per-client cache of the head is never linearizable.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from convledger.interface import EveryOperation
from convledger_conformance.durability.history import Call
from convledger_conformance.durability.workload import state_draft


def hand_off(stores: Sequence[EveryOperation], conversation: str, calls: list[Call]) -> None:
    """Record, in order, one append per client, each followed by a head from every other."""
    for writer, store in enumerate(stores):
        event_id = f"{conversation}-handoff-{writer}"
        invoked = time.monotonic()
        placed = store.append(conversation, [state_draft(event_id, event_id)])
        calls.append(Call(writer, conversation, "append", invoked, time.monotonic(),
                          (event_id,), None, "ok", tuple(e.seq for e in placed)))
        for reader, other in enumerate(stores):
            if reader == writer:
                continue
            invoked = time.monotonic()
            head = other.head(conversation)
            calls.append(Call(reader, conversation, "head", invoked, time.monotonic(),
                              (), None, "ok", head))


def hand_off_calls(clients: int) -> int:
    """How many calls :func:`hand_off` records for ``clients`` clients: one append and
    ``clients - 1`` heads each."""
    return clients * clients
