"""Performance figures of any ledger store, as ratios to the raw-SQLite floor of the same run.

Issue 8: absolute times on a shared machine mean little; a store's time next
to the time bare ``sqlite3`` needs for the same work, measured in the same
run and interleaved, does. This module measures, against any
:class:`~convledger.store.LedgerStore` factory:

=======================  ====================================================  ==================
figure id                store call                                            floor (same run)
=======================  ====================================================  ==================
``append.transition``    one runtime transition (accept, acquire, terminal in  raw replay
                         turn), its own transaction
``append.single``        ``append`` of one draft                               raw replay
``append.batch10``       ``append`` of 10 drafts in one call                   raw replay
``append.batch100``      ``append`` of 100 drafts in one call                  raw replay
``read.pageN@S``         ``read`` of N envelopes (LED-007) in a ledger of S    fetch + json.loads
``read.scaling``         ``read`` of 100 at the largest size                   the same at 1e3
``export``               ``export_conversation`` of 1000 events                rfc8785 per event
``import``               ``import_conversation`` of 1000 events                raw replay
``canonical``            ``convledger.fast.canonical.encode`` of an envelope   rfc8785
``memory.append``        ``MemoryStore.append`` of one draft, and of 100        (rate only)
``projection.catch_up``  ``store.catch_up`` when the store has it              (rate only)
``search.own@S``         ``search`` of one word by a conversation of the       raw replay (fetch)
                         ledger, no callback (SRC-010), ledger of S
``search.granted@S``     ``search`` of one word by a reader with no events,    raw replay (fetch)
                         callback granting every tenth conversation (SRC-011)
``search.scaling``,      ``search.own`` / ``search.granted`` at the largest    the same at 1e3
``search.granted.        size
scaling``
=======================  ====================================================  ==================

**Raw replay.** The reference SQLite store runs the same operation on a copy
of the same reference ledger file while a recording proxy stands in for its
connection; the raw contender then executes exactly those statements, with
exactly those pre-serialized parameters, through bare ``sqlite3`` on another
copy (triggers included: the file's schema is the store's own,
``convledger.sqlite.schema``). That is the physical floor of this schema in
Python. For the reference store itself the ratio says what validation,
encoding and Python objects add; for another store it says how far it is from
what SQLite on this machine can do.

**Fetch + json.loads.** A bounded read's floor is the store's own keyset
statement (``rows.READ_WINDOW``, limit + 1 rows as the store asks) and
``json.loads`` of each payload column: the cheapest way to hand a caller
decoded events.

**Search replay.** A search's floor is the same idea for a read: the
reference SQLite store runs each prepared search once behind a
:class:`RecordingConnection` (``BEGIN``, the FTS5 statements of
``convledger.sqlite.search``, ``COMMIT``), and bare ``sqlite3`` runs exactly
those statements with ``fetchall`` (rows fetched, not turned into hits: the
store's own work on top is building ``Hit`` objects, sorting candidate ids
and asking the callback). Search figures are measured only when the store
declares capability ``search``.

Every ratio is ``floor median / store median`` (1.0: as fast as the floor),
except ``read.scaling`` and ``search.*scaling`` (``median at 1e3 / median at
the large size``) and
``export`` (``rfc8785 per event / export per event``). Store and floor run in
rotation, one call each per round (:func:`interleave`), so drift of the
machine hits both; each figure also carries the interquartile spread of its
samples. ``run_bench(factory, quick=True)`` is the entry point; the
conformance CLI's ``--bench`` prints :meth:`BenchReport.table`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft
from convledger.fast import canonical as fast_canonical
from convledger.memory import MemoryStore
from convledger.projections.store import ProjectionStore
from convledger.runtime.transitions import Accept, Acquire, Fence, Terminal, Transition
from convledger.search.store import SearchStore
from convledger.sqlite import SqliteStore, rows
from convledger.store import LedgerStore

PER_CONVERSATION = 1000
"""Events per conversation of a benchmark ledger (a page of 1000 fits in one)."""
FILL_TURN = 10
"""Conversations are filled in turns of this many events each, interleaved as in real use."""
OCCURRED_AT = "2026-05-09T07:35:25.123456Z"
READ_PAGES = (50, 100, 1000)

# -- realistic events --------------------------------------------------------------------------

_TEXT = (
    "I read the file and found the failing assertion in test_export: the archive was "
    "written with ensure_ascii=True, so the café entry came back escaped. I'll switch the "
    "writer to the canonical encoder and re-run the suite. "
)


def event_id(index: int) -> str:
    """A random-looking but reproducible UUID4 text: the id shape real producers use."""
    return str(uuid.UUID(int=random.Random(index).getrandbits(128), version=4))


def payload(index: int) -> dict[str, JsonValue]:
    """A ``provider/message`` payload: an assistant turn with text and a tool call (~600 B)."""
    message: dict[str, JsonValue] = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": _TEXT},
            {
                "type": "tool_use",
                "id": f"toolu_01A{index:08d}",
                "name": "run_tests",
                "input": {"paths": ["tests/test_archive.py"], "timeout": 120, "verbose": True},
            },
        ],
        "stopReason": "tool_use",
        "usage": {"inputTokens": 1834 + index % 97, "outputTokens": 96},
    }
    digest = hashlib.sha256(f"{index}:{_TEXT}".encode()).hexdigest()
    return {"sha256": digest, "message": message}


def draft(index: int) -> EventDraft:
    """The ``index``-th benchmark draft (eventId derived from ``index``)."""
    return EventDraft(event_id(index), "provider/message", OCCURRED_AT, payload(index))


def conversation_name(number: int) -> str:
    """The conversationId of the ``number``-th conversation of a benchmark ledger."""
    return f"conv-{number:06d}"


def conversations_of(size: int) -> int:
    """How many conversations a ledger of ``size`` events has."""
    return max(1, size // PER_CONVERSATION)


def fill_plan(size: int) -> Iterator[tuple[str, range]]:
    """(conversationId, draft indexes) turns that build a ledger of ``size`` events."""
    conversations = conversations_of(size)
    index = 0
    while index < size:
        for number in range(conversations):
            take = min(FILL_TURN, size - index)
            if take <= 0:
                break
            yield conversation_name(number), range(index, index + take)
            index += take


def fill(store: LedgerStore, size: int) -> None:
    """Fill an empty store through its public ``append``, as producers would."""
    for conversation_id, indexes in fill_plan(size):
        store.append(conversation_id, [draft(index) for index in indexes])


def build_reference_file(path: Path, size: int) -> None:
    """The reference SQLite ledger of ``size`` events, written fast but row for row as the store.

    The store creates the file (schema, pragmas, page size); the rows are the
    store's own (``rows.event_row`` of the envelopes ``append`` would place,
    inserted by ``rows.INSERT_EVENT``, so the FTS5 trigger runs), in the
    order :func:`fill_plan` appends them, many per transaction.
    """
    SqliteStore(path, synchronous="NORMAL").close()
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        heads: dict[str, int] = {}
        pending: list[rows.Row] = []
        for conversation_id, indexes in fill_plan(size):
            for index in indexes:
                seq = heads.get(conversation_id, 0) + 1
                heads[conversation_id] = seq
                placed = Envelope.from_draft(draft(index), conversation_id, seq)
                pending.append(rows.event_row(placed))
            if len(pending) >= 5000:
                _insert(connection, pending)
                pending = []
        if pending:
            _insert(connection, pending)
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def _insert(connection: sqlite3.Connection, pending: list[rows.Row]) -> None:
    connection.execute("BEGIN IMMEDIATE")
    connection.executemany(rows.INSERT_EVENT, pending)
    connection.execute("COMMIT")


def copy_ledger(source: Path, target: Path) -> Path:
    """A copy of a closed ledger file (and its WAL, if any)."""
    shutil.copyfile(source, target)
    for suffix in ("-wal", "-shm"):
        extra = Path(f"{source}{suffix}")
        if extra.exists():
            shutil.copyfile(extra, Path(f"{target}{suffix}"))
    return target


# -- the raw floor: recorded statements, replayed ----------------------------------------------

Statement = tuple[str, str, Any]
"""(``execute`` or ``executemany``, SQL, parameters) as the store passed them."""


class RecordingConnection:
    """Stands in for a store's ``sqlite3`` connection and logs every statement it runs."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self.log: list[Statement] = []

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        """Log, then run, one statement."""
        self.log.append(("execute", sql, parameters))
        return self._connection.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any) -> sqlite3.Cursor:
        """Log (materialized), then run, one statement over many rows."""
        materialized = [tuple(row) for row in parameters]
        self.log.append(("executemany", sql, materialized))
        return self._connection.executemany(sql, materialized)

    def take(self) -> list[Statement]:
        """The statements logged since the last call."""
        taken, self.log = self.log, []
        return taken

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


