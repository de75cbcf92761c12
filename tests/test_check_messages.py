"""What a failing check says is what the store did (issue 33's misleading messages).

"a refused call consumed a seq" (ERR-004) was printed for a store that had
*accepted* a call ERR-001 refuses (the seq after it was then 2): now the check
compares with the head the store holds, so only a real gap is reported so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore
from convledger_conformance.registry import all_checks
from convledger_conformance.runner import run_suite
from galleries.ledger import SeqReservedBeforeChecks


class AcceptsStoredEventIdsInX(MemoryStore):
    """Accepts an append to conversation x whose eventId is stored (ERR-001, LED-003)."""

    def append(self, conversation_id: str, drafts: Sequence[EventDraft], *,
               expected_head: int | None = None) -> tuple[Envelope, ...]:
        if conversation_id == "x" and expected_head is None:
            try:
                return super().append(conversation_id, drafts)
            except Exception:
                renamed = [EventDraft(  # a fresh eventId per draft
                    event_id=f"{d.event_id}-again", kind=d.kind, occurred_at=d.occurred_at,
                    payload=d.payload, schema_version=d.schema_version, ignorable=d.ignorable)
                    for d in drafts]
                return super().append(conversation_id, renamed)
        return super().append(conversation_id, drafts, expected_head=expected_head)


def _message(factory: Any) -> str:
    check = [item for item in all_checks() if item.name == "refusals_change_nothing"]
    report = run_suite(factory, profile="smoke", derandomize=True, checks=check)
    (result,) = [item for item in report.checks if item.name == "refusals_change_nothing"]
    return result.message


def test_a_store_that_consumes_seqs_is_told_so() -> None:
    """A store reserving seqs before its checks: the message names the gap."""
    assert "a refused call consumed a seq" in _message(SeqReservedBeforeChecks)


def test_a_store_that_accepted_the_call_is_not_told_it_consumed_a_seq() -> None:
    """A store that accepted the calls (ERR-001's failure) gets no seq message from ERR-004."""
    assert "consumed a seq" not in _message(AcceptsStoredEventIdsInX)


class RefusesBatchesOfThree(MemoryStore):
    """Refuses a valid append of exactly three drafts (LED-002)."""

    def append(self, conversation_id: str, drafts: Sequence[EventDraft], *,
               expected_head: int | None = None) -> tuple[Envelope, ...]:
        if len(drafts) == 3:
            from convledger.errors import InvalidInputError

            raise InvalidInputError("three is too many", requirement="LED-001")
        return super().append(conversation_id, drafts, expected_head=expected_head)


def test_an_append_failing_inside_a_purge_check_fails_the_appends_id() -> None:
    """Issue 33: the purge check's scene-setting append reports LED-002, not the purge only."""
    check = [item for item in all_checks() if item.name == "purge_answers_and_reads"]
    report = run_suite(RefusesBatchesOfThree, profile="smoke", derandomize=True, checks=check)
    failed = {item.id for item in report.requirements if item.status == "failed"}
    assert "LED-002" in failed, report.render()
