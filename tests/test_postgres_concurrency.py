"""Writers in several processes on one PostgreSQL store (PGS-010, LED-017, PGS-004).

Each worker process opens its own handle from the store's locator (LED-016)
and appends batches at once with the others: to one hot conversation and to
a conversation of its own. Afterwards every conversation holds the seqs 1..n,
each batch at the consecutive seqs its append returned, and every eventId
once. A second round appends the same eventIds to different conversations
from every process: exactly one append of each eventId is stored, the others
are refused with ``duplicate`` (the unique constraint of PGS-004).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator

import pytest

from conftest import draft
from convledger.errors import LedgerError
from convledger.handles import StoreLocator, open_located

pytest.importorskip("psycopg")

from convledger.postgres import PostgresStore, schema_store_factory

WORKERS = 4
BATCHES = 15


def _writer(locator_json: str, worker: int) -> list[tuple[str, list[int]]]:
    store = open_located(StoreLocator.from_json(locator_json))
    placed: list[tuple[str, list[int]]] = []
    try:
        for batch in range(BATCHES):
            for conversation in ("hot", f"own-{worker}"):
                drafts = [draft(f"{conversation}-{worker}-{batch}-{i}") for i in range(2)]
                envelopes = store.append(conversation, drafts)
                placed.append((conversation, [envelope.seq for envelope in envelopes]))
    finally:
        store.close()
    return placed


def _clasher(locator_json: str, worker: int) -> list[str]:
    store = open_located(StoreLocator.from_json(locator_json))
    kinds: list[str] = []
    try:
        for number in range(BATCHES):
            try:
                store.append(f"clash-{worker}", [draft(f"shared-{number}")])
                kinds.append("stored")
            except LedgerError as error:
                kinds.append(error.kind)
    finally:
        store.close()
    return kinds


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    made = schema_store_factory(pg_dsn)()
    yield made
    made.close()


def test_writer_processes_take_seqs_one_after_the_other(store: PostgresStore) -> None:
    """PGS-010, LED-017: seqs 1..n per conversation, whole batches, no eventId twice."""
    locator = store.locator().to_json()
    with multiprocessing.get_context("spawn").Pool(WORKERS) as pool:
        results = pool.starmap(_writer, [(locator, worker) for worker in range(WORKERS)])
    for conversation, expected in [("hot", WORKERS * BATCHES * 2)] + [
        (f"own-{worker}", BATCHES * 2) for worker in range(WORKERS)
    ]:
        items = store.read(conversation, limit=10000).items
        assert [envelope.seq for envelope in items] == list(range(1, expected + 1))
        assert len({envelope.event_id for envelope in items}) == expected
    for placed in results:
        for _, seqs in placed:
            assert seqs == [seqs[0], seqs[0] + 1]

    with multiprocessing.get_context("spawn").Pool(WORKERS) as pool:
        outcomes = pool.starmap(_clasher, [(locator, worker) for worker in range(WORKERS)])
    for number in range(BATCHES):  # PGS-004: one conversation stores each eventId
        kinds = sorted(outcome[number] for outcome in outcomes)
        assert kinds == ["duplicate"] * (WORKERS - 1) + ["stored"], kinds
