"""What every part of the step loop shares: the store, the capabilities and the writes.

:class:`HostBase` holds the injected capabilities (chapter ``facts.md``) and
the two ways the loop writes: facts appended as events, and rows kept beside
the ledger written with their events in one atomic step (SQL-068, SQL-069).
The loop itself is :class:`convledger.host.loop.Host`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator

import attrs

from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft
from convledger.host.capabilities import (
    ChildExecutor,
    Clock,
    IdGenerator,
    ModelProvider,
    SandboxProber,
    Timer,
)
from convledger.host.rows import Appends, ChildLink, ScheduleRow
from convledger.host.store import FactRowStore
from convledger.interface import require
from convledger.runtime import (
    Run,
    Transition,
)
from convledger.runtime.view import Status
from convledger.store_interface import LedgerStore

PAGE = 500


class HostError(Exception):
    """A transition the loop relies on did not apply (a lost fence, a missing run)."""


def stamp(moment: datetime.datetime) -> str:
    """An RFC 3339 time with milliseconds, as events carry it."""
    return moment.isoformat(timespec="milliseconds")


def events_of(store: LedgerStore, conversation_id: str) -> Iterator[Envelope]:
    """Every event of a conversation, read page by page."""
    start: int | None = 1
    while start is not None:
        page = store.read(conversation_id, from_seq=start, limit=PAGE)
        yield from page.items
        start = page.next_seq


@attrs.frozen
class Schedule:
    """A schedule the host placed with its timer."""

    conversation_id: str
    kind: str
    every_ms: int | None
    action: Callable[[], None] | None = attrs.field(eq=False, default=None)


class HostBase:
    """The injected capabilities and the write primitives of the loop."""

    def __init__(
        self,
        store: LedgerStore,
        *,
        clock: Clock,
        ids: IdGenerator,
        provider: ModelProvider,
        timer: Timer,
        children: ChildExecutor,
        prober: SandboxProber,
        model_id: str = "fake-model",
        owner: str = "host",
        max_attempts: int = 3,
        base_delay_ms: int = 100,
        max_steps: int = 8,
    ) -> None:
        self.store = store  # facts need the ledger alone; runs narrow to transitions
        self.clock = clock
        self.ids = ids
        self.provider = provider
        self.timer = timer
        self.children = children
        self.prober = prober
        self.model_id = model_id
        self.owner = owner
        self.max_attempts = max_attempts
        self.base_delay_ms = base_delay_ms
        self.max_steps = max_steps
        self.schedules: dict[str, Schedule] = {}
        self._occurrences: dict[str, int] = {}

    # -- writing -------------------------------------------------------------------------

    def _draft(self, kind: str, payload: JsonValue) -> EventDraft:
        return EventDraft(self.ids.new_id("evt"), kind, stamp(self.clock.now()), payload)

    def append(self, conversation_id: str, *facts: tuple[str, JsonValue]) -> tuple[Envelope, ...]:
        """Append facts ``(kind, payload)`` to one conversation in one batch."""
        drafts = [self._draft(kind, payload) for kind, payload in facts]
        return self.store.append(conversation_id, drafts)

    def transition(self, conversation_id: str, transition: Transition) -> Run:
        """Apply a transition that must apply; answer the changed run."""
        outcome = require(self.store, Capability.TRANSITIONS).transition(
            conversation_id,
            transition,
            event_id=self.ids.new_id("evt"),
            occurred_at=stamp(self.clock.now()),
        )
        if outcome.status is not Status.APPLIED or outcome.run is None:
            raise HostError(f"{transition.type} answered {outcome.status.value}")
        return outcome.run


    def _write_row(
        self, row: ChildLink | ScheduleRow, appends: Appends, *, skip_purged: bool
    ) -> bool:
        """SQL-068, SQL-069: events and row in one step; False when the store keeps no rows."""
        rows = self.fact_rows()
        if rows is None:
            return False
        rows.write_fact_rows(row, appends, skip_purged=skip_purged)
        return True

    def fact_rows(self) -> FactRowStore | None:
        """The store as capability ``fact_rows`` when it declares it (CAP-001), else None."""
        if Capability.FACT_ROWS not in self.store.capabilities:
            return None
        return require(self.store, Capability.FACT_ROWS)

