"""Search latency (capability ``search``): one-word searches against the replay of their FTS5
statements, and the large ledger against the small."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from convledger.capabilities import Capability
from convledger.interface import require
from convledger.search.store import SearchStore
from convledger.store import LedgerStore
from convledger_bench.floor import raw_connection, replay
from convledger_bench.measure import Counter, Figure, Plan, Runner, figure, interleave
from convledger_bench.recorder import Statement, recording, recording_store
from convledger_bench.workloads import conversation_name, conversations_of

SEARCH_WORDS = ("assertion", "archive", "escaped", "encoder", "suite", "café", "failing", "writer")
"""One-word queries, all from the text of every benchmark event (so each matches every event)."""
SEARCH_LIMIT = 20
"""Hits per search (the store's default, SRC-023)."""
SEARCH_READER = "conv-reader"
"""The requester of ``search.granted``: a conversation with no events, so the own part finds
nothing and the search goes on to the other conversations (SRC-011)."""
SEARCH_MODES = ("own", "granted")


def every_tenth(conversation_id: str) -> bool:
    """The ``search.granted`` callback: grants conversations whose number ends in 0 (~10 %)."""
    return conversation_id.endswith("0")


SearchQuery = tuple[str, str, Callable[[str], bool] | None]
"""(requester, query, authorize) of one search."""


def search_queries(size: int, mode: str, count: int, *, seed: int = 13) -> list[SearchQuery]:
    """``count`` one-word searches of ``mode`` (``own``: a random conversation of the ledger, no
    callback; ``granted``: :data:`SEARCH_READER` with :func:`every_tenth`)."""
    rng = random.Random(seed)
    queries: list[SearchQuery] = []
    for turn in range(count):
        word = SEARCH_WORDS[turn % len(SEARCH_WORDS)]
        if mode == "own":
            queries.append((conversation_name(rng.randrange(conversations_of(size))), word, None))
        elif mode == "granted":
            queries.append((SEARCH_READER, word, every_tenth))
        else:
            raise ValueError(f"unknown search mode {mode!r}")
    return queries


def _search(store: SearchStore, query: SearchQuery) -> tuple[Any, ...]:
    requester, text, authorize = query
    return store.search(requester, text, limit=SEARCH_LIMIT, authorize=authorize)


def _found(hits: Sequence[Any]) -> list[tuple[str, int]]:
    return [(hit.conversation_id, hit.seq) for hit in hits]


class SearchFloor:
    """The raw floor of search figures: a recording reference store and a bare connection.

    Both read one copy of the reference ledger (searches write nothing).
    :meth:`record` runs searches on the reference store while its
    :class:`~convledger_bench.recorder.RecordingConnection` records, and
    returns each one's statements and hits.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store, self.recorder = recording_store(path)
        self.raw = raw_connection(path)

    def record(
        self, queries: Sequence[SearchQuery]
    ) -> tuple[list[list[Statement]], list[list[tuple[str, int]]]]:
        """The statements the reference store runs for each search, and the hits it returns."""
        logs: list[list[Statement]] = []
        found: list[list[tuple[str, int]]] = []
        with recording(self.recorder) as recorder:
            for query in queries:
                found.append(_found(_search(self.store, query)))
                logs.append(recorder.take())
        return logs, found

    def close(self) -> None:
        """Close both connections."""
        self.store.close()
        self.raw.close()


def searchable(store: LedgerStore) -> SearchStore | None:
    """The store, when it declares capability ``search`` (else None: the figure is skipped)."""
    if Capability.SEARCH in store.capabilities:
        return require(store, Capability.SEARCH)
    return None


def search_figure(
    store: SearchStore,
    floor: SearchFloor,
    size: int,
    mode: str,
    rounds: int,
    *,
    warmup: int = 2,
    runner: Runner | None = None,
) -> Figure:
    """``search.{mode}@{size}``: one-word searches against the raw replay of their statements.

    The store must return the hits the reference store returns (conversation
    and seq, SRC-003 order) for every prepared search, checked before timing.
    """
    queries = search_queries(size, mode, rounds + warmup)
    logs, expected = floor.record(queries)
    for query, hits in zip(queries, expected, strict=True):
        assert len(hits) == SEARCH_LIMIT, (query, hits)
        assert _found(_search(store, query)) == hits, query
    store_turn, raw_turn = Counter(), Counter()
    samples = interleave(
        {
            "store": lambda: _search(store, queries[store_turn.next()]),
            "floor": lambda: replay(floor.raw, logs[raw_turn.next()]),
        },
        rounds=rounds, warmup=warmup, runner=runner,
    )
    who = "a conversation of the ledger, no callback" if mode == "own" else (
        "a reader with no events, every tenth conversation granted")
    return figure(f"search.{mode}@{size:.0e}", f"one-word search ({SEARCH_LIMIT} hits) by {who}, "
                  f"ledger of {size:,} events", samples, events=1)


def search_scaling_figure(
    small: SearchStore,
    large: SearchStore,
    sizes: tuple[int, int],
    mode: str,
    rounds: int,
    *,
    warmup: int = 2,
    runner: Runner | None = None,
) -> Figure:
    """``search.scaling`` (own) or ``search.granted.scaling``: large size against small."""
    queries = {size: search_queries(size, mode, rounds + warmup, seed=17) for size in sizes}
    turns = {size: Counter() for size in sizes}

    def searcher(store: SearchStore, size: int) -> Callable[[], None]:
        def search() -> None:
            assert len(_search(store, queries[size][turns[size].next()])) == SEARCH_LIMIT

        return search

    samples = interleave(
        {"floor": searcher(small, sizes[0]), "store": searcher(large, sizes[1])},
        rounds=rounds, warmup=warmup, runner=runner,
    )
    name = "search.scaling" if mode == "own" else f"search.{mode}.scaling"
    return figure(name, f"{mode} search at {sizes[1]:,} events against {sizes[0]:,}", samples,
                  events=1)


def search_rounds(plan: Plan, mode: str) -> int:
    """Rounds of a search figure: ``granted`` searches cost tens of ms at 1e5, so half as many."""
    return plan.search_rounds if mode == "own" else max(10, plan.search_rounds // 2)