@contextlib.contextmanager
def recording(store: SqliteStore) -> Iterator[RecordingConnection]:
    """Log the statements ``store`` runs inside the block (benchmark use only)."""
    real = store._connection
    recorder = RecordingConnection(real)
    store._connection = recorder  # type: ignore[assignment]
    try:
        yield recorder
    finally:
        store._connection = real


def raw_connection(path: Path, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """A bare connection configured as the reference store configures its own (``opening.py``)."""
    connection = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    connection.execute(f"PRAGMA synchronous = {synchronous}")
    return connection


def replay(connection: sqlite3.Connection, statements: Sequence[Statement]) -> None:
    """Run recorded statements through bare ``sqlite3``, fetching every result as the store did."""
    for how, sql, parameters in statements:
        if how == "execute":
            connection.execute(sql, parameters).fetchall()
        else:
            connection.executemany(sql, parameters)


# -- timing ------------------------------------------------------------------------------------

Runner = Callable[[Callable[[], None], int, int], None]
"""``runner(one_round, rounds, warmup)``: calls ``one_round`` warmup + rounds times."""


def _loop(one_round: Callable[[], None], rounds: int, warmup: int) -> None:
    for _ in range(warmup + rounds):
        one_round()


def interleave(
    contenders: Mapping[str, Callable[[], object]],
    *,
    rounds: int,
    warmup: int = 1,
    runner: Runner | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each contender, ``rounds`` samples each, measured in rotation.

    Round ``r`` starts with the ``r``-th contender, so none always runs first
    or last. The first ``warmup`` rounds are dropped. ``runner`` drives the
    rounds (pytest-benchmark's ``pedantic`` in ``benchmarks/``); by default a loop.
    """
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    counter = [0]

    def one_round() -> None:
        shift = counter[0] % len(names)
        counter[0] += 1
        for name in names[shift:] + names[:shift]:
            call = contenders[name]
            started = time.perf_counter_ns()
            call()
            samples[name].append((time.perf_counter_ns() - started) / 1e9)

    (runner or _loop)(one_round, rounds, warmup)
    return {name: values[warmup:] for name, values in samples.items()}


def median(samples: Sequence[float]) -> float:
    """The median of the samples (the figure every ratio is built from)."""
    return statistics.median(samples)


def spread(samples: Sequence[float]) -> float:
    """Interquartile range divided by the median: the run's relative noise."""
    if len(samples) < 4:
        return 0.0
    low, _, high = statistics.quantiles(samples, n=4)
    return (high - low) / statistics.median(samples)


# -- figures and the report --------------------------------------------------------------------


@attrs.frozen
class Figure:
    """One measured figure: the store's median, its floor's, their ratio, and the noise."""

    id: str
    description: str
    events: int
    """Events one store call handles (for the rate)."""
    store_median: float
    """Seconds per store call."""
    floor_median: float | None
    """Seconds per floor call, when the figure has a floor."""
    ratio: float | None
    """Floor over store (see the module docstring); None for a rate-only figure."""
    store_spread: float
    floor_spread: float

    @property
    def rate(self) -> float:
        """Events per second of the store call."""
        return self.events / self.store_median

    def as_json(self) -> dict[str, Any]:
        """The figure as plain JSON (the gate reads it from ``extra_info``)."""
        return {
            "figure": self.id,
            "description": self.description,
            "events": self.events,
            "store_median": self.store_median,
            "floor_median": self.floor_median,
            "ratio": self.ratio,
            "rate": self.rate,
            "store_spread": self.store_spread,
            "floor_spread": self.floor_spread,
        }


def figure(
    figure_id: str,
    description: str,
    samples: Mapping[str, Sequence[float]],
    *,
    events: int,
    store: str = "store",
    floor: str | None = "floor",
) -> Figure:
    """The :class:`Figure` of interleaved samples (ratio = floor median / store median)."""
    store_median = median(samples[store])
    floor_median = None if floor is None else median(samples[floor])
    return Figure(
        id=figure_id,
        description=description,
        events=events,
        store_median=store_median,
        floor_median=floor_median,
        ratio=None if floor_median is None else floor_median / store_median,
        store_spread=spread(samples[store]),
        floor_spread=0.0 if floor is None else spread(samples[floor]),
    )


def machine() -> dict[str, str]:
    """What ran the figures: cores, CPU model, Python and SQLite versions."""
    model = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


@attrs.frozen
class BenchReport:
    """Every figure of one run, and the machine that ran it."""

    figures: tuple[Figure, ...]
    machine: Mapping[str, str]
    skipped: Mapping[str, str] = attrs.field(factory=dict)
    """Figures not measured, with the reason (a capability the store does not declare)."""

    def table(self) -> str:
        """One line per figure: id, store median (microseconds), rate, ratio, spreads."""
        lines = [
            " ".join(f"{key}={value}" for key, value in self.machine.items()),
            f"{'figure':28} {'store us':>10} {'events/s':>12} {'ratio':>8} {'spread':>14}",
        ]
        for item in self.figures:
            ratio = "-" if item.ratio is None else f"{item.ratio:.2f}"
            noise = f"{item.store_spread:.0%}/{item.floor_spread:.0%}"
            lines.append(f"{item.id:28} {item.store_median * 1e6:10,.0f} {item.rate:12,.0f} "
                         f"{ratio:>8} {noise:>14}")
        lines.extend(f"{name:28} not measured: {why}" for name, why in self.skipped.items())
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """The report as plain JSON."""
        return {
            "machine": dict(self.machine),
            "figures": [item.as_json() for item in self.figures],
            "skipped": dict(self.skipped),
        }


# -- the measurements ----------------------------------------------------------------------------


@attrs.frozen
class Plan:
    """How long to measure: rounds per figure and ledger sizes."""

    sizes: tuple[int, ...]
    append_rounds: int
    batch_rounds: int
    read_rounds: int
    export_rounds: int
    warmup: int = 3
    search_rounds: int = 60
    """Rounds of ``search.own``; ``search.granted`` (tens of ms at 1e5) runs half as many."""

    @classmethod
    def of(cls, *, quick: bool, sizes: Sequence[int] | None = None) -> Plan:
        """The quick plan (CI, minutes) or the full one."""
        chosen = tuple(sizes) if sizes else ((1000, 100_000))
        if quick:
            return cls(chosen, append_rounds=300, batch_rounds=50, read_rounds=200,
                       export_rounds=25, search_rounds=60)
        return cls(chosen, append_rounds=600, batch_rounds=80, read_rounds=400, export_rounds=30,
                   search_rounds=120)


class Counter:
    """A shared turn counter, so each call of a contender gets the next prepared operation."""

    def __init__(self) -> None:
        self.value = -1

    def next(self) -> int:
        """The next turn."""
        self.value += 1
        return self.value


Operation = Callable[[LedgerStore], object]


class Floor:
    """The raw floor of write figures: a recording reference store and a bare copy, in step.

    Both files start as copies of the same reference ledger. :meth:`record`
    runs operations on the reference store behind a :class:`RecordingConnection`
    and returns each one's statements; :func:`paired` replays each exactly
    once on the bare copy, so the two files always hold the same rows and a
    later recording fits the bare file's state.
    """

    def __init__(self, reference: Path, work: Path) -> None:
        self.recorder_path = copy_ledger(reference, work / "floor-recording.sqlite")
        self.raw_path = copy_ledger(reference, work / "floor-raw.sqlite")
        self.store = SqliteStore(self.recorder_path)
        self.raw = raw_connection(self.raw_path)

    def record(self, operations: Sequence[Operation]) -> list[list[Statement]]:
        """The statements the reference store runs for each operation."""
        with recording(self.store) as recorder:
            logs = []
            for operation in operations:
                operation(self.store)
                logs.append(recorder.take())
        return logs

    def close(self) -> None:
        """Close both connections."""
        self.store.close()
        self.raw.close()


def paired(
    store: LedgerStore,
    floor: Floor,
    operations: Sequence[Operation],
    *,
    rounds: int,
    warmup: int,
    runner: Runner | None,
) -> dict[str, list[float]]:
    """Store operation ``i`` against the raw replay of its recorded statements, interleaved.

    ``operations`` must number ``rounds + warmup``: each runs once on each side.
    """
    logs = floor.record(operations)
    store_turn, raw_turn = Counter(), Counter()
    return interleave(
        {
            "store": lambda: operations[store_turn.next()](store),
            "floor": lambda: replay(floor.raw, logs[raw_turn.next()]),
        },
        rounds=rounds,
        warmup=warmup,
        runner=runner,
    )


def append_operations(size: int, batch: int, count: int, *, base: int) -> list[Operation]:
    """``count`` appends of ``batch`` fresh drafts, into the ledger's conversations in turn."""
    conversations = conversations_of(size)
    operations: list[Operation] = []
    for turn in range(count):
        first = base + turn * batch
        drafts = [draft(index) for index in range(first, first + batch)]
        conversation_id = conversation_name(turn % conversations)
        operations.append(
            lambda store, c=conversation_id, d=drafts: store.append(c, d)  # type: ignore[misc]
        )
    return operations


def transition_operations(count: int, *, base: int = 0) -> list[Operation]:
    """``count`` transitions (accept, acquire, terminal of one run after another), planned.

    Planned on an in-memory store, so each carries the fence the stored run
    will hold when it is applied (transitions are deterministic, and the
    runtime conversations are apart from the ledger's).
    """
    planner = MemoryStore()
    planned: list[tuple[str, Transition, str]] = []
    try:
        for number in range((count + 2) // 3):
            conversation_id = f"runtime-{base + number % 20:06d}"
            run_id = f"run-{base + number:08d}"
            steps: list[Transition] = [
                Accept(f"key-{number}", f"input-{number}", run_id, f"answer-{number}",
                       {"role": "user", "text": _TEXT}),
                Acquire(run_id, "worker-1"),
            ]
            for step in steps:
                event = f"transition-{base}-{len(planned):08d}"
                planner.transition(conversation_id, step, event_id=event, occurred_at=OCCURRED_AT)
                planned.append((conversation_id, step, event))
            run = planner.load_run(conversation_id, run_id)
            assert run is not None and run.owner is not None
            ending = Terminal(run_id, Fence(run.owner, run.revision, run.fencing_token),
                              "success", {"role": "assistant", "text": _TEXT})
            event = f"transition-{base}-{len(planned):08d}"
            planner.transition(conversation_id, ending, event_id=event, occurred_at=OCCURRED_AT)
            planned.append((conversation_id, ending, event))
    finally:
        planner.close()
    return [
        lambda store, c=c, t=t, e=e: store.transition(  # type: ignore[misc]
            c, t, event_id=e, occurred_at=OCCURRED_AT
        )
        for c, t, e in planned[:count]
    ]


def archive_operations(count: int, *, base: int) -> list[Operation]:
    """``count`` imports of a 1000-event archive, each under a fresh conversation and eventIds."""
    store = MemoryStore()
    operations: list[Operation] = []
    for number in range(count):
        conversation_id = f"imported-{base + number:06d}"
        first = base + number * PER_CONVERSATION
        for start in range(first, first + PER_CONVERSATION, 100):
            store.append(conversation_id, [draft(index) for index in range(start, start + 100)])
        archive = store.export_conversation(conversation_id)
        operations.append(lambda target, a=archive: target.import_conversation(a))  # type: ignore[misc]
    return operations


APPENDS = {"single": 1, "batch10": 10, "batch100": 100}
"""Append figures by name: drafts per call."""


def append_figure(
    store: LedgerStore,
    floor: Floor,
    size: int,
    name: str,
    rounds: int,
    *,
    base: int,
    warmup: int = 3,
    runner: Runner | None = None,
) -> Figure:
    """``append.{name}@{size}``: appends of fresh drafts against the raw replay of the same."""
    batch = APPENDS[name]
    operations = append_operations(size, batch, rounds + warmup, base=base)
    samples = paired(store, floor, operations, rounds=rounds, warmup=warmup, runner=runner)
    return figure(f"append.{name}@{size:.0e}", f"append of {batch} draft(s) in one call, "
                  f"ledger of {size:,} events", samples, events=batch)


def transition_figure(
    store: LedgerStore,
    floor: Floor,
    size: int,
    rounds: int,
    *,
    base: int,
    warmup: int = 3,
    runner: Runner | None = None,
) -> Figure:
    """``append.transition@{size}``: one runtime transition per call against its raw replay."""
    operations = transition_operations(rounds + warmup, base=base)
    samples = paired(store, floor, operations, rounds=rounds, warmup=warmup, runner=runner)
    return figure(f"append.transition@{size:.0e}", "one runtime transition (accept, acquire, "
                  f"terminal in turn), ledger of {size:,} events", samples, events=1)


def read_figure(
    store: LedgerStore,
    raw: sqlite3.Connection,
    size: int,
    page: int,
    rounds: int,
    *,
    warmup: int = 3,
    runner: Runner | None = None,
    seed: int = 7,
) -> Figure:
    """``read.page{page}@{size}``: a page of decoded envelopes against fetch + ``json.loads``."""
    rng = random.Random(seed)
    windows = [
        (conversation_name(rng.randrange(conversations_of(size))),
         rng.randrange(1, PER_CONVERSATION - page + 2))
        for _ in range(rounds + warmup)
    ]
    store_turn, raw_turn = Counter(), Counter()

    def read() -> None:
        conversation_id, start = windows[store_turn.next()]
        found = store.read(conversation_id, from_seq=start, limit=page)
        assert len(found.items) == page

    def floor() -> None:
        conversation_id, start = windows[raw_turn.next()]
        found = raw.execute(rows.READ_WINDOW, (conversation_id, start, rows.MAX_SEQ, page + 1))
        decoded = [json.loads(row[6]) for row in found]
        assert len(decoded) == page + 1 or start + page > PER_CONVERSATION

    samples = interleave({"store": read, "floor": floor}, rounds=rounds, warmup=warmup,
                         runner=runner)
    return figure(f"read.page{page}@{size:.0e}", f"read of {page} decoded envelopes, "
                  f"ledger of {size:,} events", samples, events=page)


def scaling_figure(
    small: LedgerStore,
    large: LedgerStore,
    sizes: tuple[int, int],
    rounds: int,
    *,
    page: int = 100,
    warmup: int = 3,
    runner: Runner | None = None,
) -> Figure:
    """``read.scaling``: the same read at the large size against the small, interleaved."""
    rng = random.Random(11)
    windows = {
        size: [
            (conversation_name(rng.randrange(conversations_of(size))),
             rng.randrange(1, PER_CONVERSATION - page + 2))
            for _ in range(rounds + warmup)
        ]
        for size in sizes
    }
    turns = {size: Counter() for size in sizes}

    def reader(store: LedgerStore, size: int) -> Callable[[], None]:
        def read() -> None:
            conversation_id, start = windows[size][turns[size].next()]
            assert len(store.read(conversation_id, from_seq=start, limit=page).items) == page

        return read

    samples = interleave(
        {"floor": reader(small, sizes[0]), "store": reader(large, sizes[1])},
        rounds=rounds, warmup=warmup, runner=runner,
    )
    return figure("read.scaling", f"read of {page} at {sizes[1]:,} events against {sizes[0]:,}",
                  samples, events=page)


def export_figure(
    store: LedgerStore, rounds: int, *, warmup: int = 2, runner: Runner | None = None
) -> Figure | None:
    """``export``: a 1000-event conversation exported, against rfc8785 on each of its events."""
    try:
        import rfc8785
    except ImportError:
        return None
    conversation_id = conversation_name(0)
    events: list[Envelope] = []
    page = store.read(conversation_id, limit=PER_CONVERSATION)
    events.extend(page.items)
    while page.next_seq is not None:
        page = store.read(conversation_id, from_seq=page.next_seq, limit=PER_CONVERSATION)
        events.extend(page.items)
    wires = [envelope.to_wire() for envelope in events]
    assert rfc8785.dumps(wires[0]) == fast_canonical.encode(wires[0])

    def baseline() -> None:
        for wire in wires:
            rfc8785.dumps(wire)

    samples = interleave(
        {"store": lambda: store.export_conversation(conversation_id), "floor": baseline},
        rounds=rounds, warmup=warmup, runner=runner,
    )
    return figure("export", f"export of {len(events)} events against rfc8785 per event",
                  samples, events=len(events))


def import_figure(
    store: LedgerStore,
    floor: Floor,
    rounds: int,
    *,
    base: int,
    warmup: int = 1,
    runner: Runner | None = None,
) -> Figure:
    """``import``: a 1000-event archive into a fresh conversation, against its raw replay."""
    operations = archive_operations(rounds + warmup, base=base)
    samples = paired(store, floor, operations, rounds=rounds, warmup=warmup, runner=runner)
    return figure("import", "import of a 1000-event archive", samples, events=PER_CONVERSATION)


def canonical_figure(rounds: int, *, runner: Runner | None = None) -> Figure | None:
    """``canonical``: the fast encoder on one envelope against rfc8785, 20 calls per sample."""
    try:
        import rfc8785
    except ImportError:
        return None
    wire = Envelope.from_draft(draft(1), conversation_name(0), 1).to_wire()
    assert fast_canonical.encode(wire) == rfc8785.dumps(wire)
    calls = 20

    def batch(encode: Callable[[Any], bytes]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                encode(wire)

        return run

    samples = interleave(
        {"store": batch(fast_canonical.encode), "floor": batch(rfc8785.dumps)},
        rounds=rounds, warmup=3, runner=runner,
    )
    return figure("canonical", "fast canonical encoding of one envelope against rfc8785",
                  samples, events=calls)


def memory_append_figure(name: str, rounds: int, *, runner: Runner | None = None) -> Figure:
    """``memory.append.{name}``: the rate of ``MemoryStore.append`` (single or batch100)."""
    batch = APPENDS[name]
    store = MemoryStore()
    fill(store, 1000)
    count = rounds if batch == 1 else max(10, rounds // 10)
    operations = append_operations(1000, batch, count + 3, base=10**9 + batch * 10**6)
    turn = Counter()
    samples = interleave({"store": lambda: operations[turn.next()](store)}, rounds=count,
                         warmup=3, runner=runner)
    return figure(f"memory.append.{name}", f"MemoryStore append of {batch} draft(s)", samples,
                  events=batch, floor=None)


def catch_up_figure(
    store: LedgerStore, rounds: int, *, figure_id: str, runner: Runner | None = None
) -> Figure | None:
    """Catch-up of the built-in summary over a 1000-event conversation, from scratch each call.

    None when the store does not declare projections (PRJ-011). Each call
    uses a projection name of its own, so it folds all 1000 events.
    """
    if Capability.PROJECTIONS not in store.capabilities or not isinstance(store, ProjectionStore):
        return None
    from convledger.projections.builtins import SUMMARY

    turn = Counter()
    events = store.head(conversation_name(0))

    def catch_up() -> None:
        definition = attrs.evolve(SUMMARY, name=f"bench.summary.{turn.next()}")
        checkpoint = store.catch_up(conversation_name(0), definition, max_events=10_000)
        assert checkpoint.upto_seq == events

    samples = interleave({"store": catch_up}, rounds=rounds, warmup=1, runner=runner)
    return figure(figure_id, f"projection catch-up of {events} events (built-in summary)",
                  samples, events=events, floor=None)


# -- search latency (capability ``search``) -------------------------------------------------------

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
    :meth:`record` runs searches on the reference store behind a
    :class:`RecordingConnection` and returns each one's statements and hits.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = SqliteStore(path)
        self.raw = raw_connection(path)

    def record(
        self, queries: Sequence[SearchQuery]
    ) -> tuple[list[list[Statement]], list[list[tuple[str, int]]]]:
        """The statements the reference store runs for each search, and the hits it returns."""
        logs: list[list[Statement]] = []
        found: list[list[tuple[str, int]]] = []
        with recording(self.store) as recorder:
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
    if Capability.SEARCH in store.capabilities and isinstance(store, SearchStore):
        return store
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


# -- the whole run --------------------------------------------------------------------------------


def reference_file(directory: Path, size: int) -> Path:
    """The reference ledger file of ``size`` events in ``directory``, built once."""
    path = directory / f"reference-{size}.sqlite"
    if not path.exists():
        partial = directory / f".reference-{size}.partial"
        partial.unlink(missing_ok=True)
        build_reference_file(partial, size)
        partial.replace(path)
    return path


def run_bench(
    factory: Callable[[], LedgerStore],
    *,
    quick: bool,
    sizes: Sequence[int] | None = None,
    work: Path | None = None,
    ledger: Callable[[int], LedgerStore] | None = None,
) -> BenchReport:
    """Measure every figure against ``factory``'s stores and the raw-SQLite floor, here and now.

    ``factory()`` must give an empty store; it is filled through ``append``
    to each ledger size (quick: 1e3 and 2e4 events; full: 1e3 and 1e5), unless
    ``ledger(size)`` gives such a filled store directly. The floor runs on the
    reference SQLite ledger of the same size, built in ``work`` (a temporary
    directory by default).
    """
    plan = Plan.of(quick=quick, sizes=sizes or ((1000, 20_000) if quick else (1000, 100_000)))
    with contextlib.ExitStack() as stack:
        if work is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="convledger-")))
        stores: dict[int, LedgerStore] = {}
        for size in plan.sizes:
            if ledger is not None:
                store = ledger(size)
            else:
                store = factory()
                fill(store, size)
            stack.callback(store.close)
            stores[size] = store
        small = plan.sizes[0]
        store = stores[small]
        figures: list[Figure] = []
        skipped: dict[str, str] = {}
        searchers = {size: searchable(stores[size]) for size in plan.sizes}
        for size in plan.sizes:  # reads, search, export, catch-up first, on the ledgers as filled
            search_floor = SearchFloor(copy_ledger(reference_file(work, size),
                                                   work / f"read-floor-{size}.sqlite"))
            stack.callback(search_floor.close)
            for page in READ_PAGES:
                figures.append(read_figure(stores[size], search_floor.raw, size, page,
                                           plan.read_rounds))
            searcher = searchers[size]
            if searcher is not None:
                figures.extend(search_figure(searcher, search_floor, size, mode,
                                             search_rounds(plan, mode)) for mode in SEARCH_MODES)
        if len(plan.sizes) > 1:
            figures.append(scaling_figure(stores[small], stores[plan.sizes[-1]],
                                          (small, plan.sizes[-1]), plan.read_rounds))
            low, high = searchers[small], searchers[plan.sizes[-1]]
            if low is not None and high is not None:
                figures.extend(search_scaling_figure(low, high, (small, plan.sizes[-1]), mode,
                                                     search_rounds(plan, mode))
                               for mode in SEARCH_MODES)
        if searchers[small] is None:
            skipped["search"] = "the store does not declare search"
        exported = export_figure(store, plan.export_rounds)
        if exported is None:
            skipped["export"] = "rfc8785 is not installed"
        else:
            figures.append(exported)
        caught_up = catch_up_figure(store, plan.export_rounds, figure_id="projection.catch_up")
        if caught_up is None:
            skipped["projection.catch_up"] = "the store does not declare projections"
        else:
            figures.append(caught_up)
        floor = Floor(reference_file(work, small), work)
        stack.callback(floor.close)
        if Capability.TRANSITIONS in store.capabilities:
            figures.append(transition_figure(store, floor, small, plan.append_rounds, base=0))
        else:
            skipped["append.transition"] = "the store does not declare transitions"
        for number, name in enumerate(APPENDS):
            rounds = plan.append_rounds if name == "single" else plan.batch_rounds
            figures.append(append_figure(store, floor, small, name, rounds,
                                         base=(number + 1) * 10**8))
        figures.append(import_figure(store, floor, plan.export_rounds, base=5 * 10**8))
        encoded = canonical_figure(plan.read_rounds)
        if encoded is not None:
            figures.append(encoded)
        figures.extend(memory_append_figure(name, plan.append_rounds)
                       for name in ("single", "batch100"))
        return BenchReport(tuple(figures), machine(), skipped)
    raise AssertionError("unreachable")  # pragma: no cover
