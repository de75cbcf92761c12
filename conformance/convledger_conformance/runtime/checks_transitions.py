"""Checks of chapter TRN: the runtime state machine, and the helpers of the TRN checks.

The state machine (:mod:`convledger_conformance.runtime.machine`) covers the
transition rules, the records and the reads over random programs; the checks
of :mod:`~convledger_conformance.runtime.checks_reads`,
:mod:`~convledger_conformance.runtime.checks_rare_transitions` and
:mod:`~convledger_conformance.runtime.checks_replay` pin the behaviours a
random program reaches rarely: keyset paging over many conversations in
code-point order, cross-conversation lookups, hostile ``runtime`` companions,
baselines, and the refusals of runtime kinds on append. The helpers here
(:class:`Driver`, :func:`fence_of`, :func:`document_of`, :func:`encode`) serve
those checks and :mod:`~convledger_conformance.runtime.checks_purge`.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Final

from hypothesis.stateful import run_state_machine_as_test

from convledger import canonical
from convledger.runtime import Accept, Acquire, Fence, Run, Transition
from convledger.runtime.store import TransitionStore
from convledger.store import Capability
from convledger_conformance.profiles import settings_for
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.machine import RUNTIME_MACHINE_IDS, build_runtime_machine
from convledger_conformance.support import STAMP, accepted, fail

TRANSITIONS: Final = Capability.TRANSITIONS


@check(*RUNTIME_MACHINE_IDS, capability=TRANSITIONS)
def check_runtime_state_machine(ctx: CheckContext) -> None:
    """The store agrees with the reference rules over random programs of transitions and races."""
    machine = build_runtime_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=settings_for(ctx.profile))


# -- helpers ---------------------------------------------------------------------------------


class Driver:
    """Calls transitions on one store with fresh eventIds; a refusal or non-applied fails."""

    def __init__(self, store: TransitionStore, ids: tuple[str, ...]) -> None:
        self.store = store
        self.ids = ids
        self.count = 0

    def event_id(self) -> str:
        """A fresh eventId."""
        self.count += 1
        return f"trn-{self.count}"

    def apply(self, conversation: str, transition: Transition, *, at: str = STAMP) -> Run | None:
        """Apply ``transition``; fail ``ids`` unless it is applied."""
        outcome = accepted(
            partial(self.store.transition, conversation, transition,
                    event_id=self.event_id(), occurred_at=at),
            self.ids, f"{transition!r} in {conversation!r}",
        )
        if outcome.status.value != "applied":
            fail(self.ids, f"{transition!r} in {conversation!r} answered {outcome!r}")
        return outcome.run

    def admit(self, conversation: str, name: str, *, text: str = "hello") -> None:
        """Admit one input as a new run ``name`` (answer ``name-answer``)."""
        self.apply(conversation, Accept(f"{name}-key", f"{name}-input", name, f"{name}-answer",
                                        {"text": text}))

    def acquire(self, conversation: str, name: str, owner: str = "w") -> Run:
        """Acquire run ``name``."""
        run = self.apply(conversation, Acquire(name, owner))
        assert run is not None
        return run

    def owned(self, conversation: str, name: str) -> Run:
        """Admit and acquire run ``name``."""
        self.admit(conversation, name)
        return self.acquire(conversation, name)


def fence_of(run: Run) -> Fence:
    """The fence the owner of ``run`` holds."""
    return Fence(run.owner or "", run.revision, run.fencing_token)


def document_of(data: bytes) -> dict[str, Any]:
    """An archive as a JSON document to tamper with."""
    decoded = json.loads(data)
    assert isinstance(decoded, dict)
    return decoded


def encode(document: dict[str, Any]) -> bytes:
    """Canonical archive bytes of a (tampered) document."""
    return canonical.encode(document)


__all__ = ["Driver", "fence_of"]
