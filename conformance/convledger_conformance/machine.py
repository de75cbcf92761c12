"""The ledger state machine: a store and the model, compared after every step.

Theory of operation
-------------------
:func:`build_ledger_machine` returns a Hypothesis ``RuleBasedStateMachine``
bound to a store factory. Each program starts from a fresh store and a fresh
:class:`~convledger_conformance.model.LedgerModel`. Every rule asks the model
first what must happen (a result, or the admissible kinds of a refusal), calls
the store, compares, and only then commits the change to the model. After
every step the invariant compares the store's ledgers with the model: heads,
seqs, eventIds and canonical bytes.

A mismatch raises :class:`~convledger_conformance.registry.CheckFailure`
naming the requirement ids the mismatch proves broken; :data:`MACHINE_IDS` is
every id it can name, so the check that runs the machine covers exactly
those. A refused call is checked like this: the kind must be one the model
admits (ERR-001), a ``conflict`` for an expected head carries the actual head
(ERR-005), and the state digest of every conversation the call touched is
unchanged (ERR-004, LED-004, ARC-013). An exception that is not a
``LedgerError`` fails ERR-006 when the call should have been refused.
Between the ledger steps, the operations of every capability the store does
not declare are refused the same way, as ``not_supported`` (CAP-002).

To keep steps cheap, the invariant reads whole only the ledgers the step
touched (``dirty``) and checks the heads of all others; teardown reads every
ledger whole once more, unless a step has already failed.

A failing program prints as runnable code once the class has a name::

    from math import inf, nan  # only if the program holds non-finite floats
    from convledger import EventDraft
    from convledger_conformance.strategies import InvalidDraft
    LedgerMachine = build_ledger_machine(MemoryStore)

    state = LedgerMachine()
    conversations_0 = state.first_conversation(conversation='\\x00')
    state.ledger_matches_model()
    state.append_drafts(conversation=conversations_0, drafts=[EventDraft(...)], head=None)
    state.ledger_matches_model()
    state.teardown()
"""

from __future__ import annotations

import copy
import functools
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, Final, NoReturn, TypeVar, cast

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.errors import LedgerError, NotSupportedError
from convledger.projections import SUMMARY
from convledger.runtime import Accept
from convledger.store import Capability, ExtendedStore, LedgerStore
from convledger_conformance import strategies as gen
from convledger_conformance.model import (
    MAX_LIMIT,
    NOT_SUPPORTED,
    Fault,
    LedgerModel,
    ModelPage,
    Refusal,
    draft_wire,
    envelope_bytes,
    member_differences,
    read_whole,
    state_digest,
)
from convledger_conformance.registry import CheckFailure, StoreFactory

T = TypeVar("T")

MACHINE_IDS: tuple[str, ...] = (
    "LED-001", "LED-002", "LED-003", "LED-004", "LED-005", "LED-006", "LED-007", "LED-008",
    "LED-009", "LED-010", "LED-011", "LED-012", "LED-013", "LED-014",
    "ERR-001", "ERR-004", "ERR-005", "ERR-006",
    "ENV-001", "ENV-002", "ENV-003", "ENV-004", "ENV-005", "ENV-006", "ENV-007", "ENV-008",
    "ENV-009", "ENV-010", "ENV-011",
    "CAN-006", "CAN-007", "CAN-008", "CAN-010", "CAN-011", "CAN-012", "CAN-013",
    "KND-002", "KND-003", "KND-004",
    "RPL-002", "RPL-003", "RPL-005",
    "ARC-001", "ARC-002", "ARC-003", "ARC-004", "ARC-005", "ARC-006", "ARC-007", "ARC-008",
    "ARC-009", "ARC-010", "ARC-011", "ARC-012", "ARC-013", "ARC-016",
    "CAP-002",
)
"""Every requirement id a failure of the machine can name (without ``reopen``)."""
REOPEN_IDS: tuple[str, ...] = ("LED-015", "CAP-002")
"""The ids the ``reopen`` rules name: LED-015 when declared, CAP-002 when not.

CAP-002 is among :data:`MACHINE_IDS` too: every program calls the operations
of the capabilities a store leaves undeclared (:data:`OPTIONAL_OPERATIONS`).
"""

