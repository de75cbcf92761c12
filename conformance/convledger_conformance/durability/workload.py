"""A random workload over every declared capability, with its acknowledgements (DUR-001).

Theory of operation
-------------------
:class:`Workload` calls a store (in process or a wire proxy) one operation
at a time and appends an :class:`Attempt` to its :class:`Ledger` before each
call: ``pending`` until the call returns (``acked``, with the values it
returned) or is refused with a typed error (``refused``), or ``failed`` when
the server answered neither (an ``internal`` reply, WIR-008), which stops
the workload (:class:`WorkloadFailed`). A call cut off by the kill of the
store's process stays ``pending``: it was in flight (chapter DUR). Every call
is valid, so a refusal is a failure of the store (DUR-015), except for the
calls made to be refused (``expect``: the timing twins of :meth:`Workload.twin`, the
tombstone probes of :meth:`Workload.tombstones`). The ledger carries
over from round to round, so each round checks everything acknowledged since
the first.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from convledger import EventDraft, MemoryStore
from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.errors import LedgerError
from convledger.interface import EveryOperation
from convledger.projections.named import counting
from convledger.runtime import Accept
from convledger_conformance.wire.connection import WireProtocolError

AT = "2026-12-01T00:00:00Z"
PROJECTION = counting("durability.count", 1)
"""The definition the workload catches up: at uptoSeq n its state is ``{count: n, seqs: 1..n}``."""
LARGE_BATCH = 100
"""The events of the large batch a kill cuts."""
CONVERSATIONS = ("dur-a", "dur-b", "dur-c")
"""The conversations appends, catch-ups and spills share."""
RUNTIME_CONVERSATIONS = ("dur-run-a", "dur-run-b")
"""The conversations of appends and transitions (their exports carry the runtime companion alone,
so an in-memory store rebuilds their records from them, DUR-004)."""


@attrs.define
class Attempt:
    """One invoked operation: what it wrote, and how it ended (``pending`` while in flight)."""

    op: str
    conversation: str
    event_ids: tuple[str, ...] = ()
    detail: dict[str, Any] = attrs.field(factory=dict)
    status: str = "pending"
    """``pending``, ``acked``, ``refused`` or ``failed`` (neither a result nor a refusal)."""
    result: Any = None
    round: int = 0
    expect: str = ""
    """The refusal a call made to be refused must get (a timing twin ``duplicate``, a
    tombstone probe ``purged``); "" for every other call, which must be acknowledged."""

    @property
    def unsettled(self) -> bool:
        """In flight at the kill, or failed: visible entirely or not at all (DUR-002)."""
        return self.status in ("pending", "failed")


class WorkloadFailed(Exception):
    """The server answered a call with neither a result nor a refusal (``internal``)."""


def state_draft(event_id: str, value: str) -> EventDraft:
    """A small valid draft (kind ``state/set``)."""
    payload: dict[str, JsonValue] = {"name": "slot", "version": 1, "value": value, "actor": "user"}
    return EventDraft(event_id=event_id, kind="state/set", occurred_at=AT, payload=payload)


def archive_of(conversation: str, prefix: str, events: int, last: str | None = None) -> bytes:
    """The canonical archive of ``events`` drafts, built on an in-memory store; ``last``,
    when given, is the last event's eventId."""
    scratch = MemoryStore()
    for start in range(0, events, 200):
        stop = min(events, start + 200)
        drafts = [state_draft(last if last is not None and n == events - 1 else f"{prefix}-{n}",
                              str(n)) for n in range(start, stop)]
        scratch.append(conversation, drafts)
    return scratch.export_conversation(conversation)


@attrs.define
class Ledger:
    """Every attempt of a crash run, in invocation order, across its rounds."""

    attempts: list[Attempt] = attrs.field(factory=list)
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def record(self, attempt: Attempt) -> Attempt:
        with self.lock:
            self.attempts.append(attempt)
        return attempt

    def acked(self, op: str | None = None) -> list[Attempt]:
        return [a for a in self.attempts if a.status == "acked" and op in (None, a.op)]

    def of_round(self, round_: int) -> list[Attempt]:
        """The attempts of one round (0: the calibration before the first)."""
        with self.lock:
            return [a for a in self.attempts if a.round == round_]


