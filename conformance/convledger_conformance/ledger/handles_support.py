"""What the ``multi_process`` checks stand on (chapter LED, "Several handles": LED-016 .. LED-019).

Second handles of one store (``store.open_handle()``), worker processes
(``python -m convledger_conformance.ledger.handle_worker LOCATOR``, one
:class:`Worker` each), threads appending batches, and what a handle's ledger
holds, with failures that name the handle, the operation and what came. The
checks themselves are in :mod:`convledger_conformance.ledger.checks_handles`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

from convledger.handles import MultiProcessStore, StoreLocator
from convledger.interface import require
from convledger.store import Capability, LedgerStore
from convledger_conformance.support import accepted, draft, fail

WORKER = "convledger_conformance.ledger.handle_worker"
"""The module a worker process runs (``python -m WORKER LOCATOR_JSON``)."""
WORKER_TIMEOUT = 60.0
"""Seconds a worker process may take to answer one command."""


def handles_of(store: LedgerStore, ids: Sequence[str]) -> MultiProcessStore:
    """The store as :class:`MultiProcessStore` (the checks run only when it is declared)."""
    del ids
    return require(store, Capability.MULTI_PROCESS)


@contextlib.contextmanager
def second_handles(
    store: LedgerStore, count: int, ids: Sequence[str]
) -> Iterator[list[LedgerStore]]:
    """``count`` more handles from ``store.open_handle()``, closed afterwards."""
    source = handles_of(store, ids)
    opened: list[LedgerStore] = []
    try:
        for number in range(count):
            opened.append(accepted(source.open_handle, ids, f"open_handle #{number + 1}"))
        yield opened
    finally:
        for handle in opened:
            handle.close()


class Worker:
    """Another process holding a handle opened from a locator (``handle_worker``)."""

    def __init__(self, locator: StoreLocator, ids: Sequence[str], name: str) -> None:
        self.ids = tuple(ids)
        self.name = name
        paths = [entry for entry in sys.path if isinstance(entry, str) and entry]
        self.process = subprocess.Popen(
            [sys.executable, "-m", WORKER, locator.to_json()],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        )
        self.receive("open_located")

    def send(self, command: dict[str, object]) -> None:
        """Send one command; its answer comes from :meth:`receive`."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def receive(self, operation: str) -> dict[str, object]:
        """The next answer; a dead or refusing worker fails ``ids`` naming ``operation``."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.kill()
            _, errors = self.process.communicate(timeout=WORKER_TIMEOUT)
            fail(self.ids, f"{operation} in {self.name}: the process ended: {errors.strip()}")
        reply: dict[str, object] = json.loads(line)
        if "error" in reply:
            fail(self.ids, f"{operation} in {self.name}: expected success, got {reply['error']}"
                           f" (after {reply.get('placed', [])!r})")
        return reply

    def call(self, command: dict[str, object]) -> dict[str, object]:
        """Send one command and wait for its answer."""
        self.send(command)
        return self.receive(str(command["op"]))

    def read(self, conversation: str) -> list[tuple[int, str]]:
        """``(seq, eventId)`` of the whole ledger, read in the worker."""
        events = self.call({"op": "read", "conversation": conversation})["events"]
        assert isinstance(events, list)
        return [(int(seq), str(event_id)) for seq, event_id in events]

    def head(self, conversation: str) -> object:
        """The head, read in the worker."""
        return self.call({"op": "head", "conversation": conversation})["head"]

    def placed(self) -> list[list[int]]:
        """The seqs of each batch of the append sent last."""
        placed = self.receive("append")["placed"]
        assert isinstance(placed, list)
        return [[int(seq) for seq in seqs] for seqs in placed]

    def close(self) -> None:
        """End the worker (it closes its handle when stdin ends)."""
        with contextlib.suppress(Exception):
            self.process.communicate(timeout=WORKER_TIMEOUT)
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


@contextlib.contextmanager
def workers(store: LedgerStore, count: int, ids: Sequence[str]) -> Iterator[list[Worker]]:
    """``count`` worker processes on ``store.locator()``, ended afterwards."""
    locator = accepted(handles_of(store, ids).locator, ids, "locator")
    started: list[Worker] = []
    try:
        for number in range(count):
            started.append(Worker(locator, ids, f"process #{number + 1}"))
        yield started
    finally:
        for worker in started:
            worker.close()


def ledger_of(handle: LedgerStore, conversation: str) -> list[tuple[int, str]]:
    """``(seq, eventId)`` of the whole ledger through ``handle``, page by page."""
    found: list[tuple[int, str]] = []
    seq: int | None = 1
    while seq is not None:
        page = handle.read(conversation, from_seq=seq)
        found.extend((e.seq, e.event_id) for e in page.items)
        seq = page.next_seq
    return found


def expect_batches_placed(
    ids: Sequence[str],
    conversation: str,
    placed: dict[str, list[list[int]]],
    batches: dict[str, list[list[str]]],
    stored: list[tuple[int, str]],
) -> None:
    """Every batch at consecutive seqs, seqs 1..n, every eventId once and where it was placed.

    ``placed[writer]`` are the seqs each of the writer's ``batches[writer]``
    came back with; ``stored`` is the ledger as read afterwards.
    """
    where: dict[int, str] = {}
    for writer, seq_lists in placed.items():
        for seqs, event_ids in zip(seq_lists, batches[writer], strict=True):
            first = seqs[0] if seqs else 0
            if seqs != list(range(first, first + len(event_ids))):
                fail(ids, f"append of {len(event_ids)} through {writer} to {conversation!r}: "
                          f"expected consecutive seqs, got {seqs!r}")
            for seq, event_id in zip(seqs, event_ids, strict=True):
                if seq in where:
                    fail(ids, f"append through {writer} to {conversation!r}: seq {seq} was "
                              f"also returned to {where[seq]}")
                where[seq] = f"{writer} ({event_id})"
    total = sum(len(b) for bs in batches.values() for b in bs)
    seqs = [seq for seq, _ in stored]
    if seqs != list(range(1, total + 1)):
        fail(ids, f"read of {conversation!r} after concurrent appends of {total} events: "
                  f"expected seqs 1..{total}, got {_summary(seqs)}")
    event_ids = [event_id for _, event_id in stored]
    if len(set(event_ids)) != len(event_ids):
        repeated = sorted({e for e in event_ids if event_ids.count(e) > 1})
        fail(ids, f"read of {conversation!r}: expected every eventId once, repeated {repeated}")
    for seq, event_id in stored:
        if not where.get(seq, "").endswith(f"({event_id})"):
            fail(ids, f"read of {conversation!r}: seq {seq} holds {event_id!r}, expected the "
                      f"event returned at that seq ({where.get(seq, 'none')})")


def _summary(seqs: Sequence[int]) -> str:
    """A short text of a seq list: its length, gaps and repeats."""
    present = set(seqs)
    gaps = [n for n in range(1, max(seqs, default=0) + 1) if n not in present][:5]
    repeats = sorted({n for n in seqs if seqs.count(n) > 1})[:5]
    return f"{len(seqs)} seqs, missing {gaps}, repeated {repeats}, last {seqs[-1:]}"


def _batches(prefix: str, count: int, sizes: Sequence[int] = (1, 2, 3)) -> list[list[str]]:
    """``count`` batches of eventIds ``prefix-b-n``, their sizes cycling through ``sizes``."""
    return [[f"{prefix}-{b}-{n}" for n in range(sizes[b % len(sizes)])] for b in range(count)]


def _threads(bodies: Sequence[Callable[[], None]]) -> list[BaseException]:
    """Run ``bodies`` in threads started together; the exceptions they raised."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(bodies))

    def run(body: Callable[[], None]) -> None:
        try:
            barrier.wait()
            body()
        except BaseException as error:  # reported by the caller, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _appender(handle: LedgerStore, conversation: str, batches: list[list[str]],
              into: list[list[int]]) -> Callable[[], None]:
    def body() -> None:
        for batch in batches:
            placed = handle.append(conversation, [draft(event_id) for event_id in batch])
            into.append([e.seq for e in placed])

    return body