UNEXPECTED_REFUSAL: dict[str, dict[str, tuple[str, ...]]] = {
    "append": {
        "duplicate": ("LED-003", "ERR-004"),
        "conflict": ("LED-005",),
        "invalid_input": ("LED-006", "ENV-004", "ENV-005", "ENV-008", "ENV-009"),
    },
    "import": {
        "conflict": ("ARC-009", "ERR-004"),
        "duplicate": ("ARC-010", "ERR-004"),
        "invalid_input": ("ARC-003", "ARC-012", "ENV-004", "ENV-005", "ENV-008", "ENV-009"),
        "replay_refused": ("ARC-012", "RPL-002", "KND-004"),
        "not_supported": ("ARC-002",),
    },
}
"""Who is to blame when a store refuses a call the model accepts, by operation and kind."""

_ACCEPT: Final = Accept("machine-key", "machine-input", "machine-run", "machine-answer",
                        {"text": "x"})
_STAMP: Final = "2024-05-01T12:00:00.250+02:00"
_OPERATION: Final[dict[str, JsonValue]] = {"operationId": "machine-operation", "authorization": {}}

OptionalOperation = tuple[Capability, str, Callable[[LedgerStore, str], object]]
"""(capability, operation name, a call of it on one conversation of a store)."""


def _extended(store: LedgerStore) -> ExtendedStore:
    return cast(ExtendedStore, store)


OPTIONAL_OPERATIONS: Final[tuple[OptionalOperation, ...]] = (
    (Capability.PERSISTENCE, "reopen", lambda store, c: store.reopen()),
    (Capability.TRANSITIONS, "transition", lambda store, c: store.transition(
        c, _ACCEPT, event_id="machine/transition", occurred_at=_STAMP)),
    (Capability.TRANSITIONS, "load_run", lambda store, c: store.load_run(c, "machine-run")),
    (Capability.TRANSITIONS, "list_active_runs", lambda store, c: store.list_active_runs(c)),
    (Capability.TRANSITIONS, "load_snapshot", lambda store, c: store.load_snapshot(c)),
    (Capability.TRANSITIONS, "scan_recoverable", lambda store, c: store.scan_recoverable()),
    (Capability.PURGE, "purge", lambda store, c: store.purge(c)),
    (Capability.PROJECTIONS, "catch_up", lambda store, c: _extended(store).catch_up(c, SUMMARY)),
    (Capability.PROJECTIONS, "load_checkpoint",
     lambda store, c: _extended(store).load_checkpoint(c, SUMMARY.name)),
    (Capability.PROJECTIONS, "projection_status",
     lambda store, c: _extended(store).projection_status(c, SUMMARY.name)),
    (Capability.SPILLS, "put_spill", lambda store, c: _extended(store).put_spill(
        c, b"x", media_type="text/plain", reference="machine-spill", operation=_OPERATION,
        event_id="machine/spill", occurred_at=_STAMP)),
    (Capability.SPILLS, "get_spill", lambda store, c: _extended(store).get_spill(
        c, "machine-spill", authorize=lambda _: True)),
    (Capability.SPILLS, "delete_spill", lambda store, c: _extended(store).delete_spill(
        c, "machine-spill", event_id="machine/spill-deleted", occurred_at=_STAMP)),
    (Capability.SPILLS, "export_bundle", lambda store, c: _extended(store).export_bundle(c)),
    (Capability.SPILLS, "import_bundle", lambda store, c: _extended(store).import_bundle(b"\xa0")),
    (Capability.SEARCH, "search", lambda store, c: _extended(store).search(c, "word")),
    (Capability.SEARCH, "search with a callback", lambda store, c: _extended(store).search(
        c, "word", authorize=lambda _: True)),
)
"""Every operation of an optional capability, called on one of the machine's conversations.

A store must refuse each operation of a capability it does not declare with
``not_supported`` and change nothing (CAP-002, ERR-004), whatever the
conversation holds; the machine calls them between its ledger steps.
"""


UnknownEvent = tuple[str, tuple[str, int, object], str]
"""(eventId, (kind, schemaVersion, payload), occurredAt) of an envelope of an unregistered pair."""
_UNKNOWN_EVENTS: Final = st.tuples(
    gen.identifiers(), gen.unknown_ignorable_events(), gen.occurred_at()
)


def fail(ids: Iterable[str], message: str) -> NoReturn:
    """Raise the failure of ``ids`` (each named once, in order)."""
    raise CheckFailure(tuple(dict.fromkeys(ids)), message)


@attrs.frozen
class Raised:
    """A ``LedgerError`` a store raised, kept as a value to compare with the model."""

    error: LedgerError


