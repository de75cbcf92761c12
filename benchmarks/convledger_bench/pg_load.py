"""Writer processes on one PostgreSQL store, and the audit of what they left (issue 15).

A writer is a process (``python -m convledger_bench.pg_load DSN SCHEMA NAME
CONVERSATION BATCHES SIZE LOG``) that opens its own :class:`PostgresStore`
handle, prints ``ready``, waits for ``go`` on stdin and then appends
``BATCHES`` batches of ``SIZE`` events to ``CONVERSATION`` (``hot`` for one
conversation shared by every writer, anything else for one of its own). Each
batch's eventIds are ``NAME-b<number>-<i>``. After every call it writes one
JSON line to ``LOG`` and flushes it: ``{"batch", "seqs"}`` once an append
returned (the write is *acknowledged*), ``{"batch", "kind"}`` for a typed
refusal, ``{"batch", "untyped"}`` for any other exception, and a last line
``{"done", "started", "ended"}`` with its monotonic clock.

A refusal ``unavailable`` (the server restarted, PGS-013) makes the writer
wait and send the same batch again on the same handle, which must reconnect;
``duplicate`` for a batch sent again means its first attempt committed (its
answer was lost), which :func:`audit` confirms. A writer killed with SIGKILL
leaves a log whose acknowledged lines are exactly what it was told.

:func:`audit` reads the store afterwards: every conversation holds seqs 1..n,
no eventId is stored twice, every acknowledged batch is stored whole at the
seqs it was acknowledged with, and every batch is stored whole or not at all.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

RETRY_PAUSE = 0.05
"""Seconds a writer waits before sending a batch again after ``unavailable``."""
RETRY_LIMIT = 600
"""How often a writer sends one batch again before it gives up (30 s of ``unavailable``)."""


def event_ids(name: str, batch: int, size: int) -> list[str]:
    """The eventIds of one writer's batch."""
    return [f"{name}-b{batch}-{i}" for i in range(size)]


def write(dsn: str, schema: str, name: str, conversation: str, batches: int, size: int,
          log: Path) -> None:
    """The writer process's body (see the module's docstring)."""
    from convledger.envelope import EventDraft
    from convledger.errors import LedgerError
    from convledger.postgres import PostgresStore

    store = PostgresStore(dsn, schema=schema, lock_timeout=60.0)
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.monotonic()
    with log.open("a", encoding="utf-8") as out:
        for batch in range(batches):
            drafts = [EventDraft(event_id=event_id, kind="state/set",
                                 occurred_at="2024-01-01T00:00:00Z",
                                 payload={"name": "n", "version": 1, "value": batch,
                                          "actor": name})
                      for event_id in event_ids(name, batch, size)]
            for attempt in range(RETRY_LIMIT):
                line: dict[str, Any] = {"batch": batch, "attempt": attempt}
                try:
                    placed = store.append(conversation, drafts)
                    line["seqs"] = [envelope.seq for envelope in placed]
                except LedgerError as error:
                    line["kind"] = error.kind
                except Exception as error:  # an untyped error is a defect (ERR-006)
                    line["untyped"] = f"{type(error).__name__}: {error}"
                out.write(json.dumps(line) + "\n")
                out.flush()
                if line.get("kind") != "unavailable":
                    break
                time.sleep(RETRY_PAUSE)
        out.write(json.dumps({"done": True, "started": started, "ended": time.monotonic()})
                  + "\n")
    store.close()


@attrs.define
class Writer:
    """One writer process and its log."""

    name: str
    conversation: str
    batches: int
    size: int
    log: Path
    process: subprocess.Popen[str]

    @classmethod
    def start(cls, dsn: str, schema: str, name: str, conversation: str, batches: int,
              size: int, directory: Path) -> Writer:
        """Spawn the writer; it connects and waits for :meth:`go`."""
        log = directory / f"{name}.jsonl"
        command = [sys.executable, "-m", "convledger_bench.pg_load", dsn, schema, name,
                   conversation, str(batches), str(size), str(log)]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
        return cls(name, conversation, batches, size, log, process)

    def ready(self) -> None:
        """Wait until the writer has opened its handle."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"writer {self.name} did not start (exit {self.process.wait()})")

    def go(self) -> None:
        """Let it write."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def lines(self) -> list[dict[str, Any]]:
        """Its log's complete lines (a line cut by SIGKILL is dropped)."""
        if not self.log.exists():
            return []
        found = []
        for text in self.log.read_text(encoding="utf-8").splitlines():
            try:
                found.append(json.loads(text))
            except ValueError:
                continue
        return found

    def acknowledged(self) -> dict[int, list[int]]:
        """Batch number -> the seqs its append returned."""
        return {line["batch"]: line["seqs"] for line in self.lines() if "seqs" in line}

    def wait(self, timeout: float = 600.0) -> int:
        """Wait for the process to end, then close its pipes; its exit status."""
        code = self.process.wait(timeout)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a killed writer's stdin may be broken
                    pipe.close()
        return code


