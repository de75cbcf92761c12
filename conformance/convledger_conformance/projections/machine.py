"""A state machine for chapter PRJ: define, bump a version, catch up partially, race, append.

After every step every projection's stored checkpoint is checked against the
model's own fold of the events it reads (:mod:`convledger_conformance.projections.model`): uptoSeq
never beyond the head, never backwards within a version, the state exactly
the fold of events 1..uptoSeq, and after a version bump the state of the new
version (PRJ-012, PRJ-013, PRJ-020). The factory gives a fresh store per
program.
"""

from __future__ import annotations

import threading

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from convledger import canonical
from convledger.envelope import EventDraft
from convledger.interface import require
from convledger.projections.store import ProjectionStore
from convledger.store import Capability
from convledger_conformance.projections.model import counting, expected_state, ledger
from convledger_conformance.registry import CheckFailure, StoreFactory

NAMES = ("p", "q")
CONVERSATION = "m"


def build_projection_machine(factory: StoreFactory) -> type[RuleBasedStateMachine]:
    """The machine class for stores made by ``factory``."""

    class ProjectionMachine(RuleBasedStateMachine):
        """Random appends and catch-ups of two projections over one conversation."""

        def __init__(self) -> None:
            super().__init__()
            self.store: ProjectionStore = require(factory(), Capability.PROJECTIONS)
            self.versions = {name: 1 for name in NAMES}
            self.last = {name: (1, 0) for name in NAMES}
            self.count = 0

        def teardown(self) -> None:
            self.store.close()

        @rule(n=st.integers(1, 4))
        def append(self, n: int) -> None:
            drafts = []
            for _ in range(n):
                self.count += 1
                drafts.append(EventDraft(
                    event_id=f"m-{self.count}", kind="state/set",
                    occurred_at="2024-01-01T00:00:00Z",
                    payload={"name": f"s{self.count % 3}", "version": 1, "value": self.count,
                             "actor": "machine"},
                ))
            self.store.append(CONVERSATION, drafts)

        @rule(name=st.sampled_from(NAMES), bound=st.integers(1, 6))
        def catch_up(self, name: str, bound: int) -> None:
            self.store.catch_up(
                CONVERSATION, counting(name, self.versions[name]), max_events=bound
            )

        @rule(name=st.sampled_from(NAMES))
        def bump_version(self, name: str) -> None:
            self.versions[name] += 1
            self.store.catch_up(CONVERSATION, counting(name, self.versions[name]))

        @rule(name=st.sampled_from(NAMES))
        def concurrent_catch_up(self, name: str) -> None:
            definition = counting(name, self.versions[name])
            errors: list[BaseException] = []

            def run(bound: int) -> None:
                try:
                    self.store.catch_up(CONVERSATION, definition, max_events=bound)
                except BaseException as error:
                    errors.append(error)

            # different bounds: a late writer of a shorter fold would move the checkpoint back
            threads = [threading.Thread(target=run, args=(bound,)) for bound in (1, 2, 3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise CheckFailure(("PRJ-013",), f"a concurrent catch-up failed: {errors[0]!r}")

        @invariant()
        def checkpoints_are_honest(self) -> None:
            events = ledger(self.store, CONVERSATION)
            head = events[-1].seq if events else 0
            for name in NAMES:
                stored = self.store.load_checkpoint(CONVERSATION, name)
                status = self.store.projection_status(CONVERSATION, name)
                if stored is None:
                    continue
                if status.upto_seq != stored.upto_seq or status.head != head:
                    raise CheckFailure(("PRJ-014",), (
                        f"projection_status of {name!r}: expected uptoSeq {stored.upto_seq} "
                        f"(the checkpoint) and head {head} (the ledger), got uptoSeq "
                        f"{status.upto_seq} and head {status.head}"))
                if stored.upto_seq > head:
                    raise CheckFailure(("PRJ-013",), f"{name} claims seq {stored.upto_seq}")
                definition = counting(name, stored.version)
                if canonical.encode(stored.state) != expected_state(
                    definition, events, stored.upto_seq, self.store
                ):
                    raise CheckFailure(("PRJ-012", "PRJ-020"), f"{name}'s state is not its fold")
                version, upto = self.last[name]
                if stored.version == version and stored.upto_seq < upto:
                    raise CheckFailure(("PRJ-012",), f"{name} moved back from {upto}")
                if stored.version != self.versions[name] and stored.version < version:
                    raise CheckFailure(("PRJ-020",), f"{name} went back to version {version}")
                self.last[name] = (stored.version, stored.upto_seq)

    return ProjectionMachine
