"""The peers: other Python event stores on SQLite, appending and reading the same events.

Optional extra ``peers`` (``pip install -e '.[peers]'``): eventsourcing's
SQLite recorder (``SQLiteApplicationRecorder``) and langgraph's SQLite
checkpointer (``SqliteSaver``). When either is missing, :func:`open_peers`
returns no peers and the reason (:data:`PEERS_MISSING`), and every figure
that would have measured them says so instead.

**Durability, set equal.** The store opens its file in WAL with
``synchronous=FULL`` (its default). Each peer gets the same:

* eventsourcing's ``SQLiteConnectionPool`` switches a file to WAL itself and
  leaves ``synchronous`` at SQLite's default; each pooled connection is made by
  ``_create_connection``, which :class:`EventsourcingPeer` wraps (on its own
  pool instance) to run ``PRAGMA synchronous = FULL`` on it;
* langgraph's ``SqliteSaver`` takes the connection it is given and runs
  ``PRAGMA journal_mode=WAL`` in ``setup()``; :class:`LanggraphPeer` opens that
  connection and runs ``PRAGMA synchronous = FULL`` on it.

:meth:`EventsourcingPeer.durability` and :meth:`LanggraphPeer.durability`
read both pragmas back from the peer's own connections (the tests check them).

**The same events.** A peer ledger holds the benchmark ledger's events
(:func:`~convledger_bench.workloads.fill_plan`): conversation ``conv-N`` is
eventsourcing's originator ``conv-N`` (text ids), and langgraph's thread
``conv-N``; an event's payload is the stored state (canonical JSON bytes) or
the checkpoint's channel value (serialized by langgraph's own serializer). A
peer ledger is filled row for row as the peer writes it, many rows per
transaction, so setup stays short.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convledger import canonical
from convledger_bench.workloads import OCCURRED_AT, draft, fill_plan

PEERS_MISSING = "peers not installed (pip install -e '.[peers]')"
TOPIC = "provider/message"


def peers_missing() -> str | None:
    """None when both peers import, else why they cannot be measured."""
    try:
        import eventsourcing.sqlite  # noqa: F401
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        return PEERS_MISSING
    return None


def _state(index: int) -> bytes:
    return canonical.encode(draft(index).payload)


class EventsourcingPeer:
    """eventsourcing's ``SQLiteApplicationRecorder`` on one file, WAL + ``synchronous=FULL``."""

    def __init__(self, path: Path) -> None:
        from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

        self.datastore = SQLiteDatastore(str(path), originator_id_type="text")
        pool = self.datastore.pool
        create = pool._create_connection  # the pool's factory of connections

        def create_full() -> Any:
            made = create()
            made._sqlite_conn.execute("PRAGMA synchronous = FULL")
            return made

        pool._create_connection = create_full
        self.recorder = SQLiteApplicationRecorder(self.datastore)
        self.recorder.create_table()
        self.heads: dict[str, int] = {}
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute("SELECT originator_id, max(originator_version) FROM stored_events"
                           " GROUP BY originator_id")
            for row in cursor.fetchall():
                self.heads[str(row[0])] = int(row[1])

    def durability(self) -> tuple[str, int]:
        """(journal_mode, synchronous) of the recorder's writer connection."""
        with self.datastore.get_connection(commit=True) as connection:
            raw = connection._sqlite_conn
            mode = raw.execute("PRAGMA journal_mode").fetchone()[0]
            return str(mode), int(raw.execute("PRAGMA synchronous").fetchone()[0])

    def events(self, conversation_id: str, indexes: Sequence[int]) -> list[Any]:
        """StoredEvents of these drafts after the conversation's head (the head moves on)."""
        from eventsourcing.persistence import StoredEvent

        head = self.heads.get(conversation_id, 0)
        self.heads[conversation_id] = head + len(indexes)
        return [StoredEvent(originator_id=conversation_id, originator_version=head + offset,
                            topic=TOPIC, state=_state(index))
                for offset, index in enumerate(indexes, start=1)]

    def insert(self, events: Sequence[Any]) -> None:
        """``insert_events``: one transaction."""
        self.recorder.insert_events(events)

    def select(self, conversation_id: str, after: int, limit: int) -> Sequence[Any]:
        """``select_events`` of up to ``limit`` events after version ``after``, undecoded."""
        found: Sequence[Any] = self.recorder.select_events(conversation_id, gt=after,
                                                           limit=limit)
        return found

    def close(self) -> None:
        """Close the pool."""
        self.datastore.close()


