"""The figures other than search: appends, transitions, reads, export, import, encoding, memory,
projection catch-up, each measured against its floor (see the package docstring)."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable
from typing import Any

import attrs

from convledger import canonical
from convledger.capabilities import Capability
from convledger.envelope import Envelope
from convledger.fast import canonical as fast_canonical  # measured on purpose: ``canonical``
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.sqlite import rows
from convledger.store import LedgerStore
from convledger_bench.beside import Beside
from convledger_bench.floor import Floor, paired
from convledger_bench.measure import Counter, Figure, Runner, figure, interleave
from convledger_bench.workloads import (
    APPENDS,
    PER_CONVERSATION,
    append_operations,
    archive_operations,
    conversation_name,
    conversations_of,
    draft,
    fill,
    transition_operations,
)

PEER_PAGE = 100
"""The read page the peers are measured on (issue 18)."""


def append_figure(
    store: LedgerStore,
    floor: Floor,
    size: int,
    name: str,
    rounds: int,
    *,
    base: int,
    warmup: int = 3,
    runner: Runner | None = None,
    beside: Beside | None = None,
) -> Figure:
    """``append.{name}@{size}``: appends of fresh drafts against the raw replay of the same,
    and the minimal transaction and the peers appending the same drafts (``beside``)."""
    batch = APPENDS[name]
    operations = append_operations(size, batch, rounds + warmup, base=base)
    others, absent = ({}, {}) if beside is None else beside.appends(
        size, batch, rounds + warmup, base=base)
    samples = paired(store, floor, operations, rounds=rounds, warmup=warmup, runner=runner,
                     others=others)
    return figure(f"append.{name}@{size:.0e}", f"append of {batch} draft(s) in one call, "
                  f"ledger of {size:,} events", samples, events=batch, not_measured=absent)


def transition_figure(
    store: LedgerStore,
    floor: Floor,
    size: int,
    rounds: int,
    *,
    base: int,
    warmup: int = 3,
    runner: Runner | None = None,
    beside: Beside | None = None,
) -> Figure:
    """``append.transition@{size}``: one runtime transition per call against its raw replay
    (and the minimal transaction of its event and rows, ``beside``)."""
    operations = transition_operations(rounds + warmup, base=base)
    others = {} if beside is None else beside.transitions(rounds + warmup, base=base)
    samples = paired(store, floor, operations, rounds=rounds, warmup=warmup, runner=runner,
                     others=others)
    return figure(f"append.transition@{size:.0e}", "one runtime transition (accept, acquire, "
                  f"terminal in turn), ledger of {size:,} events", samples, events=1)


def read_figure(
    store: LedgerStore,
    raw: sqlite3.Connection,
    size: int,
    page: int,
    rounds: int,
    *,
    warmup: int = 3,
    runner: Runner | None = None,
    seed: int = 7,
    beside: Beside | None = None,
    peers: bool = False,
) -> Figure:
    """``read.page{page}@{size}``: a page of decoded envelopes against fetch + ``json.loads``
    and the minimal SELECT + ``json.loads`` (``beside``).

    With ``peers``, the figure is ``read.peers{page}@{size}`` instead: the same
    reads with the peers' reads beside them. It is a figure of its own because
    langgraph's ``list`` (~20x a page read) in the same rounds made the
    store's and the floor's samples of the page figure several times noisier
    on a loaded machine (spreads of 190-1200 %, 2026-12-02).
    """
    rng = random.Random(seed)
    windows = [
        (conversation_name(rng.randrange(conversations_of(size))),
         rng.randrange(1, PER_CONVERSATION - page + 2))
        for _ in range(rounds + warmup)
    ]
    store_turn, raw_turn = Counter(), Counter()

    def read() -> None:
        conversation_id, start = windows[store_turn.next()]
        found = store.read(conversation_id, from_seq=start, limit=page)
        assert len(found.items) == page

    def floor() -> None:
        conversation_id, start = windows[raw_turn.next()]
        found = raw.execute(rows.READ_WINDOW, (conversation_id, start, rows.MAX_SEQ, page + 1))
        decoded = [json.loads(row[6]) for row in found]
        assert len(decoded) == page + 1 or start + page > PER_CONVERSATION

    others, absent = ({}, {}) if beside is None else beside.reads(windows, page, peers=peers)
    samples = interleave({"store": read, "floor": floor, **others}, rounds=rounds, warmup=warmup,
                         runner=runner)
    name = "peers" if peers else "page"
    return figure(f"read.{name}{page}@{size:.0e}", f"read of {page} decoded envelopes, "
                  f"ledger of {size:,} events", samples, events=page, not_measured=absent)


def scaling_figure(
    small: LedgerStore,
    large: LedgerStore,
    sizes: tuple[int, int],
    rounds: int,
    *,
    page: int = 100,
    warmup: int = 3,
    runner: Runner | None = None,
    figure_id: str = "read.scaling",
) -> Figure:
    """``read.scaling``: the same read at the large size against the small, interleaved."""
    rng = random.Random(11)
    windows = {
        size: [
            (conversation_name(rng.randrange(conversations_of(size))),
             rng.randrange(1, PER_CONVERSATION - page + 2))
            for _ in range(rounds + warmup)
        ]
        for size in sizes
    }
    turns = {size: Counter() for size in sizes}

    def reader(store: LedgerStore, size: int) -> Callable[[], None]:
        def read() -> None:
            conversation_id, start = windows[size][turns[size].next()]
            assert len(store.read(conversation_id, from_seq=start, limit=page).items) == page

        return read

    samples = interleave(
        {"floor": reader(small, sizes[0]), "store": reader(large, sizes[1])},
        rounds=rounds, warmup=warmup, runner=runner,
    )
    return figure(figure_id, f"read of {page} at {sizes[1]:,} events against {sizes[0]:,}",
                  samples, events=page)


def append_scaling_figure(
    small: LedgerStore,
    large: LedgerStore,
    sizes: tuple[int, int],
    rounds: int,
    *,
    base: int,
    warmup: int = 3,
    runner: Runner | None = None,
    figure_id: str = "append.scaling",
) -> Figure:
    """``append.scaling``: a single append at the large size against the same at the small.

    Interleaved; each side appends fresh drafts into its own ledger's
    conversations in turn (ratio = median at the small size / median at the large).
    """
    small_operations = append_operations(sizes[0], 1, rounds + warmup, base=base)
    large_operations = append_operations(sizes[1], 1, rounds + warmup, base=base + 10**7)
    small_turn, large_turn = Counter(), Counter()
    samples = interleave(
        {"floor": lambda: small_operations[small_turn.next()](small),
         "store": lambda: large_operations[large_turn.next()](large)},
        rounds=rounds, warmup=warmup, runner=runner,
    )
    return figure(figure_id, f"append of one draft at {sizes[1]:,} events against {sizes[0]:,}",
                  samples, events=1)


def export_figure(
    store: LedgerStore, rounds: int, *, warmup: int = 2, runner: Runner | None = None
) -> Figure:
    """``export``: a 1000-event conversation exported, against rfc8785 on each of its events.

    Without ``rfc8785`` (a bare install: it is a test extra) the floor is the
    package's own clear canonical encoder (``convledger.canonical.encode``, the
    definition) on each event, and the description says so (issue 34).
    """
    encode: Callable[[Any], bytes]
    floor_name = "rfc8785"
    try:
        import rfc8785

        encode = rfc8785.dumps
    except ImportError:
        encode, floor_name = canonical.encode, "convledger.canonical (rfc8785 not installed)"
    conversation_id = conversation_name(0)
    events: list[Envelope] = []
    page = store.read(conversation_id, limit=PER_CONVERSATION)
    events.extend(page.items)
    while page.next_seq is not None:
        page = store.read(conversation_id, from_seq=page.next_seq, limit=PER_CONVERSATION)
        events.extend(page.items)
    wires = [envelope.to_wire() for envelope in events]
    assert encode(wires[0]) == canonical.encode(wires[0])

    def baseline() -> None:
        for wire in wires:
            encode(wire)

    samples = interleave(
        {"store": lambda: store.export_conversation(conversation_id), "floor": baseline},
        rounds=rounds, warmup=warmup, runner=runner,
    )
    return figure("export", f"export of {len(events)} events against {floor_name} per event",
                  samples, events=len(events))


def import_figure(
    store: LedgerStore,
    floor: Floor,
    rounds: int,
    *,
    base: int,
    warmup: int = 1,
    runner: Runner | None = None,
    beside: Beside | None = None,
) -> Figure:
    """``import``: a 1000-event archive into a fresh conversation, against its raw replay
    (and the minimal import of the same events, ``beside``)."""
    operations = archive_operations(rounds + warmup, base=base)
    others = {} if beside is None else beside.imports(rounds + warmup, base=base)
    samples = paired(store, floor, operations, rounds=rounds, warmup=warmup, runner=runner,
                     others=others)
    return figure("import", "import of a 1000-event archive", samples, events=PER_CONVERSATION)


def canonical_figure(rounds: int, *, runner: Runner | None = None) -> Figure | None:
    """``canonical``: the fast encoder on one envelope against rfc8785, 20 calls per sample."""
    try:
        import rfc8785
    except ImportError:
        return None
    wire = Envelope.from_draft(draft(1), conversation_name(0), 1).to_wire()
    assert fast_canonical.encode(wire) == rfc8785.dumps(wire)
    calls = 20

    def batch(encode: Callable[[Any], bytes]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                encode(wire)

        return run

    samples = interleave(
        {"store": batch(fast_canonical.encode), "floor": batch(rfc8785.dumps)},
        rounds=rounds, warmup=3, runner=runner,
    )
    return figure("canonical", "fast canonical encoding of one envelope against rfc8785",
                  samples, events=calls)


def memory_append_figure(name: str, rounds: int, *, runner: Runner | None = None) -> Figure:
    """``memory.append.{name}``: the rate of ``MemoryStore.append`` (single or batch100)."""
    batch = APPENDS[name]
    store = MemoryStore()
    fill(store, 1000)
    count = rounds if batch == 1 else max(10, rounds // 10)
    operations = append_operations(1000, batch, count + 3, base=10**9 + batch * 10**6)
    turn = Counter()
    samples = interleave({"store": lambda: operations[turn.next()](store)}, rounds=count,
                         warmup=3, runner=runner)
    return figure(f"memory.append.{name}", f"MemoryStore append of {batch} draft(s)", samples,
                  events=batch, floor=None)


def catch_up_figure(
    store: LedgerStore, rounds: int, *, figure_id: str, runner: Runner | None = None
) -> Figure | None:
    """Catch-up of the built-in summary over a 1000-event conversation, from scratch each call.

    None when the store does not declare projections (PRJ-011). Each call
    uses a projection name of its own, so it folds all 1000 events.
    """
    if Capability.PROJECTIONS not in store.capabilities:
        return None
    projections = require(store, Capability.PROJECTIONS)
    from convledger.projections.builtins import SUMMARY

    turn = Counter()
    events = store.head(conversation_name(0))

    def catch_up() -> None:
        definition = attrs.evolve(SUMMARY, name=f"bench.summary.{turn.next()}")
        checkpoint = projections.catch_up(conversation_name(0), definition, max_events=10_000)
        assert checkpoint.upto_seq == events

    samples = interleave({"store": catch_up}, rounds=rounds, warmup=1, runner=runner)
    return figure(figure_id, f"projection catch-up of {events} events (built-in summary)",
                  samples, events=events, floor=None)


