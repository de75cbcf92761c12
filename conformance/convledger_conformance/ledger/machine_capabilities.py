"""The capability rules of the ledger state machine: undeclared operations and reopen.

An operation of a capability the store does not declare is refused as
``not_supported`` and changes nothing (CAP-002); with reopen on, a store
declaring persistence returns the same ledgers after reopen (LED-015) and one
without refuses reopen (CAP-002).
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from convledger.errors import LedgerError, NotSupportedError
from convledger.interface import require, unchecked
from convledger.store import Capability
from convledger_conformance.differences import first_difference
from convledger_conformance.ledger.machine_core import CONVERSATIONS, LedgerMachineCore
from convledger_conformance.ledger.machine_operations import OPTIONAL_OPERATIONS
from convledger_conformance.ledger.machine_verdicts import fail
from convledger_conformance.ledger.model import Refusal, state_digest
from convledger_conformance.ledger.model_faults import NOT_SUPPORTED, Fault


class LedgerCapabilityRules(LedgerMachineCore):
    """The rules of the optional capabilities (CAP-002, LED-015)."""

    @precondition(lambda self: bool(self.undeclared))
    @rule(conversation=CONVERSATIONS, which=st.integers(0, len(OPTIONAL_OPERATIONS) - 1))
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
            self.store = require(self.store, Capability.PERSISTENCE).reopen()
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
            unchecked(self.store).reopen()  # CAP-002: called to be refused
        except NotSupportedError:
            pass
        except Exception as error:
            fail(("CAP-002",), f"reopen raised {error!r}, not not_supported")
        else:
            fail(("CAP-002",), "reopen succeeded on a store that does not declare persistence")
        changed = first_difference(before, state_digest(self.store, self.known))
        if changed is not None:
            fail(("CAP-002", "ERR-004"), f"a refused reopen changed the ledger at {changed}")