class LedgerMachineBase(RuleBasedStateMachine):
    """The rules; :func:`build_ledger_machine` binds a factory to a subclass."""

    factory: ClassVar[StoreFactory]
    with_reopen: ClassVar[bool] = False

    conversations = Bundle("conversations")
    stored_ids = Bundle("stored_ids")

    def __init__(self) -> None:
        super().__init__()
        self.store: LedgerStore = type(self).factory()
        self.model = LedgerModel()
        self.known: set[str] = set()
        self.refused_since: set[str] = set()
        """Conversations with a refused append since their last accepted one (LED-004)."""
        self.dirty: set[str] = set()
        """Conversations a step touched; the invariant reads them whole."""
        self.declared = frozenset(self.store.capabilities)
        self.undeclared = tuple(op for op in OPTIONAL_OPERATIONS if op[0] not in self.declared)
        """The operations the store must refuse as ``not_supported`` (CAP-002)."""
        self._outer_exception = sys.exc_info()[1]

    def teardown(self) -> None:
        """Compare every ledger with the model one last time, then close the store.

        Hypothesis calls teardown from a ``finally``: when a step already
        failed, that failure is the one to report, so the last check is skipped.
        """
        try:
            if sys.exc_info()[1] in (None, self._outer_exception):
                self._check_ledgers(self.known | set(self.model.conversations()))
        finally:
            self.store.close()

    # -- conversations ------------------------------------------------------------------

    @initialize(target=conversations, conversation=gen.identifiers())
    def first_conversation(self, conversation: str) -> str:
        """Every program starts with one conversation id (it may stay empty)."""
        self.known.add(conversation)
        return conversation

    @rule(target=conversations, conversation=gen.identifiers())
    def add_conversation(self, conversation: str) -> str:
        """Name another conversation (ENV-005: any non-empty string of scalar values)."""
        self.known.add(conversation)
        return conversation

    # -- append -----------------------------------------------------------------------

    @rule(
        target=stored_ids,
        conversation=conversations,
        drafts=gen.draft_batches(),
        head=gen.head_offsets(),
    )
    def append_drafts(
        self, conversation: str, drafts: list[EventDraft], head: int | None
    ) -> MultipleResults[str]:
        """LED-002, LED-005: valid drafts, with no, the right or a wrong expected head."""
        return self._append(conversation, drafts, self._expected_head(conversation, head))

    @rule(
        conversation=conversations,
        prefix=gen.draft_batches(min_size=0, max_size=2),
        bad=gen.invalid_drafts(),
        suffix=gen.draft_batches(min_size=0, max_size=2),
    )
    def append_invalid(
        self,
        conversation: str,
        prefix: list[EventDraft],
        bad: gen.InvalidDraft,
        suffix: list[EventDraft],
    ) -> None:
        """LED-004, LED-006: one invalid draft refuses the whole batch."""
        self._append(conversation, [*prefix, bad.draft, *suffix], None)

    @rule(
        conversation=conversations,
        existing=stored_ids,
        drafts=gen.draft_batches(),
        position=st.integers(0, 3),
    )
    def append_stored_event_id(
        self, conversation: str, existing: str, drafts: list[EventDraft], position: int
    ) -> None:
        """LED-003: an eventId stored in any conversation is refused as ``duplicate``."""
        batch = list(drafts)
        index = position % len(batch)
        batch[index] = attrs.evolve(batch[index], event_id=existing)
        self._append(conversation, batch, None)

    @rule(conversation=conversations, drafts=gen.draft_batches(max_size=3), twin=gen.valid_drafts())
    def append_repeated_event_id(
        self, conversation: str, drafts: list[EventDraft], twin: EventDraft
    ) -> None:
        """LED-003: an eventId twice in one batch is refused as ``duplicate``."""
        self._append(conversation, [*drafts, attrs.evolve(twin, event_id=drafts[0].event_id)], None)

    @rule(
        conversation=conversations,
        shape=st.sampled_from(sorted(gen.BATCH_SHAPES)),
        draft=gen.valid_drafts(),
    )
    def append_malformed_batch(self, conversation: str, shape: str, draft: EventDraft) -> None:
        """LED-001: anything but a sequence of 1..10000 drafts is ``invalid_input``."""
        self._append(conversation, gen.BATCH_SHAPES[shape](draft), None)

    @rule(conversation=conversations, drafts=gen.unregistered_ignorable_batches())
    def append_unregistered_ignorable(self, conversation: str, drafts: list[EventDraft]) -> None:
        """KND-002: a batch of only ignorable drafts of unregistered pairs is ``invalid_input``."""
        self._append(conversation, drafts, None)

    def _expected_head(self, conversation: str, offset: int | None) -> int | None:
        return None if offset is None else self.model.head(conversation) + offset

    def _append(
        self, conversation: str, batch: object, expected_head: int | None
    ) -> MultipleResults[str]:
        expected = self.model.expect_append(conversation, batch, expected_head)
        passed = _copies(batch)
        call = functools.partial(
            self.store.append, conversation, cast(list[EventDraft], passed),
            expected_head=expected_head,
        )
        if isinstance(expected, Refusal):
            self._refused(call, expected, [conversation], "append", atomic=("LED-004",))
            self.refused_since.add(conversation)
            return multiple()
        outcome = self._attempt(call, crash=("LED-002",))
        if isinstance(outcome, Raised):
            blame = UNEXPECTED_REFUSAL["append"].get(outcome.error.kind, ("ERR-001",))
            fail(blame, f"append of valid drafts to {conversation!r} refused: {outcome.error!r}")
        self._compare(expected, outcome, conversation, "append")
        self.model.commit(conversation, expected)
        self.dirty.add(conversation)
        self.refused_since.discard(conversation)
        _vandalize(passed)
        _vandalize([envelope.payload for envelope in outcome])
        assert isinstance(batch, list)
        return multiple(*(draft.event_id for draft in batch))

    def _compare(
        self, expected: Sequence[bytes], returned: Sequence[Envelope], conversation: str, what: str
    ) -> None:
        """The envelopes an append returned are the model's, member by member."""
        extra = ("LED-004", "ERR-004") if conversation in self.refused_since else ()
        if len(returned) != len(expected):
            fail(("LED-002", *extra), f"{what} returned {len(returned)} envelopes, not "
                 f"{len(expected)}")
        for want, envelope in zip(expected, returned, strict=True):
            got = envelope_bytes(envelope)
            if got != want:
                blame = member_differences(want, got)
                fail((*blame, *extra) if "LED-002" in blame else blame,
                     f"{what} returned {got!r}, the model expects {want!r}")

    # -- concurrency ------------------------------------------------------------------

    @rule(
        target=stored_ids,
        first=conversations,
        second=conversations,
        plan=st.lists(st.tuples(st.booleans(), gen.draft_batches(max_size=3)), min_size=2,
                      max_size=4),
    )
    def append_concurrently(
        self, first: str, second: str, plan: list[tuple[bool, list[EventDraft]]]
    ) -> MultipleResults[str]:
        """LED-013: batches appended from threads at once land whole, in some order."""
        batches = _fresh_batches(plan, first, second, self.model.event_ids)
        if len(batches) < 2:
            return multiple()
        results = _run_threads(self.store, batches)
        self.dirty |= {first, second}
        for conversation in dict.fromkeys(c for c, _ in batches):
            mine = sorted(
                (
                    (results[index], drafts)
                    for index, (owner, drafts) in enumerate(batches)
                    if owner == conversation
                ),
                key=lambda pair: pair[0][0].seq if pair[0] else 0,
            )
            for returned, drafts in mine:
                head = self.model.head(conversation)
                expected = tuple(
                    canonical.encode(draft_wire(d, conversation, head + n))
                    for n, d in enumerate(drafts, start=1)
                )
                got = tuple(envelope_bytes(e) for e in returned)
                if got != expected:
                    extra = ("LED-004", "ERR-004") if conversation in self.refused_since else ()
                    fail(("LED-013", "LED-002", *extra), f"concurrent batches interleaved or "
                         f"lost in {conversation!r}: {got!r} is not {expected!r}")
                self.model.commit(conversation, expected)
            self.refused_since.discard(conversation)
        return multiple(*(d.event_id for _, drafts in batches for d in drafts))

    # -- read ---------------------------------------------------------------------------

    @rule(conversation=conversations, window=gen.read_windows())
    def read_window(self, conversation: str, window: dict[str, object]) -> None:
        """LED-007 .. LED-011: one read, compared with the model's page."""
        expected = self.model.expect_read(conversation, **window)
        call = lambda: self.store.read(conversation, **window)  # type: ignore[arg-type]  # noqa: E731
        if isinstance(expected, Refusal):
            self._refused(call, expected, [conversation], "read", atomic=())
            return
        page = self._attempt(call, crash=("LED-008",))
        if isinstance(page, Raised):
            fail(("LED-010", "LED-011"), f"read {window!r} refused: {page.error!r}")
        self._compare_page(expected, page.items, page.next_seq, window)

    def _compare_page(
        self, expected: ModelPage, items: Sequence[Envelope], next_seq: int | None,
        window: dict[str, object],
    ) -> None:
        defaults = ("LED-007",) if set(window) != {"from_seq", "to_seq", "limit"} else ()
        empty = ("LED-011",) if not expected.items else ()
        got = tuple(envelope_bytes(e) for e in items)
        if got != expected.items:
            fail(("LED-008", *defaults, *empty), f"read {window!r} returned {len(got)} "
                 f"envelopes {[e.seq for e in items]}, expected {len(expected.items)}")
        if next_seq != expected.next_seq:
            fail(("LED-009", *defaults, *empty),
                 f"read {window!r} returned nextSeq {next_seq!r}, expected {expected.next_seq!r}")

    @rule(conversation=conversations, window=gen.read_windows(valid_only=True))
    def page_through(self, conversation: str, window: dict[str, object]) -> None:
        """LED-009: following nextSeq returns every event of the window exactly once."""
        whole = self.model.expect_read(conversation, **{**window, "limit": MAX_LIMIT})
        assert isinstance(whole, ModelPage)
        seen: list[Envelope] = []
        cursor: object = window.get("from_seq", 1)
        for _ in range(len(whole.items) + 2):
            arguments = {**window, "from_seq": cursor}
            page = self._attempt(
                functools.partial(self.store.read, conversation, **arguments),  # type: ignore[arg-type]
                crash=("LED-009",),
            )
            if isinstance(page, Raised):
                fail(("LED-009",), f"following nextSeq {cursor!r} was refused: {page.error!r}")
            seen.extend(page.items)
            cursor = page.next_seq
            if cursor is None:
                break
        if tuple(envelope_bytes(e) for e in seen) != whole.items:
            fail(("LED-009",), f"paging {window!r} by nextSeq returned seqs "
                 f"{[e.seq for e in seen]}, expected {len(whole.items)} events once each")

    # -- export and import --------------------------------------------------------------

    @rule(conversation=conversations)
    def export(self, conversation: str) -> None:
        """ARC-001, ARC-004, ARC-005: exports equal the model's bytes and each other."""
        expected = self.model.expect_export(conversation)
        call = lambda: self.store.export_conversation(conversation)  # noqa: E731
        if isinstance(expected, Refusal):
            self._refused(call, expected, [conversation], "export", atomic=())
            return
        first = self._attempt(call, crash=("ARC-001",))
        if isinstance(first, Raised):
            fail(("ARC-001",), f"export of {conversation!r} refused: {first.error!r}")
        if first != expected:
            fail(("ARC-001",), f"export of {conversation!r} is {first!r}, expected {expected!r}")
        if self.store.export_conversation(conversation) != first:
            fail(("ARC-004",), f"two exports of unchanged {conversation!r} differ")

    @precondition(lambda self: bool(self.model.conversations()))
    @rule(conversation=conversations)
    def import_export_elsewhere(self, conversation: str) -> None:
        """ARC-004, ARC-016: an export imports into a fresh store and re-exports the same."""
        data = self.model.expect_export(conversation)
        if isinstance(data, Refusal):
            return
        fresh = type(self).factory()
        try:
            outcome = self._attempt(lambda: fresh.import_conversation(data), crash=("ARC-004",))
            if isinstance(outcome, Raised):
                blame = UNEXPECTED_REFUSAL["import"].get(outcome.error.kind, ("ERR-001",))
                fail((*blame, "ARC-004"), f"an export did not import: {outcome.error!r}")
            again = fresh.export_conversation(conversation)
            if again != data:
                fail(("ARC-004",), f"re-export {again!r} differs from imported {data!r}")
            copied = tuple(envelope_bytes(e) for e in read_whole(fresh, conversation))
            if copied != self.model.events(conversation):
                fail(("ARC-016",), f"imported envelopes {copied!r} differ from the archive's")
        finally:
            fresh.close()
        self._import(data, [conversation])

    @rule(
        target=conversations,
        conversation=gen.identifiers(),
        drafts=gen.draft_batches(),
        fault=st.none() | st.sampled_from(sorted(gen.ARCHIVE_FAULTS)),
    )
    def import_archive(self, conversation: str, drafts: list[EventDraft], fault: str | None) -> str:
        """ARC-002 .. ARC-013: an archive, valid or with one fault, imported into this store."""
        document = gen.document_of(conversation, gen.placed(conversation, drafts))
        data = gen.ARCHIVE_FAULTS[fault].make(document) if fault else canonical.encode(document)
        self.known.add(conversation)
        self._import(data, [conversation, f"{conversation}/other"])
        return conversation

    @rule(existing=stored_ids, conversation=gen.identifiers(), drafts=gen.draft_batches())
    def import_stored_event_id(
        self, existing: str, conversation: str, drafts: list[EventDraft]
    ) -> None:
        """ARC-010: an archive holding an eventId the store has is refused as ``duplicate``."""
        batch = [*drafts[:-1], attrs.evolve(drafts[-1], event_id=existing)]
        self._import(gen.archive_of_wires(conversation, gen.placed(conversation, batch)),
                     [conversation])

    @rule(conversation=conversations, drafts=gen.draft_batches())
    def import_into_conversation(self, conversation: str, drafts: list[EventDraft]) -> None:
        """ARC-009: import into a conversation with events is refused as ``conflict``."""
        self._import(gen.archive_of_wires(conversation, gen.placed(conversation, drafts)),
                     [conversation])

    @rule(
        target=conversations,
        conversation=gen.identifiers(),
        drafts=gen.draft_batches(min_size=0),
        unknown=st.lists(_UNKNOWN_EVENTS, min_size=1, max_size=3, unique_by=lambda item: item[0]),
    )
    def import_ignorable(
        self, conversation: str, drafts: list[EventDraft], unknown: list[UnknownEvent]
    ) -> str:
        """KND-004, RPL-002: unknown ignorable envelopes import and re-export byte for byte."""
        self.known.add(conversation)
        self._import(gen.archive_of_wires(conversation, _mixed(conversation, drafts, unknown)),
                     [conversation])
        return conversation

    @rule(
        target=conversations,
        conversation=gen.identifiers(),
        drafts=gen.draft_batches(),
        unknown=st.lists(_UNKNOWN_EVENTS, max_size=1),
        position=st.integers(0, 4),
        member=st.sampled_from(sorted(gen.IGNORABLE_MEMBERS)),
    )
    def import_ignorable_member(
        self,
        conversation: str,
        drafts: list[EventDraft],
        unknown: list[UnknownEvent],
        position: int,
        member: str,
    ) -> str:
        """ENV-010: an archived ``ignorable`` is ``true`` or absent; any other value is refused.

        One envelope's member is changed to ``member``; without ``true``, an
        envelope of an unregistered pair is refused by the replay gate (RPL-003).
        """
        mixed = _mixed(conversation, drafts, unknown)
        gen.IGNORABLE_MEMBERS[member](mixed[position % len(mixed)])
        self.known.add(conversation)
        self._import(gen.archive_of_wires(conversation, mixed), [conversation])
        return conversation

    def _import(self, data: object, touched: list[str]) -> None:
        expected = self.model.expect_import(data)
        call = lambda: self.store.import_conversation(data)  # type: ignore[arg-type]  # noqa: E731
        if isinstance(expected, Refusal):
            self._refused(call, expected, touched, "import", atomic=("ARC-013",))
            return
        outcome = self._attempt(call, crash=("ARC-004",))
        if isinstance(outcome, Raised):
            blame = UNEXPECTED_REFUSAL["import"].get(outcome.error.kind, ("ERR-001",))
            fail(blame, f"import of a valid archive refused: {outcome.error!r}")
        conversation, events = expected
        self.model.commit(conversation, events)
        self.dirty.update(touched)
        self.known.add(conversation)
        unknown = ("KND-004", "RPL-002") if self._has_unknown_kinds(events) else ()
        stored = tuple(envelope_bytes(e) for e in read_whole(self.store, conversation))
        if stored != events:
            fail(("ARC-016", *unknown), f"imported envelopes read back as {stored!r}, "
                 f"imported {events!r}")
        exported = self.store.export_conversation(conversation)
        if exported != data:
            fail(("ARC-004", "ARC-001"), f"export after import is {exported!r}, imported {data!r}")

    def _has_unknown_kinds(self, events: Iterable[bytes]) -> bool:
        """Whether some envelope is of a pair the registry does not hold (KND-004)."""
        registry = self.model.registry
        for encoded in events:
            wire = canonical.decode(encoded)
            assert isinstance(wire, dict)
            if not registry.knows(wire["kind"], wire["schemaVersion"]):
                return True
        return False

    # -- capabilities -------------------------------------------------------------------

    @precondition(lambda self: bool(self.undeclared))
    @rule(conversation=conversations, which=st.integers(0, len(OPTIONAL_OPERATIONS) - 1))
    def undeclared_operation(self, conversation: str, which: int) -> None:
        """CAP-002: an operation of an undeclared capability is ``not_supported``, changes nothing.

        ``which`` picks among the operations the store must refuse, cyclically.
        """
        capability, name, call = self.undeclared[which % len(self.undeclared)]
        self._refused(
            functools.partial(call, self.store, conversation),
            Refusal((Fault(NOT_SUPPORTED, ("CAP-002",)),)),
            [conversation],
            f"{name} without capability {capability.value!r}",
            atomic=(),
        )

    # -- reopen -------------------------------------------------------------------------

    @precondition(lambda self: self.with_reopen and Capability.PERSISTENCE in self.declared)
    @rule()
    def reopen(self) -> None:
        """LED-015: after reopen the store returns the same ledgers, heads and exports."""
        before = {c: self.store.export_conversation(c) for c in self.model.conversations()}
        try:
            self.store = self.store.reopen()
        except LedgerError as error:
            fail(("LED-015",), f"reopen of a store declaring persistence failed: {error!r}")
        after = {c: self.store.export_conversation(c) for c in self.model.conversations()}
        if after != before:
            fail(("LED-015",), "exports changed across reopen")
        self.dirty |= self.known

    @precondition(lambda self: self.with_reopen and Capability.PERSISTENCE not in self.declared)
    @rule()
    def reopen_refused(self) -> None:
        """CAP-002: a store without capability persistence refuses reopen as ``not_supported``."""
        before = state_digest(self.store, self.known)
        try:
            self.store.reopen()
        except NotSupportedError:
            pass
        except Exception as error:
            fail(("CAP-002",), f"reopen raised {error!r}, not not_supported")
        else:
            fail(("CAP-002",), "reopen succeeded on a store that does not declare persistence")
        if state_digest(self.store, self.known) != before:
            fail(("CAP-002", "ERR-004"), "a refused reopen changed the ledger")

    # -- the invariant ------------------------------------------------------------------

    @invariant()
    def ledger_matches_model(self) -> None:
        """LED-002, LED-012, ENV-011, LED-014: changed ledgers are the model's; heads all agree.

        The ledgers the last step touched are read whole; every other one is
        checked by its head here and read whole at teardown.
        """
        self._check_ledgers(self.dirty)
        self.dirty.clear()
        for conversation in sorted(self.known):
            head = self.store.head(conversation)
            if head != self.model.head(conversation):
                fail(("LED-012", "LED-002"), f"head of {conversation!r} is {head!r}, the model "
                     f"says {self.model.head(conversation)}")

    def _check_ledgers(self, conversations: Iterable[str]) -> None:
        """LED-002, LED-003, LED-012, ENV-011, LED-014: these ledgers are the model's."""
        owners: dict[str, str] = {}
        for conversation in sorted(conversations):
            page = self._attempt(
                functools.partial(self.store.read, conversation, limit=MAX_LIMIT),
                crash=("LED-008",),
            )
            if isinstance(page, Raised):
                fail(("LED-008", "LED-011"), f"a read of {conversation!r} was refused: "
                     f"{page.error!r}")
            expected = self.model.events(conversation)
            got = tuple(envelope_bytes(e) for e in page.items)
            if [e.seq for e in page.items] != list(range(1, len(page.items) + 1)):
                fail(("LED-002",), f"seqs of {conversation!r} are {[e.seq for e in page.items]}")
            for envelope in page.items:
                if envelope.event_id in owners:
                    fail(("LED-003",), f"eventId {envelope.event_id!r} stored in "
                         f"{owners[envelope.event_id]!r} and {conversation!r}")
                owners[envelope.event_id] = conversation
            if len(got) != len(expected):
                fail(("LED-002", "LED-004", "ERR-004"), f"{conversation!r} holds {len(got)} "
                     f"events, the model {len(expected)}")
            for want, have in zip(expected, got, strict=True):
                if want != have:
                    fail((*member_differences(want, have), "LED-014"),
                         f"stored envelope changed: {have!r}, expected {want!r}")
            if page.next_seq is not None:
                fail(("LED-009",), f"a read of all of {conversation!r} returned a nextSeq")
            head = self.store.head(conversation)
            if head != len(expected):
                fail(("LED-012",), f"head of {conversation!r} is {head!r}, expected "
                     f"{len(expected)}")
            _vandalize([envelope.payload for envelope in page.items])

    # -- helpers ------------------------------------------------------------------------

    def _digest(self, touched: Iterable[str]) -> tuple[object, ...]:
        touched = set(touched)
        self.dirty |= touched
        return state_digest(self.store, touched)

    def _attempt(self, call: Callable[[], T], *, crash: tuple[str, ...]) -> T | Raised:
        """Call the store with a valid call; a ``LedgerError`` becomes a value to judge.

        Any other exception fails ``crash``, the ids of what the call had to do.
        """
        try:
            return call()
        except LedgerError as error:
            return Raised(error)
        except Exception as error:
            raise CheckFailure(crash, f"a valid call raised {error!r}") from error

    def _refused(
        self,
        call: Callable[[], object],
        expected: Refusal,
        touched: list[str],
        what: str,
        *,
        atomic: tuple[str, ...],
    ) -> None:
        """The call must be refused with an admissible kind and change nothing (ERR-004)."""
        before = self._digest(touched)
        try:
            result = call()
        except LedgerError as error:
            if error.kind not in expected.kinds:
                fail(("ERR-001", *expected.ids), f"{what} refused as {error.kind!r}, expected "
                     f"one of {sorted(expected.kinds)}: {error!r}")
            actual = getattr(error, "actual", None)
            if error.kind == "conflict" and expected.actual_head is not None and (
                actual != expected.actual_head
            ):
                fail(("ERR-005",), f"conflict carries head {actual!r}, the store holds "
                     f"{expected.actual_head}")
        except Exception as error:
            raise CheckFailure(
                ("ERR-006", *expected.ids), f"{what} raised {error!r}, not a ledger error of "
                f"kind {sorted(expected.kinds)}"
            ) from error
        else:
            fail(expected.ids, f"{what} accepted ({result!r}), expected a refusal of kind "
                 f"{sorted(expected.kinds)}")
        if self._digest(touched) != before:
            fail(("ERR-004", *atomic, *expected.ids), f"a refused {what} changed the ledger")


