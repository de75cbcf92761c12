"""The benchmark workloads: realistic events, ledgers of a given size, the operations timed.

Every ledger is built from the same reproducible drafts (:func:`draft`), so a
store's ledger and the reference SQLite file of the floor hold the same
events: conversations of :data:`PER_CONVERSATION` events, filled in
interleaved turns of :data:`FILL_TURN` (:func:`fill_plan`).
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore
from convledger.runtime.records import Run
from convledger.runtime.transitions import Accept, Acquire, Fence, Terminal, Transition
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
    store's own (the envelopes ``append`` would place, inserted by
    ``rows.insert_events``, which writes each event's FTS5 row too, SQL-070),
    in the order :func:`fill_plan` appends them, many per transaction.
    """
    SqliteStore(path, synchronous="NORMAL").close()
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        heads: dict[str, int] = {}
        pending: list[Envelope] = []
        for conversation_id, indexes in fill_plan(size):
            for index in indexes:
                seq = heads.get(conversation_id, 0) + 1
                heads[conversation_id] = seq
                pending.append(Envelope.from_draft(draft(index), conversation_id, seq))
            if len(pending) >= 5000:
                _insert(connection, pending)
                pending = []
        if pending:
            _insert(connection, pending)
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def _insert(connection: sqlite3.Connection, pending: list[Envelope]) -> None:
    connection.execute("BEGIN IMMEDIATE")
    rows.insert_events(connection, pending)
    connection.execute("COMMIT")


def workload_key(*builders: str) -> str:
    """A short hash of what decides a built ledger's bytes: this module (the events, the fill),
    the store's schema and row code, and the ``builders``' module files, so a cached ledger is
    rebuilt when any of them changes."""
    import convledger.sqlite.rows as row_module
    import convledger.sqlite.schema as schema_module

    digest = hashlib.sha256()
    for module_file in (__file__, schema_module.__file__, row_module.__file__, *builders):
        assert module_file is not None
        digest.update(Path(module_file).read_bytes())
    return digest.hexdigest()[:12]


def copy_ledger(source: Path, target: Path) -> Path:
    """A copy of a closed ledger file (and its WAL, if any)."""
    shutil.copyfile(source, target)
    for suffix in ("-wal", "-shm"):
        extra = Path(f"{source}{suffix}")
        if extra.exists():
            shutil.copyfile(extra, Path(f"{target}{suffix}"))
    return target


def reference_file(directory: Path, size: int) -> Path:
    """The reference ledger file of ``size`` events in ``directory``, built once."""
    path = directory / f"reference-{size}.sqlite"
    if not path.exists():
        partial = directory / f".reference-{size}.partial"
        partial.unlink(missing_ok=True)
        build_reference_file(partial, size)
        partial.replace(path)
    return path


# -- the operations timed against the floor -----------------------------------------------------


Operation = Callable[[LedgerStore], object]


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


@attrs.frozen
class PlannedTransition:
    """One planned transition, with the event and run row the ledger holds after it."""

    conversation_id: str
    step: Transition
    event_id: str
    envelope: Envelope
    """The transition's event as placed."""
    run: Run
    """Its run after the transition."""
    admission: tuple[str, str] | None
    """(idempotency key, runId) for an accept, else None."""


def plan_transitions(count: int, *, base: int = 0) -> list[PlannedTransition]:
    """``count`` transitions (accept, acquire, terminal of one run after another), planned.

    Planned on an in-memory store, so each carries the fence the stored run
    will hold when it is applied (transitions are deterministic, and the
    runtime conversations are apart from the ledger's).
    """
    planner = MemoryStore()
    planned: list[PlannedTransition] = []

    def apply(conversation_id: str, step: Transition, run_id: str) -> None:
        event = f"transition-{base}-{len(planned):08d}"
        planner.transition(conversation_id, step, event_id=event, occurred_at=OCCURRED_AT)
        head = planner.head(conversation_id)
        (placed,) = planner.read(conversation_id, from_seq=head, limit=1).items
        run = planner.load_run(conversation_id, run_id)
        assert run is not None
        admission = (step.idempotency_key, run_id) if isinstance(step, Accept) else None
        planned.append(PlannedTransition(conversation_id, step, event, placed, run, admission))

    try:
        for number in range((count + 2) // 3):
            conversation_id = f"runtime-{base + number % 20:06d}"
            run_id = f"run-{base + number:08d}"
            apply(conversation_id, Accept(f"key-{number}", f"input-{number}", run_id,
                                          f"answer-{number}", {"role": "user", "text": _TEXT}),
                  run_id)
            apply(conversation_id, Acquire(run_id, "worker-1"), run_id)
            run = planner.load_run(conversation_id, run_id)
            assert run is not None and run.owner is not None
            ending = Terminal(run_id, Fence(run.owner, run.revision, run.fencing_token),
                              "success", {"role": "assistant", "text": _TEXT})
            apply(conversation_id, ending, run_id)
    finally:
        planner.close()
    return planned[:count]


def transition_operations(count: int, *, base: int = 0) -> list[Operation]:
    """``count`` transitions (accept, acquire, terminal of one run after another), planned."""
    return [
        lambda store, p=planned: store.transition(  # type: ignore[misc]
            p.conversation_id, p.step, event_id=p.event_id, occurred_at=OCCURRED_AT
        )
        for planned in plan_transitions(count, base=base)
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

