"""The operations of the optional capabilities, as the ledger machine calls them (CAP-002).

Between its ledger steps the machine calls every operation of a capability the
store does not declare; each must be refused as ``not_supported`` and change
nothing (CAP-002, ERR-004). The calls are the probes of
:mod:`convledger_conformance.ledger.probes`, derived from the capability table, for
the operations the wire protocol carries (the machine runs over the wire too).
"""

from __future__ import annotations

from typing import Final

from convledger_conformance.ledger.probes import Probe, probes

OptionalOperation = Probe
"""(capability, operation name, a call of it on one conversation of a store)."""

OPTIONAL_OPERATIONS: Final[tuple[OptionalOperation, ...]] = probes(carried_only=True)
"""Every operation of an optional capability, called on one of the machine's conversations.

A store must refuse each operation of a capability it does not declare with
``not_supported`` and change nothing (CAP-002, ERR-004), whatever the
conversation holds; the machine calls them between its ledger steps.
"""