@attrs.frozen
class Audit:
    """What :func:`audit` found; ``ok`` when nothing is wrong."""

    events: int
    acknowledged_batches: int
    acknowledged_events: int
    lost: int
    """Acknowledged events not stored, or stored at another seq."""
    partial: int
    """Batches stored in part."""
    gaps: int
    """Conversations whose seqs are not 1..n."""
    duplicated_event_ids: int
    kinds: dict[str, int]
    """Refusals by kind (``unavailable`` retried; ``duplicate`` only for a batch sent again)."""
    untyped: int
    unexpected: int
    """Refusals other than ``unavailable`` and a ``duplicate`` of a batch sent again."""
    ambiguous_resolved: int
    """Batches whose first answer was lost, found stored whole after ``duplicate``."""

    @property
    def ok(self) -> bool:
        """No loss, no partial batch, no gap, no eventId twice, no untyped or unexpected error."""
        return not (self.lost or self.partial or self.gaps or self.duplicated_event_ids
                    or self.untyped or self.unexpected)


Ledgers = dict[str, list[tuple[int, str]]]


def _stored(dsn: str, schema: str, conversations: Iterable[str]) -> Ledgers:
    from convledger.postgres import PostgresStore

    store = PostgresStore(dsn, schema=schema)
    try:
        found: Ledgers = {}
        for conversation in sorted(set(conversations)):
            items: list[tuple[int, str]] = []
            while True:
                page = store.read(conversation, from_seq=len(items) + 1, limit=1000).items
                items += [(envelope.seq, envelope.event_id) for envelope in page]
                if len(page) < 1000:
                    break
            found[conversation] = items
        return found
    finally:
        store.close()


def audit(dsn: str, schema: str, writers: Sequence[Writer]) -> Audit:
    """Read the store and every log; count what is wrong (see the module's docstring)."""
    stored = _stored(dsn, schema, (w.conversation for w in writers))
    where: dict[str, tuple[str, int]] = {}
    duplicated = 0
    gaps = 0
    for conversation, items in stored.items():
        if [seq for seq, _ in items] != list(range(1, len(items) + 1)):
            gaps += 1
        for seq, event_id in items:
            if event_id in where:
                duplicated += 1
            where[event_id] = (conversation, seq)
    kinds: Counter[str] = Counter()
    lost = partial = untyped = unexpected = resolved = 0
    acknowledged_batches = acknowledged_events = 0
    for writer in writers:
        lines = writer.lines()
        acked = writer.acknowledged()
        retried: set[int] = {line["batch"] for line in lines if line.get("attempt", 0) > 0}
        for line in lines:
            if "kind" in line:
                kinds[line["kind"]] += 1
                if line["kind"] == "duplicate" and line["batch"] in retried:
                    resolved += 1
                elif line["kind"] != "unavailable":
                    unexpected += 1
            untyped += "untyped" in line
        for batch in range(writer.batches):
            ids = event_ids(writer.name, batch, writer.size)
            present = [where.get(event_id) for event_id in ids]
            count = sum(item is not None for item in present)
            if 0 < count < len(ids):
                partial += 1
            if batch in acked:
                acknowledged_batches += 1
                acknowledged_events += len(ids)
                expected = [(writer.conversation, seq) for seq in acked[batch]]
                lost += sum(got != want for got, want in zip(present, expected, strict=True))
    return Audit(events=sum(len(items) for items in stored.values()),
                 acknowledged_batches=acknowledged_batches,
                 acknowledged_events=acknowledged_events, lost=lost, partial=partial, gaps=gaps,
                 duplicated_event_ids=duplicated, kinds=dict(sorted(kinds.items())),
                 untyped=untyped, unexpected=unexpected, ambiguous_resolved=resolved)


def new_schema(dsn: str) -> str:
    """A fresh schema name for one run (the caller drops it)."""
    import uuid

    return f"convledger_load_{uuid.uuid4().hex[:12]}"


def drop(dsn: str, schema: str) -> None:
    """Drop the run's schema."""
    from convledger.postgres.factories import drop_schema

    drop_schema(dsn, schema)


def create(dsn: str, schema: str) -> None:
    """Create the run's schema (one opener, so writers only open it)."""
    from convledger.postgres import PostgresStore

    PostgresStore(dsn, schema=schema).close()


@attrs.frozen
class WriterRun:
    """One row of the writer table: ``count`` writers, hot or distinct conversations."""

    count: int
    hot: bool
    appends: int
    seconds: float
    audit: Audit

    @property
    def per_second(self) -> float:
        """Acknowledged appends per second, all writers together."""
        return self.appends / self.seconds if self.seconds else 0.0


def run_writers(dsn: str, count: int, *, hot: bool, batches: int, size: int,
                directory: Path) -> WriterRun:
    """``count`` writer processes on a fresh schema, started together; audited, then dropped.

    The time is from the earliest writer's first append to the latest one's
    last (each writer's own clock is the machine's monotonic clock).
    """
    schema = new_schema(dsn)
    logs = directory / schema
    logs.mkdir(parents=True)
    create(dsn, schema)
    try:
        writers = [Writer.start(dsn, schema, f"w{n}", "hot" if hot else f"own-{n}", batches,
                                size, logs) for n in range(count)]
        for writer in writers:
            writer.ready()
        for writer in writers:
            writer.go()
        for writer in writers:
            writer.wait()
        found = audit(dsn, schema, writers)
        spans = [line for w in writers for line in w.lines() if line.get("done")]
        seconds = (max(s["ended"] for s in spans) - min(s["started"] for s in spans)
                   if len(spans) == count else 0.0)
        return WriterRun(count, hot, found.acknowledged_batches, seconds, found)
    finally:
        drop(dsn, schema)


if __name__ == "__main__":
    dsn_, schema_, name_, conversation_, batches_, size_, log_ = sys.argv[1:8]
    write(dsn_, schema_, name_, conversation_, int(batches_), int(size_), Path(log_))
