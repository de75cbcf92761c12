"""The read rules of the ledger state machine: windows and paging by nextSeq.

A read is compared with the model's page (LED-007 .. LED-011); following
nextSeq must return every event of a window exactly once (LED-009).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from hypothesis.stateful import rule

from convledger.envelope import Envelope
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.machine_core import CONVERSATIONS, LedgerMachineCore
from convledger_conformance.ledger.machine_verdicts import Raised, fail
from convledger_conformance.ledger.model import MAX_LIMIT, ModelPage, Refusal, envelope_bytes


class LedgerReadRules(LedgerMachineCore):
    """The rules that read (LED-007 .. LED-011)."""

    @rule(conversation=CONVERSATIONS, window=gen.read_windows())
    def read_window(self, conversation: str, window: dict[str, object]) -> None:
        """LED-007 .. LED-011: one read, compared with the model's page."""
        expected = self.model.expect_read(conversation, **window)
        call = lambda: self.store.read(conversation, **window)  # type: ignore[arg-type]  # noqa: E731
        if isinstance(expected, Refusal):
            self._refused(call, expected, [conversation], "read", atomic=())
            return
        page = self._attempt(call, crash=("LED-008",))
        if isinstance(page, Raised):
            fail(("LED-010", "LED-011"), f"read {window!r} refused: {page.error!r}")
        self._compare_page(expected, page.items, page.next_seq, window)

    def _compare_page(
        self, expected: ModelPage, items: Sequence[Envelope], next_seq: int | None,
        window: dict[str, object],
    ) -> None:
        defaults = ("LED-007",) if set(window) != {"from_seq", "to_seq", "limit"} else ()
        empty = ("LED-011",) if not expected.items else ()
        got = tuple(envelope_bytes(e) for e in items)
        if got != expected.items:
            fail(("LED-008", *defaults, *empty), f"read {window!r} returned {len(got)} "
                 f"envelopes {[e.seq for e in items]}, expected {len(expected.items)}")
        if next_seq != expected.next_seq:
            fail(("LED-009", *defaults, *empty),
                 f"read {window!r} returned nextSeq {next_seq!r}, expected {expected.next_seq!r}")

    @rule(conversation=CONVERSATIONS, window=gen.read_windows(valid_only=True))
    def page_through(self, conversation: str, window: dict[str, object]) -> None:
        """LED-009: following nextSeq returns every event of the window exactly once."""
        whole = self.model.expect_read(conversation, **{**window, "limit": MAX_LIMIT})
        assert isinstance(whole, ModelPage)
        seen: list[Envelope] = []
        cursor: object = window.get("from_seq", 1)
        for _ in range(len(whole.items) + 2):
            arguments = {**window, "from_seq": cursor}
            page = self._attempt(
                functools.partial(self.store.read, conversation, **arguments),  # type: ignore[arg-type]
                crash=("LED-009",),
            )
            if isinstance(page, Raised):
                fail(("LED-009",), f"following nextSeq {cursor!r} was refused: {page.error!r}")
            seen.extend(page.items)
            cursor = page.next_seq
            if cursor is None:
                break
        if tuple(envelope_bytes(e) for e in seen) != whole.items:
            fail(("LED-009",), f"paging {window!r} by nextSeq returned seqs "
                 f"{[e.seq for e in seen]}, expected {len(whole.items)} events once each")
