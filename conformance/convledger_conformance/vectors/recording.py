"""Recording a check's store calls: stores that log each call they serve as a trace step.

The runner's ``--record-failures`` re-runs a failed check with every store wrapped in a
:class:`RecordingStore` (made by a :class:`RecordingFactory`), which writes each call, in
the wire terms of :mod:`convledger_conformance.vectors.traces`, into the log of the store it
was made on; :func:`convledger_conformance.vectors.failures.trace_of_failure` turns the logs
into a minimal trace.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.interface import unchecked
from convledger.projections.definition import ProjectionDefinition
from convledger.projections.named import fold_name
from convledger.runtime.operations import RecoveryCursor
from convledger.store import Capability, LedgerStore
from convledger.wire.values import Unencodable, definition_out, drafts_out, transition_out
from convledger_conformance.registry import StoreFactory
from convledger_conformance.spec_values import READ_LIMIT
from convledger_conformance.vectors.operations import Step
from convledger_conformance.vectors.traces import archive_members

KEPT_LOGS: Final = 32
"""How many of the newest store logs are kept (a shrunk program may make one per import)."""

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
