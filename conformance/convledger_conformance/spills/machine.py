"""A state machine for chapter SPL: put, get, revoke, grant and delete at random.

The model knows each live object's bytes and whether its creating
operation's authorization is currently granted (a revocation is the caller's
policy changing between put and get). After every get the machine checks
that bytes reached the caller exactly when the object is live in that
conversation and granted, and that they are the bytes put (SPL-020, SPL-021,
SPL-031).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.spills.store import SpillStore
from convledger.store import Capability
from convledger_conformance.registry import CheckFailure, StoreFactory

CONVERSATIONS = ("a", "b")
REFERENCES = ("r1", "r2", "r3")
STAMP = "2024-01-01T00:00:00Z"


def build_spill_machine(factory: StoreFactory) -> type[RuleBasedStateMachine]:
    """The machine class for stores made by ``factory``."""

    class SpillMachine(RuleBasedStateMachine):
        """Objects in two conversations, each authorized by a grant the caller may revoke."""

        def __init__(self) -> None:
            super().__init__()
            self.store: SpillStore = require(factory(), Capability.SPILLS)
            self.live: dict[tuple[str, str], tuple[bytes, str]] = {}
            self.granted: dict[str, bool] = {}
            self.count = 0

        def teardown(self) -> None:
            self.store.close()

        def _next(self) -> str:
            self.count += 1
            return f"ev-{self.count}"

        def authorize(self, descriptor: JsonValue) -> bool:
            grant = descriptor.get("grant") if isinstance(descriptor, dict) else None
            return isinstance(grant, str) and self.granted.get(grant, False)

        @rule(cid=st.sampled_from(CONVERSATIONS), ref=st.sampled_from(REFERENCES),
              data=st.binary(max_size=40))
        def put(self, cid: str, ref: str, data: bytes) -> None:
            grant = f"g-{self.count}"
            try:
                self.store.put_spill(
                    cid, data, media_type="application/octet-stream",
                    operation={"operationId": grant, "authorization": {"grant": grant}},
                    reference=ref, event_id=self._next(), occurred_at=STAMP,
                )
            except LedgerError as error:
                if (cid, ref) not in self.live or error.kind != "duplicate":
                    raise CheckFailure(("SPL-001",), f"put refused as {error.kind}") from error
                return
            if (cid, ref) in self.live:
                raise CheckFailure(("SPL-001",), "a live reference was put twice")
            self.live[(cid, ref)] = (data, grant)
            self.granted[grant] = True

        @rule(data=st.data())
        def revoke_or_grant(self, data: st.DataObject) -> None:
            if self.granted:
                grant = data.draw(st.sampled_from(sorted(self.granted)))
                self.granted[grant] = not self.granted[grant]

        @rule(cid=st.sampled_from(CONVERSATIONS), ref=st.sampled_from(REFERENCES))
        def get(self, cid: str, ref: str) -> None:
            live = self.live.get((cid, ref))
            try:
                got = self.store.get_spill(cid, ref, authorize=self.authorize)
            except LedgerError as error:
                want = "not_found" if live is None else (
                    "unauthorized" if not self.granted[live[1]] else "none")
                if error.kind != want:
                    raise CheckFailure(("SPL-020", "SPL-021"),
                                       f"get answered {error.kind}, expected {want}") from error
                return
            if live is None:
                raise CheckFailure(("SPL-021", "SPL-031"), f"bytes of {cid}/{ref} reached "
                                   "the caller though no such object is live there")
            if not self.granted[live[1]]:
                raise CheckFailure(("SPL-020",), "bytes reached a caller the callback denies")
            if got != live[0]:
                raise CheckFailure(("SPL-020",), "get returned other bytes")

        @rule(cid=st.sampled_from(CONVERSATIONS), ref=st.sampled_from(REFERENCES))
        def delete(self, cid: str, ref: str) -> None:
            try:
                self.store.delete_spill(cid, ref, event_id=self._next(), occurred_at=STAMP)
            except LedgerError as error:
                if (cid, ref) in self.live or error.kind != "not_found":
                    raise CheckFailure(("SPL-031",), f"delete refused as {error.kind}") from error
                return
            if self.live.pop((cid, ref), None) is None:
                raise CheckFailure(("SPL-031",), "a delete of no live object applied")

        @invariant()
        def events_count_every_write(self) -> None:
            heads = sum(self.store.head(cid) for cid in CONVERSATIONS)
            if heads > self.count:
                raise CheckFailure(("SPL-001",), "more events than puts and deletes")

    return SpillMachine
