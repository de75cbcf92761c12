"""The append rules of the ledger state machine, one batch at a time and concurrently.

Each rule asks the model what an append must do, calls the store, compares and
only then commits to the model: valid batches with any expected head (LED-002,
LED-005), invalid or malformed batches (LED-001, LED-004, LED-006, KND-002),
duplicate eventIds (LED-003) and batches from threads at once (LED-013).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import cast

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import MultipleResults, multiple, rule

from convledger import canonical
from convledger.envelope import Envelope, EventDraft
from convledger.store import LedgerStore
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger import strategies_kinds as knd
from convledger_conformance.ledger.machine_core import (
    CONVERSATIONS,
    STORED_IDS,
    LedgerMachineCore,
)
from convledger_conformance.ledger.machine_verdicts import (
    UNEXPECTED_REFUSAL,
    Raised,
    copies,
    fail,
    vandalize,
)
from convledger_conformance.ledger.model import (
    Refusal,
    draft_wire,
    envelope_bytes,
    member_differences,
)


class LedgerAppendRules(LedgerMachineCore):
    """The rules that append (LED-001 .. LED-006, LED-013, KND-002)."""

    @rule(
        target=STORED_IDS,
        conversation=CONVERSATIONS,
        drafts=gen.draft_batches(),
        head=gen.head_offsets(),
    )
    def append_drafts(
        self, conversation: str, drafts: list[EventDraft], head: int | None
    ) -> MultipleResults[str]:
        """LED-002, LED-005: valid drafts, with no, the right or a wrong expected head."""
        return self._append(conversation, drafts, self._expected_head(conversation, head))

    @rule(
        conversation=CONVERSATIONS,
        prefix=gen.draft_batches(min_size=0, max_size=2),
        bad=gen.invalid_drafts(),
        suffix=gen.draft_batches(min_size=0, max_size=2),
    )
    def append_invalid(
        self,
        conversation: str,
        prefix: list[EventDraft],
        bad: gen.InvalidDraft,
        suffix: list[EventDraft],
    ) -> None:
        """LED-004, LED-006: one invalid draft refuses the whole batch."""
        self._append(conversation, [*prefix, bad.draft, *suffix], None)

    @rule(
        conversation=CONVERSATIONS,
        existing=STORED_IDS,
        drafts=gen.draft_batches(),
        position=st.integers(0, 3),
    )
    def append_stored_event_id(
        self, conversation: str, existing: str, drafts: list[EventDraft], position: int
    ) -> None:
        """LED-003: an eventId stored in any conversation is refused as ``duplicate``."""
        batch = list(drafts)
        index = position % len(batch)
        batch[index] = attrs.evolve(batch[index], event_id=existing)
        self._append(conversation, batch, None)

    @rule(conversation=CONVERSATIONS, drafts=gen.draft_batches(max_size=3), twin=gen.valid_drafts())
    def append_repeated_event_id(
        self, conversation: str, drafts: list[EventDraft], twin: EventDraft
    ) -> None:
        """LED-003: an eventId twice in one batch is refused as ``duplicate``."""
        self._append(conversation, [*drafts, attrs.evolve(twin, event_id=drafts[0].event_id)], None)

    @rule(
        conversation=CONVERSATIONS,
        shape=st.sampled_from(sorted(gen.BATCH_SHAPES)),
        draft=gen.valid_drafts(),
    )
    def append_malformed_batch(self, conversation: str, shape: str, draft: EventDraft) -> None:
        """LED-001: anything but a sequence of 1..10000 drafts is ``invalid_input``."""
        self._append(conversation, gen.BATCH_SHAPES[shape](draft), None)

    @rule(conversation=CONVERSATIONS, drafts=knd.unregistered_ignorable_batches())
    def append_unregistered_ignorable(self, conversation: str, drafts: list[EventDraft]) -> None:
        """KND-002: a batch of only ignorable drafts of unregistered pairs is ``invalid_input``."""
        self._append(conversation, drafts, None)

    def _expected_head(self, conversation: str, offset: int | None) -> int | None:
        return None if offset is None else self.model.head(conversation) + offset

    def _append(
        self, conversation: str, batch: object, expected_head: int | None
    ) -> MultipleResults[str]:
        expected = self.model.expect_append(conversation, batch, expected_head)
        passed = copies(batch)
        call = functools.partial(
            self.store.append, conversation, cast(list[EventDraft], passed),
            expected_head=expected_head,
        )
        if isinstance(expected, Refusal):
            self._refused(call, expected, [conversation], "append", atomic=("LED-004",))
            self.refused_since.add(conversation)
            return multiple()
        outcome = self._attempt(call, crash=("LED-002",))
        if isinstance(outcome, Raised):
            blame = UNEXPECTED_REFUSAL["append"].get(outcome.error.kind, ("ERR-001",))
            fail(blame, f"append of valid drafts to {conversation!r} refused: {outcome.error!r}")
        self._compare(expected, outcome, conversation, "append")
        self.model.commit(conversation, expected)
        self.dirty.add(conversation)
        self.refused_since.discard(conversation)
        vandalize(passed)
        vandalize([envelope.payload for envelope in outcome])
        assert isinstance(batch, list)
        return multiple(*(draft.event_id for draft in batch))

    def _compare(
        self, expected: Sequence[bytes], returned: Sequence[Envelope], conversation: str, what: str
    ) -> None:
        """The envelopes an append returned are the model's, member by member."""
        extra = ("LED-004", "ERR-004") if conversation in self.refused_since else ()
        if len(returned) != len(expected):
            fail(("LED-002", *extra), f"{what} returned {len(returned)} envelopes, not "
                 f"{len(expected)}")
        for want, envelope in zip(expected, returned, strict=True):
            got = envelope_bytes(envelope)
            if got != want:
                blame = member_differences(want, got)
                fail((*blame, *extra) if "LED-002" in blame else blame,
                     f"{what} returned {got!r}, the model expects {want!r}")

    # -- concurrency ------------------------------------------------------------------

    @rule(
        target=STORED_IDS,
        first=CONVERSATIONS,
        second=CONVERSATIONS,
        plan=st.lists(st.tuples(st.booleans(), gen.draft_batches(max_size=3)), min_size=2,
                      max_size=4),
    )
    def append_concurrently(
        self, first: str, second: str, plan: list[tuple[bool, list[EventDraft]]]
    ) -> MultipleResults[str]:
        """LED-013: batches appended from threads at once land whole, in some order."""
        batches = _fresh_batches(plan, first, second, self.model.event_ids)
        if len(batches) < 2:
            return multiple()
        results = _run_threads(self.store, batches)
        self.dirty |= {first, second}
        for conversation in dict.fromkeys(c for c, _ in batches):
            mine = sorted(
                (
                    (results[index], drafts)
                    for index, (owner, drafts) in enumerate(batches)
                    if owner == conversation
                ),
                key=lambda pair: pair[0][0].seq if pair[0] else 0,
            )
            for returned, drafts in mine:
                head = self.model.head(conversation)
                expected = tuple(
                    canonical.encode(draft_wire(d, conversation, head + n))
                    for n, d in enumerate(drafts, start=1)
                )
                got = tuple(envelope_bytes(e) for e in returned)
                if got != expected:
                    extra = ("LED-004", "ERR-004") if conversation in self.refused_since else ()
                    fail(("LED-013", "LED-002", *extra), f"concurrent batches interleaved or "
                         f"lost in {conversation!r}: {got!r} is not {expected!r}")
                self.model.commit(conversation, expected)
            self.refused_since.discard(conversation)
        return multiple(*(d.event_id for _, drafts in batches for d in drafts))


def _fresh_batches(
    plan: list[tuple[bool, list[EventDraft]]], first: str, second: str, stored: set[str]
) -> list[tuple[str, list[EventDraft]]]:
    """The plan's batches without eventIds stored or used by an earlier batch."""
    seen = set(stored)
    batches = []
    for to_second, drafts in plan:
        fresh = [d for d in drafts if d.event_id not in seen]
        seen.update(d.event_id for d in fresh)
        if fresh:
            batches.append((second if to_second else first, fresh))
    return batches


def _run_threads(
    store: LedgerStore, batches: list[tuple[str, list[EventDraft]]]
) -> list[tuple[Envelope, ...]]:
    """Append each batch from its own thread, all released at once (LED-013)."""
    results: list[tuple[Envelope, ...]] = [() for _ in batches]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(batches))

    def work(index: int) -> None:
        conversation, drafts = batches[index]
        try:
            barrier.wait()
            results[index] = store.append(conversation, drafts)
        except BaseException as error:  # reported below, on the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        fail(("LED-013",), f"a concurrent append of fresh valid drafts failed: {errors[0]!r}")
    return results
