"""K clients at once on two conversations, every call recorded (DUR-010 .. DUR-013).

:func:`concurrent_run` starts K servers on one location (a :class:`~.target.Target`)
and :func:`run_clients` runs one client per store (K servers, or K stores in
process) on two conversations, recording every call; after the hand-off
(:mod:`~.handoff`) it checks the ledgers (DUR-011) and the history
(:func:`~.history.check_history`, DUR-010, DUR-013).
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from convledger.errors import ConflictError, LedgerError
from convledger.interface import EveryOperation
from convledger_conformance.durability.handoff import hand_off
from convledger_conformance.durability.history import DEFAULT_BOUND, Call, Verdict, check_history
from convledger_conformance.durability.target import NotServed, Target
from convledger_conformance.durability.verify import Violation, read_all
from convledger_conformance.durability.workload import state_draft
from convledger_conformance.wire.connection import WireConnection, WireError

CONCURRENT_IDS = ("DUR-010", "DUR-011", "DUR-012", "DUR-013", "WIR-041")
"""What the concurrent runs judge."""


@attrs.define
class ConcurrentResult:
    """What a concurrent run recorded and what the checker said."""

    clients: int
    calls: list[Call] = attrs.field(factory=list)
    verdicts: list[Verdict] = attrs.field(factory=list)
    failures: list[Violation] = attrs.field(factory=list)
    checker_seconds: float = 0.0
    not_applicable: str = ""
    cleanup_error: str = ""

    @property
    def longest(self) -> int:
        return max((verdict.calls for verdict in self.verdicts), default=0)


CONCURRENT_CONVERSATIONS = ("con-x", "con-y")


def client_loop(store: EveryOperation, client: int, steps: int, seed: int,
                calls: list[Call], failures: list[Violation], lock: threading.Lock,
                conversations: tuple[str, ...] = CONCURRENT_CONVERSATIONS) -> None:
    """One client's calls, each recorded with its invocation and completion (DUR-010, DUR-012)."""
    rng = random.Random(seed * 7919 + client)
    seen: dict[str, int] = {}
    for step in range(steps):
        conversation = rng.choice(conversations)
        op = rng.choices(("append", "head", "read"), (5, 2, 1))[0]
        ids: tuple[str, ...] = ()
        expected = None
        invoked = time.monotonic()
        try:
            if op == "append":
                size = rng.choice((1, 1, 2, 3))
                ids = tuple(f"{conversation}-c{client}-{step}-{n}" for n in range(size))
                if rng.random() < 0.5:
                    expected = seen.get(conversation, 0)
                placed = store.append(conversation, [state_draft(i, i) for i in ids],
                                      expected_head=expected)
                value: Any = tuple(envelope.seq for envelope in placed)
                seen[conversation] = value[-1]
            elif op == "head":
                value = store.head(conversation)
                seen[conversation] = value
            else:
                page = store.read(conversation, limit=1000)
                value = tuple(envelope.event_id for envelope in page.items)
                if page.next_seq is not None:
                    raise AssertionError("a history read must fit in one page")
            outcome = "ok"
        except ConflictError as refusal:
            outcome, value = "conflict", refusal.actual
            if refusal.actual is not None:
                seen[conversation] = refusal.actual
        except LedgerError as refusal:
            outcome, value = refusal.kind, None
            if refusal.kind == "internal":
                with lock:
                    failures.append(Violation("DUR-012", f"client {client} {op}: {refusal!r}"))
                return
        except Exception as error:  # a lost server, a bug: never a refusal (DUR-012)
            with lock:
                failures.append(Violation("DUR-012", f"client {client} {op} failed: {error!r}"))
            return
        completed = time.monotonic()
        with lock:
            calls.append(Call(client, conversation, op, invoked, completed, ids, expected,
                              outcome, value))


def run_clients(stores: Sequence[EveryOperation], steps: int, seed: int,
                bound: int = DEFAULT_BOUND, prefix: str = "") -> ConcurrentResult:
    """Run one client per store at once on new conversations, then check history and ledgers.

    The conversations (``prefix`` + :data:`CONCURRENT_CONVERSATIONS`) must be new.
    """
    conversations = tuple(prefix + name for name in CONCURRENT_CONVERSATIONS)
    result = ConcurrentResult(clients=len(stores))
    lock = threading.Lock()
    barrier = threading.Barrier(len(stores))

    def client(index: int) -> None:
        barrier.wait()
        client_loop(stores[index], index, steps, seed, result.calls, result.failures, lock,
                    conversations)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    if not result.failures:  # then every client sees every other's append (handoff.py)
        try:
            hand_off(stores, conversations[0], result.calls)
        except Exception as error:  # a refusal, ``internal``, a lost server (DUR-012, DUR-015)
            result.failures.append(Violation("DUR-012", (
                f"the hand-off failed, so DUR-010 is not established: {error!r}")))
    _check_ledgers(stores[0], result, conversations)
    began = time.monotonic()
    result.verdicts = check_history(result.calls, bound)
    result.checker_seconds = time.monotonic() - began
    for verdict in result.verdicts:
        if verdict.status == "not_linearizable":
            result.failures.append(
                Violation("DUR-010", f"{verdict.conversation!r}: {verdict.detail}"))
    refusals = {call.outcome for call in result.calls} - {"ok", "conflict"}
    if refusals:
        result.failures.append(Violation("DUR-012", f"unexpected refusals {sorted(refusals)}"))
    return result


def _check_ledgers(store: EveryOperation, result: ConcurrentResult,
                   conversations: tuple[str, ...]) -> None:
    """DUR-011: seqs 1..n and no eventId twice, read after every client finished."""
    seen: set[str] = set()
    for conversation in conversations:
        try:
            events = read_all(store, conversation)
        except (LedgerError, WireError) as error:
            result.failures.append(Violation("DUR-011", f"reading {conversation!r}: {error!r}"))
            continue
        if [e.seq for e in events] != list(range(1, len(events) + 1)):
            result.failures.append(Violation("DUR-011", f"{conversation!r} seqs are not 1..n"))
        for event in events:
            if event.event_id in seen:
                result.failures.append(Violation("DUR-011", f"eventId {event.event_id!r} twice"))
            seen.add(event.event_id)


def concurrent_run(target: Target, clients: int, steps: int, seed: int,
                   bound: int = DEFAULT_BOUND, prefix: str = "") -> ConcurrentResult:
    """K server processes on one location, one client each."""
    directory = Path(tempfile.mkdtemp(prefix="convledger-clients-"))
    connections: list[WireConnection] = []
    result = ConcurrentResult(clients)
    try:
        stores: list[EveryOperation] = []
        for _ in range(clients):
            try:
                connection, store = target.start(directory)
            except NotServed as refusal:
                result.not_applicable = f"openStore refused: {refusal}"
                return result
            except LedgerError as refusal:  # WIR-041: a store that cannot be shared says so
                result.not_applicable = (
                    f"a second openStore on one location was refused: {refusal.kind}")
                return result
            except WireError as error:  # the server failed to start or to open: no traceback
                result.failures.append(Violation("WIR-041", f"server {len(stores) + 1} of "
                                                 f"{clients} did not open the store: {error!r}"))
                return result
            connections.append(connection)
            stores.append(store)
        result = run_clients(stores, steps, seed, bound, prefix)
        return result
    finally:
        for connection in connections:
            connection.close()
        result.cleanup_error = target.clean_up(directory)
        shutil.rmtree(directory, ignore_errors=True)
