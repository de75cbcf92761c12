"""Shrunk failures as trace vectors: a failing check's calls, replayable in any language.

When a check fails, the runner (``convledger-conformance --record-failures
DIR``) runs that check once more with every store wrapped in a
:class:`RecordingStore`. The wrapper writes each call the check makes, in the
wire terms of :mod:`convledger_conformance.vectors.traces`, into the log of the store it
was made on. Hypothesis replays its shrunk failing example last, so the newest
logs hold the shrunk program. :func:`trace_of_failure` then

1. turns a log into a trace and records its expectations from the reference
   store (:func:`convledger_conformance.vectors.traces.record`);
2. keeps it only if the store under test answers it differently from the
   reference (:func:`reproduces`): a vector is written only when it catches the
   store by itself;
3. removes every step it can while it still catches the store
   (:func:`minimize`: first all reads, then halves, quarters, ..., single steps).

Calls a trace cannot express (spills, search, a fold without a name, a reopen, values
without a JSON image) are left out of the log, and counted: when nothing
remaining catches the store, the note says what was left out.

The written file has the format of ``spec/vectors/traces/*.json``; a
maintainer who adds it there (and to this package's copy) makes the failure a
regression vector for every store.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from convledger import canonical
from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.interface import unchecked
from convledger.projections.definition import ProjectionDefinition
from convledger.projections.named import fold_name
from convledger.runtime.operations import RecoveryCursor
from convledger.store import Capability, LedgerStore
from convledger.wire.values import Unencodable, definition_out, drafts_out, transition_out
from convledger_conformance.registry import Check, CheckContext, StoreFactory
from convledger_conformance.spec_values import READ_LIMIT
from convledger_conformance.vectors.traces import (
    FORMAT,
    FORMAT_VERSION,
    READ_ONLY_OPS,
    Step,
    Trace,
    archive_members,
    capabilities_of,
    record,
    replay,
)

KEPT_LOGS: Final = 32
"""How many of the newest store logs are kept (a shrunk program may make one per import)."""
MAX_REPLAYS: Final = 400
"""The most replays :func:`minimize` spends on one trace."""

Log = list[Step]


class RecordingStore:
    """A store that writes each call it serves into ``log`` as a trace step.

    Calls are logged when they return or raise, in that order, under a lock
    (racing calls of a state machine appear in the order they finished).
    Everything not listed here passes through unrecorded.
    """

    def __init__(
        self, store: LedgerStore, log: Log, lock: threading.Lock,
        unlogged: collections.Counter[str] | None = None,
    ) -> None:
        # a pass-through: each call reaches the store, which refuses what it does not declare
        self._store = unchecked(store)
        self._log = log
        self._lock = lock
        # calls left out of the log, by operation and reason (trace_of_failure's note)
        self._unlogged = collections.Counter[str]() if unlogged is None else unlogged

    def _logged(self, step: Callable[[], Step | None], call: Callable[[], Any]) -> Any:
        try:
            return call()
        finally:
            try:
                made = step()
            except (Unencodable, TypeError, ValueError, LedgerError):
                made = None  # a value with no JSON image: this call cannot be a vector
            with self._lock:
                if made is not None:
                    self._log.append(made)
                else:  # counted, not logged; the closure is RecordingStore.<op>.<locals>.step
                    operation = step.__qualname__.split(".")[-3]
                    self._unlogged[f"{operation} (a value without a JSON image)"] += 1

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The wrapped store's declaration."""
        return self._store.capabilities

    def append(
        self, conversation_id: str, drafts: Sequence[EventDraft], *,
        expected_head: int | None = None,
    ) -> Any:
        """``append``, logged with its wire drafts."""
        def step() -> Step:
            made: Step = {"op": "append", "conversationId": conversation_id,
                          "drafts": drafts_out(drafts)}
            if expected_head is not None:
                made["expectedHead"] = expected_head
            return made
        return self._logged(step, lambda: self._store.append(
            conversation_id, drafts, expected_head=expected_head))

    def read(
        self, conversation_id: str, *, from_seq: int = 1, to_seq: int | None = None,
        limit: int = READ_LIMIT,
    ) -> Any:
        """``read``, logged with its window."""
        def step() -> Step:
            made: Step = {"op": "read", "conversationId": conversation_id,
                          "fromSeq": from_seq, "limit": limit}
            if to_seq is not None:
                made["toSeq"] = to_seq
            return made
        return self._logged(step, lambda: self._store.read(
            conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit))

    def head(self, conversation_id: str) -> int:
        """``head``, logged."""
        result: int = self._logged(
            lambda: {"op": "head", "conversationId": conversation_id},
            lambda: self._store.head(conversation_id))
        return result

    def import_conversation(self, archive: bytes, **options: Any) -> Any:
        """``import_conversation`` of a plain archive, logged with the archive as text."""
        def step() -> Step | None:
            if options or not isinstance(archive, bytes):
                return None
            text = archive.decode("utf-8")
            return {"op": "import", "conversationId": _conversation_of(text), "archive": text}
        return self._logged(step, lambda: self._store.import_conversation(archive, **options))

    def transition(
        self, conversation_id: str, transition: object, *, event_id: str, occurred_at: str
    ) -> Any:
        """``transition``, logged in wire terms."""
        def step() -> Step:
            return {"op": "transition", "conversationId": conversation_id,
                    **transition_out(transition), "eventId": event_id,
                    "occurredAt": occurred_at}
        return self._logged(step, lambda: self._store.transition(
            conversation_id, transition,  # type: ignore[arg-type]
            event_id=event_id, occurred_at=occurred_at))

    def load_run(self, conversation_id: str, run_id: str) -> Any:
        """``load_run``, logged."""
        return self._logged(
            lambda: {"op": "loadRun", "conversationId": conversation_id, "runId": run_id},
            lambda: self._store.load_run(conversation_id, run_id))

    def list_active_runs(self, conversation_id: str) -> Any:
        """``list_active_runs``, logged."""
        return self._logged(
            lambda: {"op": "listActiveRuns", "conversationId": conversation_id},
            lambda: self._store.list_active_runs(conversation_id))

    def load_snapshot(self, conversation_id: str) -> Any:
        """``load_snapshot``, logged."""
        return self._logged(
            lambda: {"op": "loadSnapshot", "conversationId": conversation_id},
            lambda: self._store.load_snapshot(conversation_id))

    def scan_recoverable(self, *, after: object = None, limit: int) -> Any:
        """``scan_recoverable``, logged when the cursor is a cursor or None."""
        def step() -> Step | None:
            if after is not None and not isinstance(after, RecoveryCursor):
                return None
            cursor = None if after is None else [after.conversation_id, after.ordinal]
            return {"op": "scanRecoverable", "conversationId": None, "after": cursor,
                    "limit": limit}
        return self._logged(step, lambda: self._store.scan_recoverable(
            after=after, limit=limit))  # type: ignore[arg-type]

    def catch_up(self, conversation_id: str, definition: object, **options: Any) -> Any:
        """``catch_up`` of a definition whose fold has a name (WIR-018), logged."""
        def step() -> Step | None:
            name = fold_name(definition) if isinstance(definition, ProjectionDefinition) else None
            if set(options) - {"max_events"} or (name is None and callable(
                    getattr(definition, "fold", None))):
                return None  # a fold without a name cannot be a vector
            made: Step = {"op": "catchUp", "conversationId": conversation_id,
                          "definition": definition_out(definition, name)}
            if "max_events" in options:
                made["maxEvents"] = options["max_events"]
            return made
        return self._logged(step, lambda: self._store.catch_up(
            conversation_id, definition, **options))  # type: ignore[arg-type]

    def load_checkpoint(self, conversation_id: str, name: str) -> Any:
        """``load_checkpoint``, logged."""
        return self._logged(
            lambda: {"op": "loadCheckpoint", "conversationId": conversation_id, "name": name},
            lambda: self._store.load_checkpoint(conversation_id, name))

    def projection_status(self, conversation_id: str, name: str) -> Any:
        """``projection_status``, logged."""
        return self._logged(
            lambda: {"op": "projectionStatus", "conversationId": conversation_id, "name": name},
            lambda: self._store.projection_status(
                conversation_id, name))

    def purge(self, conversation_id: str) -> Any:
        """``purge``, logged."""
        return self._logged(
            lambda: {"op": "purge", "conversationId": conversation_id},
            lambda: self._store.purge(conversation_id))

    def reopen(self) -> RecordingStore:
        """The reopened store, still logging into the same log (a reopen is not a step)."""
        return RecordingStore(self._store.reopen(), self._log, self._lock, self._unlogged)

    def close(self) -> None:
        """Close the wrapped store."""
        self._store.close()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if callable(found) and not name.startswith("_"):
            with self._lock:
                self._unlogged[f"{name} (no trace form)"] += 1
        return found


