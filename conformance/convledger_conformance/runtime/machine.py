"""The runtime state machine: transitions on a store, judged by the reference rules.

Theory of operation
-------------------
:func:`build_runtime_machine` returns a Hypothesis ``RuleBasedStateMachine``
bound to a store factory. Each program starts from a fresh store and a fresh
:class:`~convledger_conformance.runtime.model.RuntimeModel` over two fixed
conversations (``"c"`` and ``"c\\x00é"``, so code-point order, NUL and
non-ASCII ids are always in play). Rules draw small integers and flags,
never ids: a rule resolves ``run=3`` to the fourth run of the conversation in
ordinal order (or to a run id no conversation has), so every drawn program is
plain data and prints as runnable code.

Every transition rule builds a transition, asks the model what must happen
(an error kind, or a decision of :func:`convledger.runtime.rules.decide`, in
the order of TRN-009), calls the store, compares the outcome member for
member (status, version, run, admitted ids, event bytes), and only then
commits the decision to the model. A refused call must leave the ledger and
every record as they were (TRN-004).

After every step, for each conversation (:meth:`RuntimeMachineBase.records_match`):

* the ledger holds exactly the model's envelopes (one ``runtime/transition``
  per applied transition, nothing for other outcomes; TRN-002, TRN-004);
* ``load_snapshot``, ``list_active_runs`` and ``load_run`` answer what the
  model holds (TRN-080 .. TRN-082), and ``scan_recoverable`` pages through the
  model's owned runs in code-point order (TRN-083, TRN-084);
* every run and message the store shows is sound (TRN-011 .. TRN-018) and
  active runs are in causal order, inputs after earlier answers (TRN-034);
* folding the events the store returns from ``read`` (:func:`rebuild`) gives
  the model's state (:func:`comparable`) and the store's snapshot with draft
  bodies masked (TRN-100, TRN-101): the ledger is the source of truth.

Races run real threads against the one store: two terminals with one fence
(exactly one applied), two accepts with one key (one applied, one duplicate
with the winner's ids), an accept while the predecessor is acquired (the
admission placed after the predecessor's answer). Whatever the interleaving,
the outcomes must be those of one serial order of the model.

A failing program prints as runnable code once the class has a name::

    RuntimeMachine = build_runtime_machine(MemoryStore)
    state = RuntimeMachine()
    state.accept(conv=1, key=0, identity='fresh', at=0, event=1, body='x')
    state.records_match()
    state.teardown()
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis.stateful import RuleBasedStateMachine

from convledger.store import Capability
from convledger_conformance.registry import StoreFactory
from convledger_conformance.runtime.machine_transitions import RuntimeTransitionRules
from convledger_conformance.runtime.machine_writes import RuntimeWriteRules
from convledger_conformance.runtime.races import RaceRules
from convledger_conformance.runtime.support import (
    CONVERSATIONS,
    PURGE_IDS,
    RUNTIME_MACHINE_IDS,
    STAMPS,
)


class RuntimeMachineBase(RuntimeTransitionRules, RuntimeWriteRules, RaceRules):
    """The rules; :func:`build_runtime_machine` binds a factory to a subclass.

    The rule groups live in ``machine_transitions`` (TRN-020 ..
    TRN-075), ``machine_writes`` (TRN-090 .. TRN-108) and
    ``races`` (TRN-003, TRN-034), over the shared state, draws and
    invariant of :class:`~convledger_conformance.runtime.machine_core.RuntimeMachineCore`.
    Hypothesis orders rules by target, argument count and name, so the
    grouping does not change which programs a derandomized run draws.
    """


def build_runtime_machine(
    factory: StoreFactory, *, purge: bool = False
) -> type[RuleBasedStateMachine]:
    """The runtime state machine over stores made by ``factory`` (capability transitions).

    With ``purge=True`` the programs also purge conversations (capability purge).
    """
    return type(
        "RuntimeMachine",
        (RuntimeMachineBase,),
        {"factory": staticmethod(factory), "with_purge": purge, "__module__": __name__},
    )


def machine_ids(capabilities: Iterable[Capability]) -> tuple[str, ...]:
    """The ids the machine covers for a store declaring ``capabilities``."""
    declared = set(capabilities)
    return RUNTIME_MACHINE_IDS + (PURGE_IDS if Capability.PURGE in declared else ())


__all__ = [
    "CONVERSATIONS",
    "PURGE_IDS",
    "RUNTIME_MACHINE_IDS",
    "STAMPS",
    "RuntimeMachineBase",
    "build_runtime_machine",
    "machine_ids",
]
