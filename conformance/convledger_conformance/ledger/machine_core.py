"""The core of the ledger state machine: its state, conversations, invariant and judging.

:class:`LedgerMachineCore` holds the store, the model and the bookkeeping
every rule group shares; the rule groups (append, read, archive, capabilities)
subclass it and :class:`~convledger_conformance.ledger.machine.LedgerMachineBase`
combines them. The invariant compares the ledgers a step touched with the
model (LED-002, LED-012, ENV-011, LED-014); :meth:`LedgerMachineCore._refused`
checks a refusal's kind and that it changed nothing (ERR-001, ERR-004, ERR-005,
ERR-006).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable
from typing import ClassVar, Final, TypeVar

from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from convledger.errors import LedgerError
from convledger.store import LedgerStore
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.machine_operations import OPTIONAL_OPERATIONS
from convledger_conformance.ledger.machine_verdicts import Raised, fail, vandalize
from convledger_conformance.ledger.model import (
    MAX_LIMIT,
    LedgerModel,
    Refusal,
    envelope_bytes,
    member_differences,
    state_digest,
)
from convledger_conformance.registry import CheckFailure, StoreFactory

T = TypeVar("T")

CONVERSATIONS: Final = Bundle("conversations")
"""The conversation ids a program names."""
STORED_IDS: Final = Bundle("stored_ids")
"""The eventIds a program has stored."""


class LedgerMachineCore(RuleBasedStateMachine):
    """The state, conversations, invariant and judging helpers every rule group shares."""

    factory: ClassVar[StoreFactory]
    with_reopen: ClassVar[bool] = False

    conversations = CONVERSATIONS
    stored_ids = STORED_IDS

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

    @initialize(target=CONVERSATIONS, conversation=gen.identifiers())
    def first_conversation(self, conversation: str) -> str:
        """Every program starts with one conversation id (it may stay empty)."""
        self.known.add(conversation)
        return conversation

    @rule(target=CONVERSATIONS, conversation=gen.identifiers())
    def add_conversation(self, conversation: str) -> str:
        """Name another conversation (ENV-005: any non-empty string of scalar values)."""
        self.known.add(conversation)
        return conversation

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
            vandalize([envelope.payload for envelope in page.items])

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
