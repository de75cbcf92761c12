"""How the ledger machine judges a store: failures, refusals kept as values, caller copies.

:func:`fail` raises the failure of the requirement ids a mismatch proves
broken; :data:`UNEXPECTED_REFUSAL` names who is to blame when a store refuses
a call the model accepts. :func:`copies` and :func:`vandalize` keep what a
caller holds apart from what the ledger stores (LED-014).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import NoReturn

import attrs

from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger_conformance.registry import CheckFailure

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


def fail(ids: Iterable[str], message: str) -> NoReturn:
    """Raise the failure of ``ids`` (each named once, in order)."""
    raise CheckFailure(tuple(dict.fromkeys(ids)), message)


@attrs.frozen
class Raised:
    """A ``LedgerError`` a store raised, kept as a value to compare with the model."""

    error: LedgerError


def copies(batch: object) -> object:
    """The batch the store receives: drafts with payloads of their own (LED-014)."""
    if not isinstance(batch, list):
        return batch
    return [
        attrs.evolve(d, payload=copy.deepcopy(d.payload)) if isinstance(d, EventDraft) else d
        for d in batch
    ]


def vandalize(values: object) -> None:
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