def checkpoint_id(seq: int) -> str:
    """A langgraph checkpoint id that sorts as ``seq`` does (list orders by it)."""
    return f"{seq:012d}"


class LanggraphPeer:
    """langgraph's ``SqliteSaver`` on one file, WAL + ``synchronous=FULL``."""

    def __init__(self, path: Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.connection = sqlite3.connect(path, check_same_thread=False)
        self.connection.execute("PRAGMA synchronous = FULL")
        self.saver = SqliteSaver(self.connection)
        self.saver.setup()
        self.heads: dict[str, int] = {
            str(thread): int(head) for thread, head in self.connection.execute(
                "SELECT thread_id, max(CAST(checkpoint_id AS INTEGER)) FROM checkpoints"
                " GROUP BY thread_id")
        }

    def durability(self) -> tuple[str, int]:
        """(journal_mode, synchronous) of the saver's connection."""
        mode = self.connection.execute("PRAGMA journal_mode").fetchone()[0]
        return str(mode), int(self.connection.execute("PRAGMA synchronous").fetchone()[0])

    def checkpoint(self, conversation_id: str, index: int) -> tuple[Any, Any, Any]:
        """(config, checkpoint, metadata) of one draft after the thread's head (it moves on)."""
        from langgraph.checkpoint.base import empty_checkpoint

        seq = self.heads.get(conversation_id, 0) + 1
        self.heads[conversation_id] = seq
        made = empty_checkpoint()
        made["id"] = checkpoint_id(seq)
        made["ts"] = OCCURRED_AT
        made["channel_values"] = {"event": draft(index).payload}
        parent = checkpoint_id(seq - 1) if seq > 1 else None
        config = {"configurable": {"thread_id": conversation_id, "checkpoint_ns": "",
                                   "checkpoint_id": parent}}
        return config, made, {"source": "loop", "step": seq}

    def put(self, prepared: tuple[Any, Any, Any]) -> None:
        """``SqliteSaver.put`` of one checkpoint (its own transaction)."""
        config, made, metadata = prepared
        self.saver.put(config, made, metadata, {})

    def list(self, conversation_id: str, before: int, limit: int) -> list[Any]:
        """``SqliteSaver.list`` of up to ``limit`` checkpoints before ``before`` (decoded)."""
        config: Any = {"configurable": {"thread_id": conversation_id}}
        cursor: Any = {"configurable": {"checkpoint_id": checkpoint_id(before)}}
        return list(self.saver.list(config, before=cursor, limit=limit))

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


def build_eventsourcing_file(path: Path, size: int) -> None:
    """An eventsourcing ledger of the benchmark's ``size`` events: its rows, 5000 a transaction."""
    peer = EventsourcingPeer(path)
    insert = "INSERT INTO stored_events VALUES (?, ?, ?, ?)"  # the recorder's columns, in order
    try:
        pending: list[tuple[Any, ...]] = []

        def flush() -> None:
            with peer.datastore.transaction(commit=True) as cursor:
                cursor.executemany(insert, pending)
            pending.clear()

        for conversation_id, indexes in fill_plan(size):
            pending.extend((event.originator_id, event.originator_version, event.topic,
                            event.state) for event in peer.events(conversation_id, indexes))
            if len(pending) >= 5000:
                flush()
        if pending:
            flush()
    finally:
        peer.close()


def build_langgraph_file(path: Path, size: int) -> None:
    """A langgraph ledger of the same events: ``put``'s own INSERT, 5000 per transaction."""
    peer = LanggraphPeer(path)
    saver = peer.saver
    insert = ("INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,"
              " parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)")
    try:
        pending: list[tuple[Any, ...]] = []

        def flush() -> None:
            with peer.connection:
                peer.connection.executemany(insert, pending)
            pending.clear()

        for conversation_id, indexes in fill_plan(size):
            for index in indexes:
                config, made, metadata = peer.checkpoint(conversation_id, index)
                kind, serialized = saver.serde.dumps_typed(made)
                pending.append((conversation_id, "", made["id"],
                                config["configurable"]["checkpoint_id"], kind, serialized,
                                json.dumps(metadata).encode()))
            if len(pending) >= 5000:
                flush()
        if pending:
            flush()
    finally:
        peer.close()