class RecordingFactory:
    """Makes stores of ``factory`` wrapped in :class:`RecordingStore`; keeps the newest logs."""

    def __init__(self, factory: StoreFactory) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self.logs: collections.deque[Log] = collections.deque(maxlen=KEPT_LOGS)
        self.unlogged = collections.Counter[str]()  # calls no log holds, by operation, reason

    def __call__(self) -> LedgerStore:
        log: Log = []
        with self._lock:
            self.logs.append(log)
        return RecordingStore(self._factory(), log, self._lock, self.unlogged)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._factory, name)


def _conversation_of(archive: str) -> str | None:
    found = archive_members(archive).get("conversationId")
    return found if isinstance(found, str) else None


# -- from a log to a minimal vector -----------------------------------------------------------


@attrs.frozen
class RecordedFailure:
    """What recording one failed check gave: a trace document, or why there is none."""

    check: str
    trace: dict[str, Any] | None
    note: str
    """How many steps the trace kept and the first difference, or why nothing was recorded."""


def reproduces(factory: StoreFactory, trace: Trace) -> list[str]:
    """The differences of ``factory``'s store from the reference on ``trace`` ([] if none)."""
    document = record(trace)
    try:
        return replay(factory, document)
    except Exception as error:  # a store that crashes on a step is caught too
        return [f"{trace.name}: the store raised {type(error).__name__}: {error}"]