def build_ledger_machine(
    factory: StoreFactory, *, reopen: bool = False
) -> type[RuleBasedStateMachine]:
    """The ledger state machine over stores made by ``factory``.

    With ``reopen=True`` the programs also reopen the store: LED-015 when it
    declares capability persistence, CAP-002 (``not_supported``) when it does not.
    """
    return type(
        "LedgerMachine",
        (LedgerMachineBase,),
        {"factory": staticmethod(factory), "with_reopen": reopen, "__module__": __name__},
    )


def _mixed(
    conversation: str, drafts: list[EventDraft], unknown: list[UnknownEvent]
) -> list[dict[str, object]]:
    """Wire envelopes of ``unknown`` (ignorable) and ``drafts`` alternating, at seqs 1..n."""
    wires: list[dict[str, object]] = [
        {"schemaVersion": version, "eventId": event_id, "conversationId": conversation,
         "seq": 0, "kind": kind, "occurredAt": stamp, "payload": payload, "ignorable": True}
        for event_id, (kind, version, payload), stamp in unknown
    ]
    known = gen.placed(conversation, drafts)
    mixed = [w for pair in zip(wires, known, strict=False) for w in pair]
    mixed += wires[len(known):] + known[len(wires):]
    for seq, wire in enumerate(mixed, start=1):
        wire["seq"] = seq
    return mixed


