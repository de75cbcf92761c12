"""What the transition rules read and what they decide (chapter ``transitions.md``).

The rules in :mod:`convledger.runtime.rules` are pure: they read one
conversation's operational state through :class:`RuntimeView`, a handful of
bounded lookups that never touch the ledger (TRN-080), and return a
:class:`Decision`. A store answers the lookups inside its write transaction
and, when the decision is *applied*, persists its writes and appends one
``runtime/transition`` event in that same transaction (TRN-002, TRN-003).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol

import attrs

from convledger.envelope import Envelope
from convledger.errors import ConflictError
from convledger.runtime.records import Admission, Head, Message, Run


class RuntimeView(Protocol):
    """Bounded lookups into one conversation's operational state."""

    def head(self) -> Head | None:
        """The head, or None before the first applied transition."""
        ...

    def run(self, run_id: str) -> Run | None:
        """The run of this conversation with ``run_id``."""
        ...

    def active_runs(self) -> Sequence[Run]:
        """Every active run, by ordinal (TRN-081)."""
        ...

    def last_run_ordinal(self) -> int:
        """The highest run ordinal, 0 when there is no run."""
        ...

    def admission(self, idempotency_key: str) -> Admission | None:
        """The admission made under ``idempotency_key``."""
        ...

    def admission_of_input(self, input_id: str) -> Admission | None:
        """The admission whose input is ``input_id``."""
        ...

    def last_admission_ordinal(self) -> int:
        """The highest admission ordinal, 0 when there is none."""
        ...

    def message(self, message_id: str) -> Message | None:
        """The history message with ``message_id``, active or not."""
        ...

    def run_answered_by(self, message_id: str) -> Run | None:
        """The run whose assistantMessageId is ``message_id``."""
        ...

    def message_in_use(self, message_id: str) -> bool:
        """Whether ``message_id`` is taken (TRN-022): :func:`message_in_use` of this view.

        A store may answer it in one read instead of the definition's three.
        """
        ...

    def position_bounds(self) -> tuple[int, int] | None:
        """The lowest and highest message position ever used, or None."""
        ...

    def first_active_message(self) -> Message | None:
        """The active message with the lowest position."""
        ...

    def active_messages(self, first: int, last: int) -> Sequence[Message]:
        """The active messages with positions in ``first..last``, by position."""
        ...


def message_in_use(view: RuntimeView, message_id: str) -> bool:
    """TRN-022's definition: ``message_id`` names a message, an admitted input or a run's answer."""
    return (
        view.message(message_id) is not None
        or view.admission_of_input(message_id) is not None
        or view.run_answered_by(message_id) is not None
    )


class Status(enum.Enum):
    """The outcome of a transition that was not refused (TRN-001)."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    NOT_FOUND = "not_found"


@attrs.frozen
class Admitted:
    """The identities an admission answers with, first time and every time after (TRN-021)."""

    input_id: str
    run_id: str
    assistant_message_id: str


@attrs.frozen
class HeadWrite:
    """The head compare-and-swap (TRN-003): ``expected`` 0 means "insert, none may exist"."""

    head: Head
    expected: int


def refuse_stale_swap(version: int | None, write: HeadWrite) -> None:
    """TRN-003: refuse the swap unless the head read (``version``; None: no head) is expected.

    Every store's head swap decides from the row it read in the transaction with this,
    before it writes.
    """
    current = 0 if version is None else version
    if current != write.expected:
        raise ConflictError(
            f"head version is {current}, expected {write.expected}",
            requirement="TRN-003",
            actual=current,
        )


Record = Run | Admission | Message


@attrs.frozen
class Decision:
    """What the rules decided. Only an applied decision carries writes."""

    status: Status
    version: int
    """The head version after the transition (applied) or as it stands (otherwise)."""
    run: Run | None = None
    admitted: Admitted | None = None
    head_write: HeadWrite | None = None
    writes: tuple[Record, ...] = ()


@attrs.frozen
class Outcome:
    """What ``store.transition`` returns (TRN-001).

    ``version`` is the head version after an applied transition and the
    actual version for every other outcome (the conflict's actual version,
    TRN-001). ``event`` is the appended ``runtime/transition`` envelope,
    present exactly when the outcome is applied.
    """

    status: Status
    version: int
    run: Run | None = None
    admitted: Admitted | None = None
    event: Envelope | None = None

    @classmethod
    def of(cls, decision: Decision, event: Envelope | None = None) -> Outcome:
        """The outcome of ``decision``, with the event an applied decision appended."""
        return cls(decision.status, decision.version, decision.run, decision.admitted, event)