def minimize(factory: StoreFactory, trace: Trace, *, budget: int = MAX_REPLAYS) -> Trace:
    """A shorter trace that still catches ``factory``'s store (greedy delta debugging)."""
    spent = 0

    def still(steps: Sequence[Step]) -> bool:
        nonlocal spent
        spent += 1
        return bool(steps) and bool(reproduces(factory, _with_steps(trace, steps)))

    steps = list(trace.steps)
    last_write = max(
        (number for number, step in enumerate(steps) if step["op"] not in READ_ONLY_OPS),
        default=None,
    )
    if last_write is not None:  # first: every read before the last write at once
        fewer = [s for s in steps[:last_write] if s["op"] not in READ_ONLY_OPS]
        if len(fewer) < last_write and still(fewer + steps[last_write:]):
            steps = fewer + steps[last_write:]
    chunk = max(1, len(steps) // 2)
    while spent < budget:
        start = 0
        removed_any = False
        while start < len(steps) and spent < budget:
            candidate = steps[:start] + steps[start + chunk:]
            if still(candidate):
                steps = candidate
                removed_any = True
            else:
                start += chunk
        if chunk == 1 and not removed_any:
            break
        chunk = max(1, chunk // 2)
    return _with_steps(trace, steps)


def _with_steps(trace: Trace, steps: Sequence[Step]) -> Trace:
    return attrs.evolve(trace, steps=tuple(steps), capabilities=capabilities_of(steps))


def trace_of_failure(
    item: Check, context: CheckContext, failed: Sequence[str], *, store_name: str
) -> RecordedFailure:
    """Re-run the failed check ``item`` with recording; its shrunk failure as a minimal trace."""
    recorder = RecordingFactory(context.factory)
    try:
        item.run(attrs.evolve(context, factory=recorder))
    except Exception:
        pass
    else:
        return RecordedFailure(item.name, None, "the check passed when re-run with recording")
    replayed = 0
    for log in reversed(recorder.logs):
        steps = [step for step in log if has_json_image(step)]
        recorder.unlogged["a call (a value whose JSON text reads back otherwise)"] += (
            len(log) - len(steps))
        if not steps:
            continue
        replayed += 1
        name = f"shrunk/{vector_label(store_name)}/{item.name}"
        trace = Trace(name, tuple(failed), capabilities_of(steps), tuple(steps))
        if not reproduces(context.factory, trace):
            continue
        smallest = minimize(context.factory, trace)
        first = reproduces(context.factory, smallest)
        note = f"{len(smallest.steps)} steps (from {len(steps)}); " + (
            _shortened(first[0]) if first else "no longer reproduces")
        return RecordedFailure(item.name, record(smallest), note)
    return RecordedFailure(item.name, None, _why_not(replayed, recorder.unlogged))


def vector_label(store_name: str) -> str:
    """The store's name as a vector meant for sharing may hold it: a Python name
    (``module:Class``, a gallery class) as it is; anything else (a ``--command`` line, with
    the user's paths) as ``wire-command``."""
    return store_name if re.fullmatch(r"[A-Za-z0-9_.:-]{1,200}", store_name) else "wire-command"


def _why_not(replayed: int, unlogged: collections.Counter[str]) -> str:
    """Why no trace catches the failure: what was replayed, what could not be recorded."""
    left_out = ", ".join(f"{n} x {name}" for name, n in sorted(unlogged.items()) if n)
    return (f"no recorded store log reproduces the failure as a trace: replayed on a fresh "
            f"store, each of the {replayed} newest logs with calls answers as the reference "
            f"does. Left out of the logs: {left_out or 'nothing'}. So the failure lies where "
            "a trace cannot reach: in calls left out, in values the store shares with its "
            "caller in process (LED-014), in a race between threads, or in what the check "
            "inspects besides the store's answers (its class, its file)")


def _shortened(text: str, *, limit: int = 300) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


def has_json_image(step: Step) -> bool:
    """Whether ``step`` survives canonical JSON text unchanged, types included.

    Not so for NaN, a lone surrogate or an integer beyond 2**53, which have no
    canonical text, nor for a float with an integral value, which a reader
    parses back as an integer (a store may treat ``1.0`` and ``1`` differently).
    """
    try:
        text = canonical.encode(step)
    except LedgerError:
        return False
    return _identical(json.loads(text), step)


def _identical(parsed: object, value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return isinstance(parsed, list) and len(parsed) == len(value) and all(
            _identical(left, right) for left, right in zip(parsed, value, strict=True))
    if isinstance(value, dict):
        return isinstance(parsed, dict) and parsed.keys() == value.keys() and all(
            _identical(parsed[key], value[key]) for key in value)
    return type(parsed) is type(value) and parsed == value


def file_of(recorded: Sequence[RecordedFailure]) -> bytes:
    """The canonical bytes of a trace file holding every recorded trace."""
    return canonical.encode({
        "$comment": "Shrunk failures recorded by `convledger-conformance --record-failures`; "
        "see spec/vectors/README.md.",
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "traces": [item.trace for item in recorded if item.trace is not None],
    })


def write_failure(folder: Path, recorded: RecordedFailure) -> Path | None:
    """Write one recorded failure as ``folder/<check>-<digest>.json``; its path, or None."""
    if recorded.trace is None:
        return None
    data = file_of([recorded])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{recorded.check}-{hashlib.sha256(data).hexdigest()[:12]}.json"
    path.write_bytes(data)
    return path
