"""The PostgreSQL store beside eventsourcing's PostgreSQL recorder, same events, same run.

An optional figure (the ``peers`` extra: ``pip install -e ".[peers]"``):
:func:`peer_figure` appends the same benchmark events (``workloads.draft``)
through :class:`~convledger.postgres.PostgresStore` and through
``eventsourcing.postgres.PostgresApplicationRecorder`` (eventsourcing 9), each
in a fresh schema of the same database, one operation each per round
(``measure.interleave``), and reads pages of 100 from the same 1000 events
stored by each. The ratio is the peer's median over the store's (above 1.0:
the store is faster).

What each side does:

* the store: everything its ``append`` and ``read`` do (validation, canonical
  JSON, the search words, the conversation lock, reading the head);
* the peer: an application's use of the recorder: ``json.dumps`` of each
  payload into a ``StoredEvent`` (originator id = conversation id as text,
  originator version = seq, topic = kind) and ``insert_events`` of the batch;
  a read is ``select_events(conversation, gt=start - 1, limit=100)`` and
  ``json.loads`` of each state. It validates nothing and indexes no words.

Both commit with the server's ``synchronous_commit`` (on, the default; the
figure says so, and refuses to run when either connection has it off). The
schemas are dropped by :meth:`Peers.close`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from convledger.envelope import EventDraft
from convledger.postgres import PostgresStore
from convledger.postgres.factories import drop_schema
from convledger_bench.measure import Counter, Figure, Runner, figure, interleave
from convledger_bench.workloads import draft

MISSING = "peers not installed: pip install -e '.[peers]' (eventsourcing[postgres])"
"""What the figure says, instead of failing, when eventsourcing is absent."""

PAGE = 100
FILLED = 1000
"""Events of the one conversation the reads page through."""


def available() -> bool:
    """Whether eventsourcing's PostgreSQL recorder can be imported."""
    try:
        import eventsourcing.postgres  # noqa: F401
    except ImportError:
        return False
    return True


def _datastore(dsn: str, schema: str) -> Any:
    from eventsourcing.postgres import PostgresDatastore

    parts = urlsplit(dsn)
    return PostgresDatastore(
        dbname=parts.path.lstrip("/") or "postgres", host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432, user=parts.username or "postgres",
        password=parts.password or "", schema=schema, originator_id_type="text",
    )


@attrs.define
class Peers:
    """A store and a recorder, each in a fresh schema of ``dsn``."""

    dsn: str
    prefix: str = attrs.Factory(lambda: f"convledger_bench_{uuid.uuid4().hex[:8]}")
    schemas: list[str] = attrs.Factory(list)
    closers: list[Callable[[], None]] = attrs.Factory(list)

    def store(self, role: str) -> PostgresStore:
        schema = f"{self.prefix}_{role}"
        self.schemas.append(schema)
        store = PostgresStore(self.dsn, schema=schema)
        self.closers.append(store.close)
        return store

    def recorder(self, role: str) -> Any:
        import psycopg
        from eventsourcing.postgres import PostgresApplicationRecorder

        schema = f"{self.prefix}_{role}"
        self.schemas.append(schema)
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            connection.execute(psycopg.sql.SQL("CREATE SCHEMA {}").format(
                psycopg.sql.Identifier(schema)))
        datastore = _datastore(self.dsn, schema)
        self.closers.append(datastore.close)
        recorder = PostgresApplicationRecorder(datastore)
        recorder.create_table()
        return recorder

    def close(self) -> None:
        for close in self.closers:
            close()
        for schema in self.schemas:
            drop_schema(self.dsn, schema)


def _synchronous_commit(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as connection:
        found = connection.execute("SHOW synchronous_commit").fetchone()
    return "" if found is None else str(found[0])


def stored_events(conversation_id: str, first_seq: int, drafts: Sequence[EventDraft]) -> list[Any]:
    """The peer's records of ``drafts``: the application's own serialization of each payload."""
    from eventsourcing.persistence import StoredEvent

    return [
        StoredEvent(originator_id=conversation_id, originator_version=first_seq + offset,
                    topic=item.kind, state=json.dumps(item.payload, separators=(",", ":"),
                                                      ensure_ascii=False).encode("utf-8"))
        for offset, item in enumerate(drafts)
    ]


def peer_figure(dsn: str, name: str, rounds: int, *, runner: Runner | None = None,
                warmup: int = 3) -> Figure:
    """``postgres.peer.eventsourcing.{single,batch100,read.page100}``: recorder over store."""
    setting = _synchronous_commit(dsn)
    if setting != "on":
        raise RuntimeError(f"synchronous_commit is {setting!r}: the figure needs it on")
    peers = Peers(dsn)
    try:
        store, recorder = peers.store("store"), peers.recorder("eventsourcing")
        count = rounds + warmup
        if name.startswith("read"):
            return _read_figure(store, recorder, rounds, count, runner=runner, warmup=warmup)
        batch = {"single": 1, "batch100": 100}[name]
        batches = [[draft(7 * 10**8 + turn * batch + i) for i in range(batch)]
                   for turn in range(count)]
        turns = {"store": Counter(), "peer": Counter()}

        def store_append() -> None:
            store.append("conv-peer", batches[turns["store"].next()])

        def peer_append() -> None:
            turn = turns["peer"].next()
            recorder.insert_events(stored_events("conv-peer", 1 + turn * batch, batches[turn]))

        samples = interleave({"store": store_append, "peer": peer_append}, rounds=rounds,
                             warmup=warmup, runner=runner)
        return figure(f"postgres.peer.eventsourcing.{name}",
                      f"eventsourcing's PostgreSQL recorder over PostgresStore, {name}",
                      samples, events=batch, floor="peer")
    finally:
        peers.close()


def _read_figure(store: PostgresStore, recorder: Any, rounds: int, count: int, *,
                 runner: Runner | None, warmup: int) -> Figure:
    events = [draft(8 * 10**8 + i) for i in range(FILLED)]
    for start in range(0, FILLED, 100):
        store.append("conv-peer", events[start:start + 100])
        recorder.insert_events(stored_events("conv-peer", 1 + start, events[start:start + 100]))
    starts = [1 + (turn * PAGE * 3) % (FILLED - PAGE) for turn in range(count)]
    turns = {"store": Counter(), "peer": Counter()}

    def store_read() -> None:
        page = store.read("conv-peer", from_seq=starts[turns["store"].next()], limit=PAGE)
        assert len(page.items) == PAGE

    def peer_read() -> None:
        start = starts[turns["peer"].next()]
        found = recorder.select_events("conv-peer", gt=start - 1, limit=PAGE)
        assert len([json.loads(item.state) for item in found]) == PAGE

    samples = interleave({"store": store_read, "peer": peer_read}, rounds=rounds,
                         warmup=warmup, runner=runner)
    return figure(f"postgres.peer.eventsourcing.read.page{PAGE}",
                  f"eventsourcing's PostgreSQL recorder over PostgresStore, page of {PAGE}",
                  samples, events=PAGE, floor="peer")
