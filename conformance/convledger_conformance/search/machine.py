"""A state machine for chapter SRC: appends to many conversations, searches with random callbacks.

After every search each hit must be an event whose text holds the word
(SRC-001), and the hits must be exactly the model's (own first, then granted
conversations in code-point order, ``limit`` in all), so no hit of a denied
conversation ever reaches the caller, own hits are never starved and the
conversation ids, whose UTF-16 order differs, come by code point (SRC-003,
SRC-010, SRC-011, SRC-013).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from convledger.envelope import Envelope, EventDraft
from convledger.interface import require
from convledger.search.store import SearchStore
from convledger.store import Capability
from convledger_conformance.registry import CheckFailure, StoreFactory
from convledger_conformance.runtime.checks_reads import SCAN_CONVERSATIONS
from convledger_conformance.search.model import event_words, expected_hits

CONVERSATIONS = SCAN_CONVERSATIONS
"""Eight ids whose code-point order differs from UTF-16 and locale orders (SRC-003)."""
WORDS = ("apple", "pear", "plum", "fig", "the", "runs", "running")
"""The words of the texts and the queries: "the" is a stop word of many text-search
configurations and "runs"/"running" share a stem, so an engine's language rules show as
hits without the word, or as missing hits (SRC-001)."""


def build_search_machine(factory: StoreFactory) -> type[RuleBasedStateMachine]:
    """The machine class for stores made by ``factory``."""

    class SearchMachine(RuleBasedStateMachine):
        """Eight conversations, four words, searches with random grants."""

        def __init__(self) -> None:
            super().__init__()
            self.store: SearchStore = require(factory(), Capability.SEARCH)
            self.ledgers: dict[str, list[Envelope]] = {}
            self.count = 0

        def teardown(self) -> None:
            self.store.close()

        @rule(cid=st.sampled_from(CONVERSATIONS),
              text=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
        def say(self, cid: str, text: list[str]) -> None:
            self.count += 1
            placed = self.store.append(cid, [EventDraft(
                event_id=f"s-{self.count}", kind="state/set", occurred_at="2024-01-01T00:00:00Z",
                payload={"name": "n", "version": 1, "value": " ".join(text), "actor": "a"},
            )])
            self.ledgers.setdefault(cid, []).extend(placed)

        @rule(cid=st.sampled_from(CONVERSATIONS), size=st.integers(2, 33),
              text=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
        def say_many(self, cid: str, size: int, text: list[str]) -> None:
            """A batch: with the single appends it crosses any bound of events a store keeps
            unindexed for a while (SQLite version 4 indexes 32 at a time, SQL-074)."""
            drafts = []
            for number in range(size):
                self.count += 1
                drafts.append(EventDraft(
                    event_id=f"s-{self.count}", kind="state/set",
                    occurred_at="2024-01-01T00:00:00Z",
                    payload={"name": "n", "version": 1, "actor": "a",
                             "value": " ".join(text[number % len(text):] or text)},
                ))
            self.ledgers.setdefault(cid, []).extend(self.store.append(cid, drafts))

        @rule(requester=st.sampled_from(CONVERSATIONS), word=st.sampled_from(WORDS),
              granted=st.frozensets(st.sampled_from(CONVERSATIONS)),
              limit=st.integers(1, 6), scoped=st.booleans())
        def search(
            self, requester: str, word: str, granted: frozenset[str], limit: int, scoped: bool
        ) -> None:
            scope = sorted(granted | {CONVERSATIONS[0]}) if scoped else None
            allow = granted.__contains__
            hits = self.store.search(
                requester, word, limit=limit, authorize=allow, scope=scope
            )
            got = [(hit.conversation_id, hit.seq) for hit in hits]
            for cid, _ in got:
                if cid != requester and cid not in granted:
                    raise CheckFailure(("SRC-011",), f"a hit of denied {cid!r} reached the caller")
            for cid, seq in got:
                events = self.ledgers.get(cid, [])
                if not 1 <= seq <= len(events) or word not in event_words(events[seq - 1]):
                    raise CheckFailure(("SRC-001", "SRC-025"),
                                       f"hit {cid!r} seq {seq} is not an event whose text "
                                       f"holds {word!r}")
            want = expected_hits(self.ledgers, requester, word, limit, allow, scope)
            if got != want:
                raise CheckFailure(("SRC-003", "SRC-010", "SRC-013"),
                                   f"search answered {got}, want {want}")

    return SearchMachine
