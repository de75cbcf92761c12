"""The ledger state machine: a store and the model, compared after every step.

Theory of operation
-------------------
:func:`build_ledger_machine` returns a Hypothesis ``RuleBasedStateMachine``
bound to a store factory. Each program starts from a fresh store and a fresh
:class:`~convledger_conformance.ledger.model.LedgerModel`. Every rule asks the model
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
    from convledger_conformance.ledger.strategies import InvalidDraft
    LedgerMachine = build_ledger_machine(MemoryStore)

    state = LedgerMachine()
    conversations_0 = state.first_conversation(conversation='\\x00')
    state.ledger_matches_model()
    state.append_drafts(conversation=conversations_0, drafts=[EventDraft(...)], head=None)
    state.ledger_matches_model()
    state.teardown()
"""

from __future__ import annotations

from hypothesis.stateful import RuleBasedStateMachine

from convledger_conformance.ledger.machine_append import LedgerAppendRules
from convledger_conformance.ledger.machine_archive import LedgerArchiveRules
from convledger_conformance.ledger.machine_archive import UnknownEvent as UnknownEvent
from convledger_conformance.ledger.machine_capabilities import LedgerCapabilityRules
from convledger_conformance.ledger.machine_operations import (
    OPTIONAL_OPERATIONS as OPTIONAL_OPERATIONS,
)
from convledger_conformance.ledger.machine_operations import (
    OptionalOperation as OptionalOperation,
)
from convledger_conformance.ledger.machine_read import LedgerReadRules
from convledger_conformance.ledger.machine_verdicts import (
    UNEXPECTED_REFUSAL as UNEXPECTED_REFUSAL,
)
from convledger_conformance.ledger.machine_verdicts import Raised as Raised
from convledger_conformance.ledger.machine_verdicts import fail as fail
from convledger_conformance.registry import StoreFactory

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


class LedgerMachineBase(
    LedgerAppendRules, LedgerReadRules, LedgerArchiveRules, LedgerCapabilityRules
):
    """The rules; :func:`build_ledger_machine` binds a factory to a subclass.

    The rule groups live in the ``machine_*`` modules of this package: append
    (LED-001 .. LED-006, LED-013), read (LED-007 .. LED-011), archive
    (ARC-001 .. ARC-016) and capabilities (CAP-002, LED-015), over the shared
    state and invariant of
    :class:`~convledger_conformance.ledger.machine_core.LedgerMachineCore`.
    Hypothesis orders rules by target, argument count and name, so the
    grouping does not change which programs a derandomized run draws.
    """


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

