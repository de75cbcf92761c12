"""What runs beside the store and its raw replay in one figure: the minimal floor and the peers.

A :class:`Beside` holds, for one ledger size, a :class:`~convledger_bench.minimal.MinimalLedger`
and the peers (:mod:`convledger_bench.peers`) on ledgers of the same events. Its methods give
each figure's extra contenders as zero-argument calls, prepared before timing and taken in
turn (one per round, as the store's operations are), and the contenders it cannot measure
with the reason (``peers not installed``). The figures interleave them with the store and
the replay, so all of them see the same machine.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import attrs

from convledger_bench.measure import FASTEST_PEER, MINIMAL, PEERS, Counter
from convledger_bench.minimal import (
    MinimalLedger,
    MinimalOperation,
    minimal_append_operations,
    minimal_archive_operations,
    minimal_transition_operations,
)
from convledger_bench.peers import EventsourcingPeer, LanggraphPeer, peers_missing
from convledger_bench.workloads import conversation_name, conversations_of

Contenders = dict[str, Callable[[], object]]
Window = tuple[str, int]
"""(conversationId, first seq) of one read page."""
DECODED = "eventsourcing.decoded"


def _turns(calls: Sequence[Callable[[], object]]) -> Callable[[], object]:
    turn = Counter()
    return lambda: calls[turn.next()]()


@attrs.define
class Beside:
    """The minimal floor and the peers of one ledger size (any of them may be absent)."""

    minimal: MinimalLedger | None = None
    eventsourcing: EventsourcingPeer | None = None
    langgraph: LanggraphPeer | None = None
    missing: str | None = None
    """Why the peers are absent (None when they are here, or were not asked for)."""

    @classmethod
    def open(cls, minimal: Path | None, eventsourcing: Path | None = None,
             langgraph: Path | None = None) -> Beside:
        """Open the ledgers given; peers only when the ``peers`` extra is installed."""
        missing = peers_missing()
        return cls(
            minimal=None if minimal is None else MinimalLedger(minimal),
            eventsourcing=(None if eventsourcing is None or missing
                           else EventsourcingPeer(eventsourcing)),
            langgraph=None if langgraph is None or missing else LanggraphPeer(langgraph),
            missing=missing,
        )

    def _absent(self, names: Sequence[str]) -> dict[str, str]:
        return {name: self.missing for name in names if self.missing is not None}

    def _minimal(self, operations: Sequence[MinimalOperation]) -> Contenders:
        ledger = self.minimal
        if ledger is None:
            return {}
        return {MINIMAL: _turns([partial(operation, ledger) for operation in operations])}

    def appends(
        self, size: int, batch: int, count: int, *, base: int
    ) -> tuple[Contenders, dict[str, str]]:
        """``count`` appends of ``batch`` drafts, as the store's ``append_operations`` makes."""
        found = self._minimal(minimal_append_operations(size, batch, count, base=base))
        conversations = conversations_of(size)
        plan = [(conversation_name(turn % conversations),
                 range(base + turn * batch, base + (turn + 1) * batch)) for turn in range(count)]
        if self.eventsourcing is not None:
            peer = self.eventsourcing
            events = [peer.events(c, indexes) for c, indexes in plan]
            found[PEERS[0]] = _turns([partial(peer.insert, batch) for batch in events])
        if self.langgraph is not None and batch == 1:
            saver = self.langgraph
            checkpoints = [saver.checkpoint(c, indexes[0]) for c, indexes in plan]
            found[PEERS[1]] = _turns([partial(saver.put, made) for made in checkpoints])
        return found, self._absent([*(PEERS if batch == 1 else PEERS[:1]), FASTEST_PEER])

    def transitions(self, count: int, *, base: int) -> Contenders:
        """The minimal twin of ``transition_operations(count, base=base)``."""
        return self._minimal(minimal_transition_operations(count, base=base))

    def imports(self, count: int, *, base: int) -> Contenders:
        """The minimal twin of ``archive_operations(count, base=base)``."""
        return self._minimal(minimal_archive_operations(count, base=base))

    def reads(
        self, windows: Sequence[Window], page: int, *, peers: bool = False
    ) -> tuple[Contenders, dict[str, str]]:
        """Pages of ``page`` events at each window: minimal SELECT + json.loads, the peers
        (unless ``peers`` is false)."""
        found: Contenders = {}
        if self.minimal is not None:
            ledger = self.minimal

            def minimal_read(c: str, start: int) -> None:
                assert len(ledger.read(c, start, page)) == page

            found[MINIMAL] = _turns([partial(minimal_read, *window) for window in windows])
        if not peers:
            return found, {}
        if self.eventsourcing is not None:
            peer = self.eventsourcing

            def select(c: str, start: int) -> None:
                assert len(peer.select(c, start - 1, page)) == page

            def decoded(c: str, start: int) -> None:
                states = [json.loads(event.state) for event in peer.select(c, start - 1, page)]
                assert len(states) == page

            found[PEERS[0]] = _turns([partial(select, *window) for window in windows])
            found[DECODED] = _turns([partial(decoded, *window) for window in windows])
        if self.langgraph is not None:
            saver = self.langgraph

            def listed(c: str, start: int) -> None:
                assert len(saver.list(c, start + page, page)) == page

            found[PEERS[1]] = _turns([partial(listed, *window) for window in windows])
        return found, self._absent([*PEERS, DECODED, FASTEST_PEER])

    def close(self) -> None:
        """Close every ledger."""
        for ledger in (self.minimal, self.eventsourcing, self.langgraph):
            if ledger is not None:
                ledger.close()
