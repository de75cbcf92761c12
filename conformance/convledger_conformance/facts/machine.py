"""A state machine driving the step loop with a provider that fails, times out and succeeds.

Rules send inputs, run the oldest queued run against provider outcomes drawn
by Hypothesis (``fail``, ``timeout``, ``tool``, ``fail_after_tool``, ``ok``;
optionally with the next input arriving during its first call), and end runs
with a drawn terminal reason after spawning children, some unreachable. After
every step the invariants of :func:`~convledger_conformance.facts.invariants.provider_problems`
hold over the whole ledger, and the children of the conversation are in the
states the ADR's fate table gives (FCT-021, FCT-022).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from convledger.host import (
    FakeChildExecutor,
    FakeClock,
    FakeProvider,
    FakeSandboxProber,
    FakeTimer,
    Host,
    SequentialIds,
    children_of,
    events_of,
)
from convledger.host.fakes import OUTCOMES
from convledger.host.rules import LEAVE_CHILDREN, LIVE_CHILD_STATES, STOP_CHILDREN
from convledger.interface import require
from convledger.runtime.records import RESERVED_REASONS
from convledger.runtime.store import TransitionStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.facts.invariants import CONVERSATION, Driven, Witness, provider_problems
from convledger_conformance.support import fail

END_REASONS = sorted((STOP_CHILDREN | LEAVE_CHILDREN) - RESERVED_REASONS)
HOST_MACHINE_IDS = (
    "PRV-001", "PRV-002", "PRV-003", "PRV-004", "PRV-005", "PRV-010", "PRV-011", "PRV-012",
    "PRV-013", "PRV-020", "FCT-021", "FCT-022",
)


def build_host_machine(
    factory: Callable[[], LedgerStore], *, host_class: type[Host] = Host
) -> type[RuleBasedStateMachine]:
    """The machine class over stores from ``factory`` and hosts of ``host_class``."""

    class HostMachine(RuleBasedStateMachine):
        """One conversation, driven by the step loop (module docstring)."""

        def __init__(self) -> None:
            super().__init__()
            self.store: TransitionStore = require(factory(), Capability.TRANSITIONS)
            self.provider = FakeProvider()
            self.witness = Witness(self.store, self.provider)
            self.executor = FakeChildExecutor()
            self.host = host_class(
                self.store, clock=FakeClock(), ids=SequentialIds("m"), provider=self.witness,
                timer=FakeTimer(), children=self.executor, prober=FakeSandboxProber(()),
            )
            self.inputs: dict[str, str] = {}
            self.pending: list[str] = []
            self.children: dict[str, str] = {}
            self.spawned = 0

        def teardown(self) -> None:
            """Close the store."""
            self.store.close()

        def _arrive(self) -> None:
            text = f"input {len(self.inputs) + 1}"
            run_id = self.host.accept(CONVERSATION, text)
            self.inputs[text] = run_id
            if run_id not in self.pending:
                self.pending.append(run_id)

        @rule()
        def send_input(self) -> None:
            """A user sends an input."""
            self._arrive()

        @precondition(lambda self: bool(self.pending))
        @rule(outcomes=st.lists(st.sampled_from(OUTCOMES), max_size=6), early=st.booleans())
        def run_next(self, outcomes: list[str], early: bool) -> None:
            """The oldest queued run steps against drawn provider outcomes."""
            self.provider.queue(outcomes)
            self.witness.interleave = self._arrive if early else None
            self.host.run(CONVERSATION, self.pending.pop(0),
                          tools={"lookup": lambda args: {"found": args["query"]}})
            self.provider.queue(())

        @precondition(lambda self: bool(self.pending))
        @rule(reason=st.sampled_from(END_REASONS), spawn=st.integers(0, 2),
              unreachable=st.booleans())
        def end_run(self, reason: str, spawn: int, unreachable: bool) -> None:
            """The oldest queued run spawns children and ends with ``reason``."""
            names = []
            for _ in range(spawn):
                self.spawned += 1
                names.append(f"child-{self.spawned}")
                self.children[names[-1]] = "spawned"
            if unreachable and names:
                self.executor.unreachable.add(names[0])
            self.witness.interleave = None
            self.host.run(CONVERSATION, self.pending.pop(0), spawn=names, end_reason=reason)
            if reason in STOP_CHILDREN:
                for child, state in self.children.items():
                    if state in LIVE_CHILD_STATES:
                        lost = child in self.executor.unreachable
                        self.children[child] = "lost" if lost else "stopped"

        @invariant()
        def provider_facts_hold(self) -> None:
            """Requests, responses, retries, bodies and isolation hold over the whole ledger."""
            ordinals: dict[str, int] = {}
            for run_id in set(self.inputs.values()):
                run = self.store.load_run(CONVERSATION, run_id)
                assert run is not None
                ordinals[run_id] = run.ordinal
            events = tuple(events_of(self.store, CONVERSATION))
            problems = provider_problems(Driven(events, self.witness, self.inputs, ordinals))
            if problems:
                ids, message = problems[0]
                fail(ids, message)

        @invariant()
        def children_follow_the_fate_table(self) -> None:
            """Every child is in the state the fate table gives."""
            recorded = children_of(self.store, CONVERSATION)
            if recorded != self.children:
                wrong = {child: (recorded.get(child), state)
                         for child, state in self.children.items()
                         if recorded.get(child) != state}
                fail(("FCT-021", "FCT-022"), f"children (recorded, expected): {wrong!r}")

    return HostMachine