class Workload:
    """Drives one store with random operations of its declared capabilities."""

    def __init__(self, store: EveryOperation, ledger: Ledger, rng: random.Random, round_: int,
                 *, import_events: int = 3000) -> None:
        self.store = store
        self.ledger = ledger
        self.rng = rng
        self.round = round_
        self.import_events = import_events
        self.declared = store.capabilities
        self._serial = 0
        operations: list[tuple[int, Callable[[], None]]] = [(6, self.append)]
        operations.append((1, self.small_import))
        if Capability.TRANSITIONS in self.declared:
            operations.append((3, self.transition))
        if Capability.PROJECTIONS in self.declared:
            operations.append((2, self.catch_up))
        if Capability.SPILLS in self.declared:
            operations.append((2, self.put_spill))
        if Capability.PURGE in self.declared:
            operations.append((1, self.purge))
        self._weights = [weight for weight, _ in operations]
        self._operations = [operation for _, operation in operations]

    def ident(self, what: str) -> str:
        self._serial += 1
        return f"r{self.round}-{what}-{self._serial}"

    def run(self, steps: int, stop: threading.Event,
            large: tuple[str, Callable[[], None]] | None = None) -> None:
        """``steps`` random operations; with ``large`` (``batch`` or ``import``, and what to call
        just before it is sent), one large write after the :meth:`prelude` and a few more."""
        if large is not None:
            self.prelude()
            for _ in range(self.rng.randint(3, 15)):
                self.rng.choices(self._operations, self._weights)[0]()
            self.large(*large)
        for _ in range(steps):
            if stop.is_set():
                return
            self.rng.choices(self._operations, self._weights)[0]()

    def _call(self, attempt: Attempt, call: Callable[[], Any]) -> None:
        self.ledger.record(attempt)
        try:
            attempt.result = call()
        except LedgerError as refusal:
            attempt.status, attempt.result = "refused", refusal.kind
            return
        except WireProtocolError as error:  # ``internal`` or a malformed reply (WIR-008)
            attempt.status, attempt.result = "failed", f"{error}"  # for the report only
            raise WorkloadFailed(f"{attempt.op} of {attempt.conversation!r}: {error}") from None
        attempt.status = "acked"

    def prelude(self) -> None:
        """One operation of each declared kind, before a round's kill is armed: every round
        has writes of every capability to check that the store acknowledged after it was
        started again (DUR-015)."""
        if Capability.PURGE in self.declared:
            self.tombstones()
        for operation in self._operations:
            operation()

    def tombstones(self) -> None:
        """An append to each conversation whose purge was acknowledged before the last kill and
        not probed yet: it must be refused ``purged`` (TRN-092, DUR-007). The run reads every
        conversation before this, so no write of the run repairs what a kill undid."""
        probed = {a.conversation for a in self.ledger.attempts if a.expect == "purged"}
        for attempt in self.ledger.acked("purge"):
            if attempt.round < self.round and attempt.conversation not in probed:
                event_id = self.ident("tomb")
                self._call(Attempt("append", attempt.conversation, (event_id,),
                                   {"expected": None}, round=self.round, expect="purged"),
                           functools.partial(self.store.append, attempt.conversation,
                                             [state_draft(event_id, event_id)]))

    def twin(self, kind: str, taken: str) -> float:
        """The large write of ``kind`` with its last eventId ``taken`` (already stored), so it is
        refused ``duplicate`` (LED-003, ARC-010) after the server decoded and checked it; the
        seconds it took. A kill before that moment lands before any write of a store that
        checks before it writes; the large write's own time ends the window (crash.py)."""
        conversation = self.ident("twin")
        if kind == "import":
            ids = tuple(f"{conversation}-{n}" for n in range(self.import_events - 1))
            archive = archive_of(conversation, conversation, self.import_events, last=taken)
            attempt = Attempt("import", conversation, ids, round=self.round, expect="duplicate")
            call: Callable[[], Any] = lambda: self.store.import_conversation(archive)  # noqa: E731
        else:
            conversation = self.rng.choice(CONVERSATIONS)
            ids = tuple(self.ident("ev") for _ in range(LARGE_BATCH - 1))
            drafts = [state_draft(event_id, event_id) for event_id in ids]
            drafts.append(state_draft(taken, taken))
            attempt = Attempt("append", conversation, ids, {"expected": None},
                              round=self.round, expect="duplicate")
            call = lambda: self.store.append(conversation, drafts)  # noqa: E731
        sent = time.monotonic()
        self._call(attempt, call)
        return time.monotonic() - sent

    def append(self) -> None:
        conversation = self.rng.choice(CONVERSATIONS + RUNTIME_CONVERSATIONS)
        size = self.rng.choice((1, 1, 2, 5, 20))
        ids = tuple(self.ident("ev") for _ in range(size))
        drafts = [state_draft(event_id, event_id) for event_id in ids]
        expected = None
        if self.rng.random() < 0.3:
            expected = self.store.head(conversation)
        attempt = Attempt("append", conversation, ids, {"expected": expected}, round=self.round)
        self._call(attempt, lambda: self.store.append(conversation, drafts, expected_head=expected))

    def transition(self) -> None:
        conversation = self.rng.choice(RUNTIME_CONVERSATIONS)
        event_id, key = self.ident("tr"), self.ident("key")
        step = Accept(key, self.ident("in"), self.ident("run"), self.ident("ans"), {"text": key})
        attempt = Attempt("transition", conversation, (event_id,), round=self.round)
        self._call(attempt, lambda: self.store.transition(
            conversation, step, event_id=event_id, occurred_at=AT))

    def catch_up(self) -> None:
        conversation = self.rng.choice(CONVERSATIONS)
        attempt = Attempt("catch_up", conversation, round=self.round)
        self._call(attempt, lambda: self.store.catch_up(
            conversation, PROJECTION, max_events=self.rng.choice((1, 5, 100))))

    def put_spill(self) -> None:
        conversation = self.rng.choice(CONVERSATIONS)
        event_id, reference = self.ident("sp"), self.ident("ref")
        data = self.rng.randbytes(self.rng.choice((10, 1000, 100_000)))
        attempt = Attempt("put_spill", conversation, (event_id,),
                          {"reference": reference, "data": data}, round=self.round)
        self._call(attempt, lambda: self.store.put_spill(
            conversation, data, media_type="application/octet-stream",
            operation={"operationId": reference, "authorization": {}}, reference=reference,
            event_id=event_id, occurred_at=AT))

    def purge(self) -> None:
        conversation = self.ident("purged")
        seed = self.ident("ev")
        self._call(Attempt("append", conversation, (seed,), {"expected": None}, round=self.round),
                   lambda: self.store.append(conversation, [state_draft(seed, seed)]))
        self._call(Attempt("purge", conversation, round=self.round),
                   lambda: self.store.purge(conversation))

    def small_import(self) -> None:
        self._import(self.rng.choice((1, 10, 50)))

    def large(self, kind: str, started: Callable[[], None]) -> None:
        """A large batch (``LARGE_BATCH`` events) or a large import, ``started()`` just before."""
        if kind == "import":
            self._import(self.import_events, started)
            return
        conversation = self.rng.choice(CONVERSATIONS)
        ids = tuple(self.ident("ev") for _ in range(LARGE_BATCH))
        drafts = [state_draft(event_id, event_id) for event_id in ids]
        attempt = Attempt("append", conversation, ids, {"expected": None}, round=self.round)
        started()
        self._call(attempt, lambda: self.store.append(conversation, drafts))

    def _import(self, events: int, started: Callable[[], None] | None = None) -> None:
        conversation = self.ident("imported")
        archive = archive_of(conversation, conversation, events)
        ids = tuple(f"{conversation}-{n}" for n in range(events))
        attempt = Attempt("import", conversation, ids, round=self.round)
        if started is not None:
            started()
        self._call(attempt, lambda: self.store.import_conversation(archive))