def _copies(batch: object) -> object:
    """The batch the store receives: drafts with payloads of their own (LED-014)."""
    if not isinstance(batch, list):
        return batch
    return [
        attrs.evolve(d, payload=copy.deepcopy(d.payload)) if isinstance(d, EventDraft) else d
        for d in batch
    ]


def _vandalize(values: object) -> None:
    """LED-014: change what a caller holds after an append or read; the ledger must not see it."""
    if not isinstance(values, list):
        return
    for item in values:
        payload = item.payload if isinstance(item, EventDraft) else item
        try:
            if isinstance(payload, dict):
                payload["conformance/vandal"] = True
                for member in payload.values():
                    if isinstance(member, list):
                        member.append("vandal")
            elif isinstance(payload, list):
                payload.append("vandal")
        except TypeError:
            continue  # an immutable payload cannot be changed, which is fine


def _fresh_batches(
    plan: list[tuple[bool, list[EventDraft]]], first: str, second: str, stored: set[str]
) -> list[tuple[str, list[EventDraft]]]:
    """The plan's batches without eventIds stored or used by an earlier batch."""
    seen = set(stored)
    batches = []
    for to_second, drafts in plan:
        fresh = [d for d in drafts if d.event_id not in seen]
        seen.update(d.event_id for d in fresh)
        if fresh:
            batches.append((second if to_second else first, fresh))
    return batches


def _run_threads(
    store: LedgerStore, batches: list[tuple[str, list[EventDraft]]]
) -> list[tuple[Envelope, ...]]:
    """Append each batch from its own thread, all released at once (LED-013)."""
    results: list[tuple[Envelope, ...]] = [() for _ in batches]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(batches))

    def work(index: int) -> None:
        conversation, drafts = batches[index]
        try:
            barrier.wait()
            results[index] = store.append(conversation, drafts)
        except BaseException as error:  # reported below, on the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        fail(("LED-013",), f"a concurrent append of fresh valid drafts failed: {errors[0]!r}")
    return results
