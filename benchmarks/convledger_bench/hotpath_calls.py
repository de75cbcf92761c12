"""The calls each hot-path figure times, on a store or on a floor (issue 34).

:class:`Workload` is the fixed workload of ``convledger-conformance bench``;
:func:`fill_ledger` builds its ledger through ``append``; :data:`MAKERS` gives,
per figure, the call of round ``turn`` on a store (the user's, or the
in-memory or SQLite reference as a floor) or on the minimal SQLite ledger
(:mod:`convledger_bench.minimal`), prepared before timing. See
:mod:`convledger_bench.hotpaths` for the figures and their floors.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs

from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.store import LedgerStore
from convledger_bench.minimal import HEAD as MINIMAL_HEAD
from convledger_bench.minimal import INSERT_EVENT as MINIMAL_INSERT
from convledger_bench.minimal import UPSERT_HEAD as MINIMAL_UPSERT_HEAD
from convledger_bench.minimal import MinimalLedger, event_row
from convledger_bench.workloads import draft, plan_transitions

SEARCH_WORDS = ("assertion", "archive", "escaped", "encoder", "suite", "failing", "writer")
SPILL_BYTES = bytes(range(256)) * 16
OCCURRED_AT = "2026-05-09T07:35:25.123456Z"


@attrs.frozen
class Workload:
    """The fixed workload of a run: a baseline is only compared with a run of the same one."""

    conversations: int = 4
    per_conversation: int = 500
    rounds: int = 100
    batch: int = 50
    page: int = 100
    warmup: int = 2

    @classmethod
    def named(cls, name: str) -> Workload:
        """``default`` or ``small`` (a short one, for tests)."""
        if name == "default":
            return cls()
        if name == "small":
            return cls(conversations=2, per_conversation=100, rounds=15, batch=10, page=20)
        raise ValueError(f"unknown workload {name!r} (default, small)")

    @property
    def events(self) -> int:
        """Events in the ledger before the first figure."""
        return self.conversations * self.per_conversation

    def conversation(self, number: int) -> str:
        """The ``number``-th conversation of the ledger (numbers wrap around)."""
        return f"bench-{number % self.conversations:06d}"

    def rounds_of(self, figure_id: str) -> int:
        """Rounds of a figure: half (at least 15) for those that handle a whole conversation."""
        return max(15, self.rounds // 2) if figure_id in ("import", "catch_up", "export") \
            else self.rounds

    def as_json(self) -> dict[str, int]:
        """The workload as plain JSON (kept in a baseline)."""
        return attrs.asdict(self)



def fill_ledger(store: LedgerStore, workload: Workload) -> None:
    """The ledger of the workload, through ``append`` in turns of 10, as writers would fill it."""
    index = 0
    for start in range(0, workload.per_conversation, 10):
        take = min(10, workload.per_conversation - start)
        for number in range(workload.conversations):
            store.append(workload.conversation(number),
                         [draft(index + offset) for offset in range(take)])
            index += take


def fill_minimal(ledger: MinimalLedger, workload: Workload) -> None:
    index = 0
    for start in range(0, workload.per_conversation, 10):
        take = min(10, workload.per_conversation - start)
        for number in range(workload.conversations):
            ledger.append(workload.conversation(number),
                          [event_row(index + offset) for offset in range(take)])
            index += take


Maker = Callable[[LedgerStore | None, Workload, int, MinimalLedger | None],
                 tuple[Callable[[int], object], int]]


def _read(store: LedgerStore | None, workload: Workload, count: int,
          minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    rng = random.Random(7)
    page = workload.page
    windows = [(workload.conversation(turn), rng.randrange(1, workload.per_conversation - page + 2))
               for turn in range(count)]
    if minimal is not None:
        return (lambda turn: minimal.read(*windows[turn], page)), page
    assert store is not None

    def read(turn: int) -> None:
        conversation_id, start = windows[turn]
        assert len(store.read(conversation_id, from_seq=start, limit=page).items) == page

    return read, page


def _head(store: LedgerStore | None, workload: Workload, count: int,
          minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    if minimal is not None:
        return (lambda turn: minimal.head(workload.conversation(turn))), 1
    assert store is not None
    return (lambda turn: store.head(workload.conversation(turn))), 1


def _export(store: LedgerStore | None, workload: Workload, count: int,
            minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    return (lambda turn: store.export_conversation(workload.conversation(turn))), \
        workload.per_conversation


def _search(store: LedgerStore | None, workload: Workload, count: int,
            minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    searcher = require(store, Capability.SEARCH)
    return (lambda turn: searcher.search(workload.conversation(turn),
                                         SEARCH_WORDS[turn % len(SEARCH_WORDS)], limit=20)), 1


def _catch_up(store: LedgerStore | None, workload: Workload, count: int,
              minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    projections = require(store, Capability.PROJECTIONS)
    from convledger.projections.builtins import SUMMARY

    conversation_id = workload.conversation(0)
    definitions = [attrs.evolve(SUMMARY, name=f"bench.summary.{turn}") for turn in range(count)]
    return (lambda turn: projections.catch_up(conversation_id, definitions[turn],
                                              max_events=100_000)), workload.per_conversation


def _grant(descriptor: object) -> bool:
    return True


_OPERATION: dict[str, JsonValue] = {"operationId": "bench", "authorization": {"grant": "bench"}}


def _spill_get(store: LedgerStore | None, workload: Workload, count: int,
               minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    spills = require(store, Capability.SPILLS)
    for number in range(workload.conversations):
        spills.put_spill(workload.conversation(number), SPILL_BYTES,
                         media_type="application/octet-stream", operation=dict(_OPERATION),
                         reference=f"bench-get-{number}", event_id=f"bench-spill-get-{number}",
                         occurred_at=OCCURRED_AT)
    return (lambda turn: spills.get_spill(
        workload.conversation(turn), f"bench-get-{turn % workload.conversations}",
        authorize=_grant)), 1


MINIMAL_SPILLS = (
    "CREATE TABLE IF NOT EXISTS bench_spills (conversation_id TEXT NOT NULL, reference TEXT NOT "
    "NULL, seq INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (conversation_id, reference))"
)


def _spill_put(store: LedgerStore | None, workload: Workload, count: int,
               minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    if minimal is not None:  # one transaction: the spill/created event, its head and its bytes
        connection = minimal.connection
        connection.execute(MINIMAL_SPILLS)
        rows = [event_row(9 * 10**7 + turn) for turn in range(count)]

        def put(turn: int) -> None:
            conversation_id = workload.conversation(turn)
            connection.execute("BEGIN IMMEDIATE")
            found = connection.execute(MINIMAL_HEAD, (conversation_id,)).fetchone()
            head = (0 if found is None else int(found[0])) + 1
            connection.execute(MINIMAL_INSERT, (conversation_id, head, *rows[turn]))
            connection.execute(MINIMAL_UPSERT_HEAD, (conversation_id, head))
            connection.execute("INSERT INTO bench_spills VALUES (?, ?, ?, ?)",
                               (conversation_id, f"bench-put-{turn}", head, SPILL_BYTES))
            connection.execute("COMMIT")

        return put, 1
    assert store is not None
    spills = require(store, Capability.SPILLS)
    return (lambda turn: spills.put_spill(
        workload.conversation(turn), SPILL_BYTES, media_type="application/octet-stream",
        operation=dict(_OPERATION), reference=f"bench-put-{turn}",
        event_id=f"bench-spill-put-{turn}", occurred_at=OCCURRED_AT)), 1


def _appends(batch: Callable[[Workload], int], base: int) -> Maker:
    def make(store: LedgerStore | None, workload: Workload, count: int,
             minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
        size = batch(workload)
        first = base * 10**7
        if minimal is not None:
            rows = [[event_row(first + turn * size + offset) for offset in range(size)]
                    for turn in range(count)]
            return (lambda turn: minimal.append(workload.conversation(turn), rows[turn])), size
        assert store is not None
        drafts = [[draft(first + turn * size + offset) for offset in range(size)]
                  for turn in range(count)]
        return (lambda turn: store.append(workload.conversation(turn), drafts[turn])), size

    return make


def _transition(store: LedgerStore | None, workload: Workload, count: int,
                minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    planned = plan_transitions(count, base=7 * 10**6)
    if minimal is not None:
        from convledger_bench.minimal import minimal_transition_operations

        operations = minimal_transition_operations(count, base=7 * 10**6)
        return (lambda turn: operations[turn](minimal)), 1
    assert store is not None
    runtime = require(store, Capability.TRANSITIONS)
    return (lambda turn: runtime.transition(
        planned[turn].conversation_id, planned[turn].step, event_id=planned[turn].event_id,
        occurred_at=OCCURRED_AT)), 1


def _import(store: LedgerStore | None, workload: Workload, count: int,
            minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    size = workload.per_conversation
    first = 8 * 10**7
    names = [f"bench-imported-{turn:06d}" for turn in range(count)]
    if minimal is not None:
        rows = [[event_row(first + turn * size + offset) for offset in range(size)]
                for turn in range(count)]
        return (lambda turn: minimal.import_conversation(names[turn], rows[turn])), size
    assert store is not None
    source = MemoryStore()
    archives = []
    for turn, name in enumerate(names):
        for start in range(0, size, 100):
            source.append(name, [draft(first + turn * size + offset)
                                 for offset in range(start, min(size, start + 100))])
        archives.append(source.export_conversation(name))
    source.close()
    return (lambda turn: store.import_conversation(archives[turn])), size


MAKERS: dict[str, Maker] = {
    "read": _read,
    "head": _head,
    "export": _export,
    "search": _search,
    "catch_up": _catch_up,
    "spill.get": _spill_get,
    "append.single": _appends(lambda workload: 1, 1),
    "append.batch": _appends(lambda workload: workload.batch, 2),
    "spill.put": _spill_put,
    "transition": _transition,
    "import": _import,
}
NEEDS = {"search": Capability.SEARCH, "catch_up": Capability.PROJECTIONS,
          "spill.get": Capability.SPILLS, "spill.put": Capability.SPILLS,
          "transition": Capability.TRANSITIONS}


