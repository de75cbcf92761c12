"""The in-memory reference store: append and bounded read at several ledger sizes (issue 8).

* append of one event, and of a batch of 100, into a store that already holds
  ``ledger_size`` events spread over many conversations (``conftest.fill_plan``);
* a bounded read of a page of 100 envelopes (LED-007), decoded into
  :class:`~convledger.envelope.Envelope` objects as a caller receives them.

Each size-dependent group has the smallest size as its baseline, so the closing
table shows how the cost scales with the ledger: ``x1.00`` means flat.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import EVENTS_PER_CONVERSATION, MemoryLedger, ledger_sizes

PAGE = 100


def _baseline(request: pytest.FixtureRequest, ledger_size: int) -> bool:
    return ledger_size == min(ledger_sizes(request.config))


def _bench_append(
    benchmark: Any, request: pytest.FixtureRequest, ledger: MemoryLedger, batch: int, rounds: int
) -> None:
    turn = iter(range(10**9))

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        ledger.keep_size()
        drafts = ledger.fresh_drafts(batch)
        ledger.appended += batch
        return (ledger.conversation(next(turn)), drafts), {}

    def append(conversation_id: str, drafts: list[Any]) -> None:
        placed = ledger.store.append(conversation_id, drafts)
        assert len(placed) == batch

    benchmark.extra_info.update(events=batch, baseline=_baseline(request, ledger.size))
    benchmark.pedantic(append, setup=setup, rounds=rounds, warmup_rounds=2)


@pytest.mark.benchmark(group="memory: append 1 event")
def test_append_one(
    benchmark: Any, request: pytest.FixtureRequest, memory_ledger: MemoryLedger, ledger_size: int
) -> None:
    """Events/s of single-event appends, each its own call (LED-001)."""
    _bench_append(benchmark, request, memory_ledger, batch=1, rounds=300)


@pytest.mark.benchmark(group="memory: append a batch of 100")
def test_append_batch_100(
    benchmark: Any, request: pytest.FixtureRequest, memory_ledger: MemoryLedger, ledger_size: int
) -> None:
    """Events/s of appends of 100 drafts in one call (LED-001, all or nothing)."""
    _bench_append(benchmark, request, memory_ledger, batch=100, rounds=20)


@pytest.mark.benchmark(group="memory: read a page of 100")
def test_read_page_100(
    benchmark: Any, request: pytest.FixtureRequest, memory_ledger: MemoryLedger, ledger_size: int
) -> None:
    """Events/s of bounded reads of 100 envelopes, walking conversations round robin (LED-007)."""
    turn = iter(range(10**9))
    pages = EVENTS_PER_CONVERSATION // PAGE

    def read() -> None:
        number = next(turn)
        page = memory_ledger.store.read(
            memory_ledger.conversation(number), from_seq=1 + (number % pages) * PAGE, limit=PAGE
        )
        assert len(page.items) == PAGE

    benchmark.extra_info.update(events=PAGE, baseline=_baseline(request, ledger_size))
    benchmark(read)
